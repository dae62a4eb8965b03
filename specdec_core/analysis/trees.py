"""Token trees against the chain, measured: tokens per target pass, wall clock, and the price of a wider pass.

The contestants are plain decoding, the linear drafter with gamma = the tree's depth, and the tree.
Each repetition runs all three in turn, every other repetition in reverse order (A B C, C B A, ...),
so a slow moment of the machine hits each of them; a figure is the median of the repetitions, with
the lowest and highest beside it. Tokens per pass come from the runs' own counts.

The prediction beside the measurement is the paper's cost model with a tree: a round costs one
target pass over nodes + 1 positions, v(nodes) single passes on this machine, plus c per draft pass:
    speedup = tokens per pass / (v(nodes) + c * draft passes per round).
On an accelerator v stays near 1 up to dozens of positions, which is where trees pay.
"""
import statistics
from collections.abc import Callable

from ..drafters import as_drafter
from ..sampler import autoregressive_generate, speculative_generate
from ..sampling import SamplingConfig
from ..trace import GenerationResult
from ..tree import check_node_budget, check_shape, tree_generate

CONTESTANTS = ("plain", "chain", "tree")


def _decode_s_per_token(result: GenerationResult) -> float:
    return (result.total_s - result.prefill_s) / max(1, len(result.tokens))


def _spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "low": min(values), "high": max(values)}


def predicted_speedup(tokens_per_pass: float, v: float, c: float, draft_passes_per_round: float) -> float:
    """Tokens per pass over the cost of a round in single target passes: v + c * draft passes."""
    return tokens_per_pass / (v + c * draft_passes_per_round)


def tree_vs_chain(target, drafter, prompt_ids, shape: tuple[int, ...], max_new_tokens: int,
                  sampling: SamplingConfig, seed: int, node_budget: int | None = None, repeats: int = 3,
                  progress: Callable[[float, str], None] | None = None) -> dict:
    """Plain decoding, the chain of gamma = len(shape) and the tree, interleaved `repeats` times (EOS
    does not stop them). Per contestant: seconds per token (median, low, high; prefill excluded),
    tokens per target pass, draft passes and nodes per round, the median target pass, and the
    wall-clock speedup over plain decoding (median of the per-repetition ratios)."""
    shape, node_budget = check_shape(shape), check_node_budget(node_budget)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= 20:
        raise ValueError(f"repeats must be an integer in [1, 20], got {repeats!r}")
    drafter = as_drafter(drafter)
    report = progress or (lambda fraction, text: None)
    runs = {
        "plain": lambda: autoregressive_generate(target, prompt_ids, max_new_tokens, sampling, seed=seed,
                                                 eos_token_id=None),
        "chain": lambda: speculative_generate(target, drafter, prompt_ids, gamma=len(shape),
                                              max_new_tokens=max_new_tokens, sampling=sampling, seed=seed,
                                              eos_token_id=None, trace=False),
        "tree": lambda: tree_generate(target, drafter, prompt_ids, shape=shape, max_new_tokens=max_new_tokens,
                                      sampling=sampling, seed=seed, node_budget=node_budget, eos_token_id=None,
                                      trace=False),
    }
    for name in CONTESTANTS:  # warm-up: first calls pay for allocations
        runs[name]()
    seconds = {name: [] for name in CONTESTANTS}
    last: dict[str, GenerationResult] = {}
    for r in range(repeats):
        for i, name in enumerate(CONTESTANTS if r % 2 == 0 else CONTESTANTS[::-1]):
            report((r * len(CONTESTANTS) + i) / (repeats * len(CONTESTANTS)), f"Repetition {r + 1} of {repeats}: {name}")
            last[name] = runs[name]()
            seconds[name].append(_decode_s_per_token(last[name]))
    report(1.0, "Done")
    out = {}
    for name in CONTESTANTS:
        res = last[name]
        rounds = max(1, len(res.rounds))
        out[name] = {
            "s_per_token": _spread(seconds[name]),
            "speedup": _spread([base / s for base, s in zip(seconds["plain"], seconds[name])]),
            "tokens_per_pass": res.tokens_per_pass,
            "target_passes": res.target_passes,
            "tokens": len(res.tokens),
            "nodes_per_round": res.drafts_per_round,
            "draft_passes_per_round": res.draft_passes / rounds if res.rounds else 0.0,
            "target_pass_s": statistics.median(res.target_pass_s) if res.target_pass_s else float("nan"),
        }
    out["identical"] = sampling.greedy and last["tree"].tokens == last["plain"].tokens == last["chain"].tokens
    out["repeats"] = repeats
    return out
