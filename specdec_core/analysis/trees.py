"""Token trees against the chain, measured: tokens per target pass, wall clock, and the price of a wider pass.

The contestants are plain decoding, the linear drafter with gamma = the tree's depth, and the tree,
run as one `stats.contest`: each repetition runs all three in turn, every other repetition in
reverse order (A B C, C B A, ...), so a slow moment of the machine hits each of them; a figure is the
median of the repetitions with its spread (`Measured`). Tokens per pass come from the runs' own counts.

The prediction beside the measurement is the paper's cost model with a tree: a round costs one
target pass over nodes + 1 positions, v(nodes) single passes on this machine, plus c per draft pass:
    speedup = tokens per pass / (v(nodes) + c * draft passes per round).
On an accelerator v stays near 1 up to dozens of positions, which is where trees pay.
"""
import statistics

from ..drafters import as_drafter
from ..request import GenerationRequest
from ..speculative import autoregressive_generate, speculative_generate
from ..tree import tree_generate
from ..tree_draft import check_node_budget, check_shape
from .stats import Pacing, contest, decode_s_per_token

CONTESTANTS = ("plain", "chain", "tree")
MAX_REPEATS = 20


def predicted_speedup(tokens_per_pass: float, v: float, c: float, draft_passes_per_round: float) -> float:
    """Tokens per pass over the cost of a round in single target passes: v + c * draft passes."""
    return tokens_per_pass / (v + c * draft_passes_per_round)


def tree_vs_chain(target, drafter, request: GenerationRequest, shape: tuple[int, ...],
                  node_budget: int | None = None, repeats: int = 3, *, pacing: Pacing = Pacing()) -> dict:
    """Plain decoding, the chain of gamma = len(shape) and the tree, interleaved `repeats` times after
    one untimed run each (EOS does not stop them). Per contestant: seconds per token and the wall-clock
    speedup over plain decoding (each a `Measured`: median and spread of the repetitions, prefill
    excluded), tokens per target pass, draft passes and nodes per round, and the median target pass.
    The pacing's slot is entered around each run (a server's admission slot)."""
    shape, node_budget = check_shape(shape), check_node_budget(node_budget)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
        raise ValueError(f"repeats must be an integer in [1, {MAX_REPEATS}], got {repeats!r}")
    drafter, request = as_drafter(drafter), request.fixed_length()
    runs = {
        "plain": lambda: autoregressive_generate(target, request),
        "chain": lambda: speculative_generate(target, drafter, request, gamma=len(shape), trace=False),
        "tree": lambda: tree_generate(target, drafter, request, shape=shape, node_budget=node_budget, trace=False),
    }
    done = contest(runs, repeats, pacing=pacing, warm_up=True)
    out = {}
    for name in CONTESTANTS:
        res = done.results[name][-1]
        rounds = max(1, len(res.rounds))
        out[name] = {
            "s_per_token": done.measured(name, decode_s_per_token),
            "speedup": done.ratios("plain", name, decode_s_per_token),
            "tokens_per_pass": res.tokens_per_pass,
            "target_passes": res.target_passes,
            "tokens": len(res.tokens),
            "nodes_per_round": res.drafts_per_round,
            "draft_passes_per_round": res.draft_passes / rounds if res.rounds else 0.0,
            "target_pass_s": statistics.median(res.target_pass_s) if res.target_pass_s else float("nan"),
        }
    last = {name: done.results[name][-1] for name in CONTESTANTS}
    out["identical"] = request.sampling.greedy and last["tree"].tokens == last["plain"].tokens == last["chain"].tokens
    out["repeats"] = done.repeats
    return out
