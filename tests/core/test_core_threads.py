"""One shared model pair, many threads (Streamlit runs one thread per session): concurrent calls
give exactly the results of the same calls made one by one."""
from concurrent.futures import ThreadPoolExecutor

from specdec_core import GREEDY, NgramDrafter, SamplingConfig, autoregressive_generate, speculative_generate
from specdec_core.pairs import load_pair


def test_eight_threads_match_sequential_runs():
    pair = load_pair()
    prompts = ["MACBETH:\n", "First Witch:\nWhen shall we", "PROSPERO:\nNow does my project", "ARIEL:\n"]
    calls = []
    for i in range(16):
        prompt = pair.tokenizer.encode(prompts[i % len(prompts)])
        sampling = GREEDY if i % 2 == 0 else SamplingConfig(1.0, top_k=50)
        drafter = NgramDrafter() if i % 5 == 4 else pair.draft
        if i % 7 == 6:
            calls.append(lambda p=prompt, s=sampling, i=i: autoregressive_generate(pair.target, p, 24, s, seed=i).tokens)
        else:
            calls.append(lambda p=prompt, s=sampling, d=drafter, i=i: speculative_generate(
                pair.target, d, p, gamma=1 + i % 6, max_new_tokens=24, sampling=s, seed=i).tokens)
    sequential = [call() for call in calls]
    with ThreadPoolExecutor(max_workers=8) as pool:
        concurrent = list(pool.map(lambda call: call(), calls))
    assert concurrent == sequential
    assert len({tuple(t) for t in sequential}) > 4  # the calls really differ
