"""v(γ) = the target's verify pass over γ + 1 positions / its one-token pass, alone and inside real runs,
for the core's passes now and at a git revision (--before), interleaved in one process.

Alone: `pass_costs.pass_cost` (one pass after 64 cached tokens, the median of 3 after a warm-up).
In a run: greedy speculative runs at each γ on the held-out prompts (64 new tokens), the mean verify
pass of the rounds that drafted all γ tokens, over the mean one-token pass of a plain greedy run on the
same prompts in the same repetition; also the runs' decoding time, so the speedup over plain per γ.
One torch thread; medians (lowest-highest) over the repetitions, and the load average. Run:

    python scripts/verify_pass_cost.py [--before b6fa7d5] [--gammas 1-8] [--reps 5] [--alone-reps 15]
"""
import argparse
import json
import os
import statistics
from pathlib import Path

import torch
from draft_step_cost import model_pass_at

from specdec_core import GREEDY, GenerationRequest, ModelDrafter, autoregressive_generate, speculative_generate
from specdec_core.analysis.pass_costs import pass_cost
from specdec_core.analysis.stats import contest, decode_seconds
from specdec_core.model import cached_lm
from specdec_core.pairs import load_pair

ROOT = Path(__file__).resolve().parent.parent


def using(pass_of, work):
    """`work` run with CachedLM's passes made by `pass_of` (a revision's model_pass)."""
    def go():
        now = cached_lm.model_pass
        cached_lm.model_pass = pass_of
        try:
            return work()
        finally:
            cached_lm.model_pass = now
    return go


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default=None, help="a git revision to compare with (its passes)")
    ap.add_argument("--gammas", default="1-8")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--alone-reps", type=int, default=15)
    args = ap.parse_args()
    torch.set_num_threads(1)
    lo, hi = (int(x) for x in args.gammas.split("-"))
    gammas = list(range(lo, hi + 1))
    pair = load_pair("shakespeare", device="cpu")
    revs = {"now": cached_lm.model_pass}
    if args.before:
        revs = {"before": model_pass_at(args.before), **revs}
    print(f"load average at the start {os.getloadavg()}")

    alone = {(rev, k): using(p, lambda k=k: pass_cost(pair.target, k, 64, repeats=3, warmup=1))
             for rev, p in revs.items() for k in [1] + [g + 1 for g in gammas]}
    done = contest(alone, args.alone_reps, warm_up=True)
    print(f"\nalone: target passes after 64 cached tokens, {done.repeats} interleaved repetitions; "
          "one-token pass, then v(γ) per repetition, median (lowest-highest)")
    for rev in revs:
        cells = [done.measured((rev, 1), lambda s: 1e3 * s).text(" ms", 2)]
        cells += [done.ratios((rev, g + 1), (rev, 1), float).text("", 2) for g in gammas]
        print(f"| {rev} | " + " | ".join(cells) + " |")

    prompts = [pair.tokenizer.encode(p["text"]) for p in
               json.loads((ROOT / "assets/bench_prompts.json").read_text())["prompts"] if p["kind"] == "open"]
    requests = [GenerationRequest(ids, 64, GREEDY).fixed_length() for ids in prompts]
    drafter = ModelDrafter(pair.draft)
    runs = {}
    for rev, p in revs.items():
        runs[rev, "plain"] = using(p, lambda: [autoregressive_generate(pair.target, r) for r in requests])
        for g in gammas:
            runs[rev, g] = using(p, lambda g=g: [speculative_generate(pair.target, drafter, r, gamma=g, trace=False)
                                                 for r in requests])
    done = contest(runs, args.reps, warm_up=True)
    one = lambda rs: statistics.fmean(s for r in rs for s in r.target_pass_s)
    verify = lambda g: lambda rs: statistics.fmean(t.target_pass_s for r in rs for t in r.rounds
                                                   if len(t.draft_tokens) == g)
    seconds = lambda rs: sum(decode_seconds(r) for r in rs) / len(rs)
    print(f"\nin the runs: greedy, 64 new tokens, {len(prompts)} held-out prompts, {done.repeats} interleaved "
          "repetitions; v(γ) = the mean full verify pass / the plain run's mean one-token pass, then decoding "
          "ms per 64 tokens and the speedup over plain")
    for rev in revs:
        vs = [ratio_across(done, (rev, "plain"), one, (rev, g), verify(g)) for g in gammas]
        print(f"| {rev} v(γ) | {done.measured((rev, 'plain'), lambda rs: 1e3 * one(rs)).text(' ms', 2)} | "
              + " | ".join(vs) + " |")
        print(f"| {rev} ms per 64 tokens | {done.measured((rev, 'plain'), lambda rs: 1e3 * seconds(rs)).text('', 0)} | "
              + " | ".join(done.measured((rev, g), lambda rs: 1e3 * seconds(rs)).text("", 0) for g in gammas) + " |")
        print(f"| {rev} speedup | 1 | "
              + " | ".join(done.ratios((rev, "plain"), (rev, g), seconds).text("×", 2) for g in gammas) + " |")
    plain = [r.tokens for r in done.results["now", "plain"][0]]
    same = all([r.tokens for r in done.results[rev, g][0]] == plain for rev in revs for g in gammas)
    print(f"\nevery speculative output equal to plain greedy's: {same}; load average at the end {os.getloadavg()}")


def ratio_across(done, base, base_value, name, value) -> str:
    """value(name's results) / base_value(base's results), repetition by repetition: median (spread)."""
    ratios = sorted(value(a) / base_value(b) for a, b in zip(done.results[name], done.results[base]))
    return f"{statistics.median(ratios):.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f})"


if __name__ == "__main__":
    main()
