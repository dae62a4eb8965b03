"""Where a speculative round's time goes, on the bundled pair: the table in docs/benchmarks.md.

Greedy, 64 new tokens, the held-out (open) prompts of assets/bench_prompts.json, one torch thread.
Two views of the same runs:
  1. wall-clock shares from an instrumented run: the core's round steps are wrapped with timers
     (draft steps, the draft passes inside them, the verify pass, the rule, rollback, commit, the
     round record and trace); "the rest" is the round loop itself and the trace fields it fills in;
  2. cProfile's split of the same runs' time into torch calls and the compiled passes (the ops, dispatch
     included) and Python.
Shares, not milliseconds: the machine this runs on may be shared, and its load moves the absolute
times (the memory-bound target pass more than the rest). Run:

    python scripts/bench/round_profile.py [--gammas 5,6] [--reps 3] [--draft-step transformers] [--no-trace]

Two more figures, each through stats.contest (interleaved, median and spread), instead of the table:
    --v-gamma 1-8    v(gamma) = one target pass over gamma + 1 positions / one over 1 (`pass_costs.pass_sweep`)
    --trace-cost     decoding time with trace=True over trace=False, the same runs interleaved
"""
import argparse
import cProfile
import json
import pstats
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from specdec_core import bookkeeping, drafters, speculative  # noqa: E402
from specdec_core.analysis.pass_costs import pass_sweep  # noqa: E402
from specdec_core.analysis.stats import contest, decode_seconds  # noqa: E402
from specdec_core.drafters import ModelDrafter  # noqa: E402
from specdec_core.model import with_forward  # noqa: E402
from specdec_core.pairs import load_pair  # noqa: E402
from specdec_core.request import GenerationRequest  # noqa: E402
from specdec_core.sampling_config import GREEDY  # noqa: E402
from specdec_core.speculative import speculative_generate  # noqa: E402

SPENT: dict[str, float] = defaultdict(float)


def timed(owner, name: str, label: str) -> None:
    """Wrap owner.name so its wall time adds up under `label` (nested wrappers are not subtracted)."""
    fn = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            SPENT[label] += time.perf_counter() - start
    setattr(owner, name, wrapper)


