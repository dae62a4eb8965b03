"""The KV-cache rollback, as the trace records it: the target's cache grows by the verify pass and
forgets exactly the rejected drafts; the drafter's cache drops them at the next round and catches up
on the corrective token. These are the figures A Round shows."""
from specdec_core import speculative_generate
from specdec_core.sampling_config import SamplingConfig


def test_the_trace_records_each_rounds_rollback(small_pair):
    target, draft = small_pair
    prompt = [1, 2, 3, 4]
    res = speculative_generate(target, draft, prompt, gamma=4, max_new_tokens=40, sampling=SamplingConfig(1.0),
                               seed=5, trace=False)
    rejected = 0
    for r, following in zip(res.rounds, res.rounds[1:] + [None]):
        n, kept = len(r.draft_tokens), r.n_accepted
        committed = len(prompt) + r.position  # committed tokens when the round starts
        before, after_pass, after = r.target_cache
        assert before == committed - 1  # every committed token but the last, which the pass feeds
        assert after_pass == before + 1 + n and after == after_pass - (n - kept)
        if n == 0:  # the last round may have room for the corrective/bonus token only
            assert r.draft_cache is None
            continue
        assert r.draft_cache[2] == committed + n - 1  # the drafter fed the context and all drafts but the last
        if following is not None and following.draft_tokens and kept < n:
            rejected += 1
            # Next round: the drafter drops the rejected drafts it had fed, keeping the accepted ones...
            assert following.draft_cache[0] == r.draft_cache[2]
            assert following.draft_cache[1] == committed + kept
    assert rejected, "no round rejected a draft: the test shows nothing"


def test_the_trace_records_alpha_at_each_position_as_one_minus_total_variation(small_pair):
    import torch

    from specdec_core import theory
    target, draft = small_pair
    res = speculative_generate(target, draft, [1, 2, 3], gamma=3, max_new_tokens=12, sampling=SamplingConfig(1.0),
                               seed=2, trace=True)
    r = res.rounds[0]
    assert len(r.overlap) == len(r.draft_tokens)
    # The same figure three ways: the trace, theory.alpha_of, and 1 - TV computed from full rows here.
    for a in r.overlap:
        assert 0 <= a <= 1
    p = torch.tensor([[0.5, 0.3, 0.2]])
    q = torch.tensor([[0.2, 0.3, 0.5]])
    tv = 0.5 * (p - q).abs().sum()
    assert float(theory.alpha_of(p, q)[0]) == float(1 - tv)
