"""Home's live figure, shared with Key Takeaways: one speculative and one plain generation of the
sidebar's request (cached, so the second page reuses the first's work)."""
from specdec_core import autoregressive_generate, speculative_generate
from specdec_core.analysis.round_stats import measured_alpha
from specdec_core.sampling import SamplingConfig
from ui.server import admission

HEADLINE_TOKENS = 64  # at most this many tokens for the live figure, so Home stays quick


@admission.cached(max_entries=64, what="the live figure")
def headline(pair_id: str, prompt_ids: tuple[int, ...], gamma: int, max_new: int, temperature: float,
             top_k: int, top_p: float, seed: int, _pair) -> dict:
    """One speculative and one plain generation of the same request: tokens per target pass,
    acceptance, and whether the tokens agree (nothing timed: the wall clock is `measure_speedup`)."""
    sampling = SamplingConfig.from_controls(temperature, top_k, top_p)
    spec = speculative_generate(_pair.target, _pair.draft, list(prompt_ids), gamma=gamma, max_new_tokens=max_new,
                                sampling=sampling, seed=seed, trace=False, on_round=admission.on_round)
    plain = autoregressive_generate(_pair.target, list(prompt_ids), max_new, sampling, seed=seed,
                                    on_token=admission.on_token)
    return {"tokens": len(spec.tokens), "tokens_per_pass": spec.tokens_per_pass, "alpha": measured_alpha(spec.rounds),
            "acceptance": spec.acceptance_rate, "identical": spec.tokens == plain.tokens}
