"""Lossless against lossy, measured, as markdown tables (docs/benchmarks.md, "Lossless against lossy"):

    python -m specdec_core.tools.lossless_vs_lossy [--prompts 8] [--tokens 64] [--repeats 3]

1. The bundled target's lossy copies (specdec_core.variants) and speculative decoding against the fp32
   target on held-out prompts: speed where real, agreement teacher-forced and free-running, distance.
2. Each copy as the drafter of the fp32 target: accepted ÷ drafted, tokens per pass, c, speedup, exactness.
3. The exact, exact-match and lossy rules: the lab's documented chi-square run with each rule's power,
   the acceptance sums at that prefix, and the measured economics with sampling at temperature 1.
Every figure comes from the same core functions as the pages (analysis.fidelity, analysis.rule_costs).
"""
import argparse
import platform
import sys
import time

import torch

from .. import lossy
from ..analysis import fidelity, lab, rule_costs
from ..analysis.stats import Pacing
from ..exact_match import EXACT_MATCH
from ..pairs import load_pair
from ..request import GenerationRequest
from ..sampling_config import GREEDY
from ..speculative import EXACT
from ..variants import build_variants

ECONOMICS_TOKENS = 48  # new tokens per held-out prompt when timing the rules


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _printed(log) -> Pacing:
    """Pacing that logs its progress as a percentage and the step."""
    return Pacing(progress=lambda f, text: log(f"  {100 * f:3.0f}% {text}"))


def _speed(m) -> str:
    return "not measured (simulated)" if m is None else m.text()


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def fidelity_tables(pair, n_prompts: int, n_tokens: int, repeats: int, gamma: int, log) -> str:
    held_out = fidelity.held_out_prompts(pair.tokenizer, n_prompts)
    rep = fidelity.fidelity_report(pair.target, pair.draft, build_variants(pair.target, pair.draft),
                                   [ids for _, ids in held_out],
                                   GenerationRequest(max_new_tokens=n_tokens, sampling=GREEDY, seed=0),
                                   gamma=gamma, repeats=repeats, pacing=_printed(log))
    first = lambda r: "–" if r["first_difference"] is None else str(r["first_difference"] + 1)
    rows = [[r["name"], _speed(r["speed"]), _pct(r["teacher_forced_agreement"]), _pct(r["free_running_agreement"]),
             f"{r['identical_prompts']} of {r['prompts']}", first(r), f"{r['distance']:.3g}"] for r in rep.rows]
    bridge = [[b["drafter"] + (" (bundled)" if b["bundled"] else ""), f"{b['accepted_per_drafted']:.3f}",
               f"{b['tokens_per_pass']:.2f}",
               "not measured (simulated)" if b["c"] is None else f"{b['c']:.3f}", _speed(b["speed"]),
               f"{b['identical_prompts']} of {b['prompts']}"] for b in rep.bridge]
    return (f"Held-out prompts: {', '.join(name for name, _ in held_out)}; greedy, {n_tokens} tokens, "
            f"{repeats} interleaved repetitions, γ = {gamma}.\n\n"
            + _table(["method", "speed vs fp32 target", "agreement teacher-forced", f"agreement free-running ({n_tokens})",
                      "identical continuations", "earliest first difference (token)", "mean TV distance"], rows)
            + f"\n\nSpeculative decoding's largest per-position distance from p: {rep.rows[-1]['max_distance']:.1g}.\n\n"
            + _table(["drafter of the fp32 target", "acceptance rate per draft (accepted ÷ drafted)",
                      "tokens per target pass", "c",
                      "speedup vs fp32 target", "output = target's"], bridge))


def rule_tables(pair, n_prompts: int, repeats: int, log) -> str:
    sampling, gamma = lab.DOCUMENTED_SAMPLING, lab.DOCUMENTED_GAMMA
    prefix = pair.tokenizer.encode(lab.DOCUMENTED_PROMPT)[:lab.DOCUMENTED_PREFIX_TOKENS]
    rules = [EXACT, EXACT_MATCH, *lossy.RULES.values()]
    judged = rule_costs.judge_rules(pair.target, pair.draft, prefix, rules, n_tokens=1, k=lab.DOCUMENTED_K,
                                    sampling=sampling, seed=lab.DOCUMENTED_SEED, gamma=gamma, with_power=True)
    for name, v in judged.verdicts.items():
        log(f"  chi-square: {name}: p = {v.test.pvalue:.3g}")
    held_out = fidelity.held_out_prompts(pair.tokenizer, n_prompts)
    econ = rule_costs.rule_economics(pair.target, pair.draft, rules, [ids for _, ids in held_out],
                                     GenerationRequest(max_new_tokens=ECONOMICS_TOKENS, sampling=sampling, seed=0),
                                     gamma=gamma, repeats=repeats, pacing=_printed(log))
    figures = judged.acceptance
    rows = []
    for e in econ:
        v = judged.verdicts[e["rule"]]
        rows.append([e["rule"], f"{e['acceptance']:.3f}", f"{e['tokens_per_pass']:.2f}", _speed(e["speed"]),
                     f"{v.test.pvalue:.3g}", "passes" if v.test.passes else "FAILS", f"{v.power:.3f}"])
    return (f"Lab: prefix {pair.tokenizer.decode(prefix)!r} (the documented {lab.DOCUMENTED_PREFIX_TOKENS} tokens), "
            f"next token, K = {lab.DOCUMENTED_K}, seed {lab.DOCUMENTED_SEED}, temperature "
            f"{lab.DOCUMENTED_TEMPERATURE:g}, γ = {gamma}; "
            f"acceptance at that prefix: Σ min(p, q) = {figures['exact']:.3f}, Σ p·q = {figures['exact_match']:.3f}. "
            f"Economics: {', '.join(name for name, _ in held_out)}, {ECONOMICS_TOKENS} tokens, temperature "
            f"{lab.DOCUMENTED_TEMPERATURE:g}, {repeats} interleaved repetitions against plain sampling.\n\n"
            + _table(["rule", "acceptance (measured)", "tokens per target pass", "speedup vs plain sampling",
                      "χ² p-value", "verdict", f"power at K = {lab.DOCUMENTED_K}"], rows))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prompts", type=int, default=8, help="held-out prompts (at most 8 open ones)")
    ap.add_argument("--tokens", type=int, default=64, help="greedy tokens per prompt")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved repetitions")
    ap.add_argument("--gamma", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (the machine is shared)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    log = lambda text: print(text, file=sys.stderr, flush=True)
    start = time.perf_counter()
    pair = load_pair("shakespeare", "cpu")
    out = fidelity_tables(pair, args.prompts, args.tokens, args.repeats, args.gamma, log)
    out += "\n\n" + rule_tables(pair, min(args.prompts, 4), args.repeats, log)
    print(out)
    print(f"\n({time.perf_counter() - start:.0f} s on {platform.machine()}, torch {torch.__version__}, "
          f"{args.threads} thread(s), CPU shared with other work.)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
