"""Home's live figure, shared with Key Takeaways: one speculative and one plain generation of the
sidebar's request (cached, so the second page reuses the first's work)."""
from specdec_core import autoregressive_generate, speculative_generate
from specdec_core.analysis.round_stats import measured_alpha
from specdec_core.request import GenerationRequest
from ui.server import admission

HEADLINE_TOKENS = 64  # at most this many tokens for the live figure, so Home stays quick


@admission.cached(max_entries=64, what="the live figure")
def headline(pair_id: str, request: GenerationRequest, gamma: int, _pair) -> dict:
    """One speculative and one plain generation of the same request (frozen: the cache's key): tokens per
    target pass, acceptance, and whether the tokens agree (nothing timed: the wall clock is `measure_speedup`)."""
    spec = speculative_generate(_pair.target, _pair.draft, request, gamma=gamma, trace=False,
                                on_round=admission.on_round)
    plain = autoregressive_generate(_pair.target, request, on_token=admission.on_token)
    return {"tokens": len(spec.tokens), "tokens_per_pass": spec.tokens_per_pass, "alpha": measured_alpha(spec.rounds),
            "acceptance": spec.acceptance_rate, "identical": spec.tokens == plain.tokens}
