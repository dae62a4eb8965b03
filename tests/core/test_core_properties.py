"""Invariants of speculative_generate over random settings (hypothesis)."""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specdec_core import NgramDrafter, SamplingConfig, UnigramDrafter, speculative_generate

VOCAB = 40

samplings = st.builds(
    SamplingConfig,
    temperature=st.sampled_from([0.0, 0.5, 1.0, 1.7]),
    top_k=st.none() | st.integers(1, VOCAB + 5),
    top_p=st.none() | st.floats(0.05, 1.0),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prompt=st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=12), gamma=st.integers(1, 8),
       max_new=st.integers(1, 20), sampling=samplings, seed=st.integers(0, 2**40),
       drafter_kind=st.sampled_from(["model", "ngram", "unigram"]))
def test_invariants(small_pair, prompt, gamma, max_new, sampling, seed, drafter_kind):
    target, draft = small_pair
    drafter = {"model": draft, "ngram": NgramDrafter(), "unigram": UnigramDrafter()}[drafter_kind]
    res = speculative_generate(target, drafter, prompt, gamma=gamma, max_new_tokens=max_new,
                               sampling=sampling, seed=seed, eos_token_id=None)
    assert len(res.tokens) == max_new  # no EOS: exactly max_new_tokens, never more
    assert res.target_passes <= len(res.tokens)
    assert res.target_passes == len(res.rounds)
    assert all(0 <= t < VOCAB for t in res.tokens)
    assert [t for r in res.rounds for t in r.emitted] == res.tokens
    assert len(res.token_kinds) == len(res.tokens)
    for r in res.rounds:
        assert 0 <= r.n_accepted <= len(r.draft_tokens) <= gamma
        assert r.emitted == r.draft_tokens[:r.n_accepted] + [r.next_token]
        if sampling.greedy:
            assert r.uniforms is None
        else:
            assert all(0 <= u < 1 for u in r.uniforms)
    if drafter_kind == "model":
        assert res.draft_passes >= res.drafted  # one draft pass per drafted token (a re-sync may add none)
