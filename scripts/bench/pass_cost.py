"""What a pass costs: v(γ) = the target's verify pass over γ + 1 positions / its one-token pass, and
c = the draft's one-token pass / the target's, alone and inside real runs, interleaved in one process.
(A revision against another: scripts/bench/tree_ab.py, each checkout in processes of its own.)

Alone: one pass after 64 cached tokens, every size and revision in turn, pass by pass, --alone-reps
times; lower quartiles (the app's calibration reads those: a busy machine only ever adds time) and
medians.
In a run: greedy speculative runs at each γ on the held-out prompts (64 new tokens), the mean verify
pass of the rounds that drafted all γ tokens, over the mean one-token pass of a plain greedy run on the
same prompts in the same repetition; also the runs' decoding time, so the speedup over plain per γ.
One torch thread; medians (lowest-highest) over the repetitions, and the load average. Run:

    python scripts/bench/pass_cost.py [--gammas 1-8] [--reps 5] [--alone-reps 40]
    python scripts/bench/pass_cost.py --race-clicks 5   (the app's race, by its own function)
"""
import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from specdec_core import GREEDY, GenerationRequest, ModelDrafter, autoregressive_generate, speculative_generate  # noqa: E402
from specdec_core.analysis import lab, race  # noqa: E402
from specdec_core.analysis.stats import contest, decode_seconds  # noqa: E402
from specdec_core.model import CachedLM  # noqa: E402
from specdec_core.pairs import load_pair  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gammas", default="1-8")
    ap.add_argument("--reps", type=int, default=5, help="repetitions of the runs (0: the isolated passes only)")
    ap.add_argument("--alone-reps", type=int, default=40)
    ap.add_argument("--race-clicks", type=int, default=0,
                    help="instead: this many presses of the Wall-Clock Race's run (race.live_race)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    lo, hi = (int(x) for x in args.gammas.split("-"))
    gammas = list(range(lo, hi + 1))
    pair = load_pair("shakespeare", device="cpu")
    revs = ["now"]  # the rows' label (a revision against another: tree_ab.py)
    print(f"load average at the start {os.getloadavg()}")
    if args.race_clicks:
        return race_clicks(pair, args.race_clicks)

    # alone: one CachedLM per model after the same 64 cached tokens; pass by pass, every size in turn
    # (the order reversed every other repetition), each pass rolled back after it
    ks = [1] + [g + 1 for g in gammas]
    g = torch.Generator().manual_seed(0)
    context = torch.randint(0, pair.tokenizer.vocab_size, (64,), generator=g).tolist()
    new = torch.randint(0, pair.tokenizer.vocab_size, (max(ks),), generator=g).tolist()
    lms = {(rev, role): CachedLM(getattr(pair, role)) for rev in revs for role in ("target", "draft")}
    times = {(rev, k): [] for rev in revs for k in ks + ["draft"]}
    with torch.inference_mode():
        for lm in lms.values():
            lm.prefill(context)
        for rep in range(args.alone_reps + 2):
            order = [(rev, k) for k in ks + ["draft"] for rev in revs]
            for rev, k in (order if rep % 2 else order[::-1]):
                lm = lms[rev, "draft" if k == "draft" else "target"]
                n = 1 if k == "draft" else k
                lm.extend(new[:n])
                lm.rollback(n)
                if rep >= 2:  # two warm-up repetitions
                    times[rev, k].append(lm.last_pass_s)
    quartile = lambda xs: sorted(xs)[len(xs) // 4]
    print(f"\nalone: target passes after 64 cached tokens, {args.alone_reps} interleaved repetitions, pass by "
          "pass; the one-token pass (lower quartile / median), then v(γ) = pass over γ + 1 / one-token pass, "
          "of the lower quartiles / of the medians")
    for rev in revs:
        one = times[rev, 1]
        cells = [f"{1e3 * quartile(one):.2f} / {1e3 * statistics.median(one):.2f} ms"]
        cells += [f"{quartile(times[rev, g + 1]) / quartile(one):.2f} / "
                  f"{statistics.median(times[rev, g + 1]) / statistics.median(one):.2f}" for g in gammas]
        print(f"| {rev} | " + " | ".join(cells) + " |")
    for rev in revs:
        draft = times[rev, "draft"]
        print(f"{rev}: the draft's one-token pass {1e3 * quartile(draft):.3f} / {1e3 * statistics.median(draft):.3f} ms; "
              f"c = {quartile(draft) / quartile(times[rev, 1]):.4f} / "
              f"{statistics.median(draft) / statistics.median(times[rev, 1]):.4f}")
    if not args.reps:
        return

    prompts = [pair.tokenizer.encode(p["text"]) for p in
               json.loads((ROOT / "assets/bench_prompts.json").read_text())["prompts"] if p["kind"] == "open"]
    requests = [GenerationRequest(ids, 64, GREEDY).fixed_length() for ids in prompts]
    drafter = ModelDrafter(pair.draft)
    runs = {}
    for rev in revs:
        runs[rev, "plain"] = lambda: [autoregressive_generate(pair.target, r) for r in requests]
        for g in gammas:
            runs[rev, g] = lambda g=g: [speculative_generate(pair.target, drafter, r, gamma=g, trace=False)
                                        for r in requests]
    done = contest(runs, args.reps, warm_up=True)
    # lower quartiles: of every pass of a kind over all runs, and of each prompt's run times over the
    # repetitions (summed over the prompts); a busy machine only ever adds time, and these drop most of it
    quartile = lambda xs: sorted(xs)[len(xs) // 4]
    ones = lambda rev: [s for rs in done.results[rev, "plain"] for r in rs for s in r.target_pass_s]
    verifies = lambda rev, g: [t.target_pass_s for rs in done.results[rev, g] for r in rs for t in r.rounds
                               if len(t.draft_tokens) == g]
    run_s = lambda name: sum(quartile([decode_seconds(rs[i]) for rs in done.results[name]])
                             for i in range(len(prompts))) / len(prompts)
    print(f"\nin the runs: greedy, 64 new tokens, {len(prompts)} held-out prompts, {done.repeats} interleaved "
          "repetitions; lower quartiles: the plain run's one-token pass, then v(γ) = the full verify pass / "
          "that one-token pass; decoding ms per 64 tokens; the speedup over plain")
    for rev in revs:
        one = quartile(ones(rev))
        print(f"| {rev} v(γ) | {1e3 * one:.2f} ms | " + " | ".join(f"{quartile(verifies(rev, g)) / one:.2f}"
                                                             for g in gammas) + " |")
        print(f"| {rev} ms per 64 tokens | {1e3 * run_s((rev, 'plain')):.0f} | "
              + " | ".join(f"{1e3 * run_s((rev, g)):.0f}" for g in gammas) + " |")
        print(f"| {rev} speedup | 1 | " + " | ".join(f"{run_s((rev, 'plain')) / run_s((rev, g)):.2f}×"
                                                     for g in gammas) + " |")
    for rev in revs:  # c as the app takes it: a warm draft pass (a round's second step on) over the one-token pass
        warm = [s for g in gammas if g > 1 for rs in done.results[rev, g] for r in rs for t in r.rounds
                for s in t.draft_pass_s[1:]]
        print(f"{rev}: c in the runs = {quartile(warm) / quartile(ones(rev)):.4f} (warm draft pass "
              f"{1e3 * quartile(warm):.3f} ms, lower quartiles)")
    plain = [r.tokens for r in done.results["now", "plain"][0]]
    same = all([r.tokens for r in done.results[rev, g][0]] == plain for rev in revs for g in gammas)
    print(f"\nevery speculative output equal to plain greedy's: {same}; load average at the end {os.getloadavg()}")


def race_clicks(pair, clicks: int) -> None:
    """The race as the app runs it by default (its documented prompt, greedy, γ 4, 64 tokens, the
    page's own function and repetitions), `clicks` presses."""
    request = GenerationRequest(pair.tokenizer.encode(lab.DOCUMENTED_PROMPT), 64, GREEDY).fixed_length()
    drafter = ModelDrafter(pair.draft)
    speedups = []
    for click in range(clicks):
        live = race.live_race(pair.target, drafter, request, lab.DOCUMENTED_GAMMA)
        speedups.append(live.speedups.median)
        print(f"  click {click + 1}: {live.speedups.text('×', 2)}")
    print(f"the race's speedup over {clicks} presses, median {statistics.median(speedups):.2f}× "
          f"({min(speedups):.2f}–{max(speedups):.2f}); load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