def instrument() -> None:
    timed(drafters._ModelDraftSession, "propose", "draft steps")
    timed(bookkeeping.Generation, "score", "verify pass")
    timed(speculative, "verify", "rule")
    timed(speculative, "to_probs", "rule")  # p from the verify logits (greedy: one-hot rows)
    timed(bookkeeping.Generation, "keep", "rollback")
    timed(bookkeeping.Generation, "commit", "commit")
    timed(bookkeeping.Generation, "round_record", "round record and trace")
    timed(bookkeeping.Generation, "end_round", "round record and trace")
    timed(speculative, "top_entries", "round record and trace")
    timed(speculative, "confidence", "round record and trace")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gammas", default="5,6")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--draft-step", default="core", help="core or transformers: the draft model's forward (forward_choice.py)")
    ap.add_argument("--no-trace", action="store_true", help="trace=False (the runs nobody reads)")
    ap.add_argument("--v-gamma", default=None, help="e.g. 1-8: measure v(gamma) instead of the table")
    ap.add_argument("--trace-cost", action="store_true", help="measure trace=True against trace=False instead")
    args = ap.parse_args()
    torch.set_num_threads(1)
    pair = load_pair("shakespeare", device="cpu")
    prompts = [pair.tokenizer.encode(p["text"]) for p in
               json.loads((ROOT / "assets/bench_prompts.json").read_text())["prompts"] if p["kind"] == "open"]
    drafter = ModelDrafter(with_forward(pair.draft, args.draft_step))
    asked = GenerationRequest(max_new_tokens=args.tokens, sampling=GREEDY).fixed_length()
    gammas = [int(g) for g in args.gammas.split(",")]

    def runs():
        out = []
        for _ in range(args.reps):
            for ids in prompts:
                for gamma in gammas:
                    out.append(speculative_generate(pair.target, drafter, replace(asked, prompt_ids=ids), gamma=gamma,
                                                    trace=not args.no_trace))
        return out

    if args.v_gamma:
        lo, hi = (int(x) for x in args.v_gamma.split("-"))
        sweep = pass_sweep(pair.target, range(1, hi + 2), context=64, repeats=args.reps)
        print(f"target passes after 64 cached tokens, {args.reps} interleaved repetitions (each the median of 3 "
              "passes); v per repetition, median (spread)")
        for g in range(lo, hi + 1):
            v = [a / b for a, b in zip(sweep[g + 1].runs, sweep[1].runs)]
            print(f"  v({g}) = {sorted(v)[len(v) // 2]:.2f} ({min(v):.2f}-{max(v):.2f}); pass over {g + 1}: "
                  f"{sweep[g + 1].text(' ms', 2, 1e3)}")
        return
    if args.trace_cost:
        gamma = gammas[0]
        spec = lambda trace: lambda: [speculative_generate(pair.target, drafter, replace(asked, prompt_ids=ids),
                                                           gamma=gamma, trace=trace) for ids in prompts]
        done = contest({"trace": spec(True), "no trace": spec(False)}, args.reps, warm_up=True)
        cost = done.ratios("trace", "no trace", lambda rs: sum(decode_seconds(r) for r in rs))
        print(f"gamma {gamma}, {len(prompts)} held-out prompts a repetition, {done.repeats} interleaved "
              f"repetitions: decoding time with trace / without {cost.text('×', 3)}")
        return
    runs()  # warm-up, not counted
    # 1. the instrumented run: wall-clock shares of the decoding phase (prefill left out)
    instrument()
    results = runs()
    decode = sum(r.total_s - r.prefill_s for r in results)
    draft_pass = sum(s for r in results for t in r.rounds for s in t.draft_pass_s)
    rounds = sum(len(r.rounds) for r in results)
    tokens = sum(len(r.tokens) for r in results)
    rows = {label: SPENT[label] for label in ("draft steps", "verify pass", "rule", "rollback", "commit",
                                              "round record and trace")}
    rest = decode - sum(rows.values())
    print(f"greedy, gamma {args.gammas}, {args.tokens} new tokens, {len(prompts)} held-out prompts x {args.reps}, "
          f"one thread, draft step {args.draft_step!r}, trace={not args.no_trace}; {rounds / len(results):.1f} "
          f"rounds per run, {tokens / rounds:.2f} tokens a round; shares of the decoding phase (prefill left out)")
    print("| part of a round | share |\n|---|---|")
    for label, s in rows.items():
        print(f"| {label} | {100 * s / decode:.1f}% |")
        if label == "draft steps":
            print(f"| ... of which the draft passes themselves (the model's ops) | {100 * draft_pass / decode:.1f}% |")
            print(f"| ... of which the drafter's Python around them (argmax, one-hot q, bookkeeping) | "
                  f"{100 * (s - draft_pass) / decode:.1f}% |")
    print(f"| the rest: the round loop, policy, trace fields | {100 * rest / decode:.1f}% |")
    # 2. cProfile: torch calls against Python (cProfile's own cost inflates the Python side)
    prof = cProfile.Profile()
    prof.runcall(runs)
    stats = pstats.Stats(prof).stats
    torch_s = sum(tt for (file, _, name), (_, _, tt, _, _) in stats.items()  # the compiled passes count as ops
                  if file == "~" and ("torch" in name or "TensorBase" in name or "specdec_gpt2_pass" in name))
    own = sum(tt for (_, _, tt, _, _) in stats.values())
    print(f"\ncProfile of the same runs: {100 * torch_s / own:.1f}% in torch calls and the compiled passes "
          "(ops and their dispatch), "
          f"{100 * (own - torch_s) / own:.1f}% in Python and other builtins (profiler overhead included)")
    top = sorted(((tt, f"{file.split('/')[-1]}:{line}({name})") for (file, line, name), (_, _, tt, _, _) in
                  stats.items()), reverse=True)[:12]
    for tt, where in top:
        print(f"  {100 * tt / own:5.1f}%  {where}")


if __name__ == "__main__":
    main()
