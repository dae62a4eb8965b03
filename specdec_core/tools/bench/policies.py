"""Adaptive draft length against every fixed gamma, in our own engine, on the benchmark's held-out prompts.

    specdec bench-policies [--drafter draft|medusa|eagle|eagle3] [--gammas 1-8] [--reps 3] [--tokens 64]
                           [--prompts N] [--out DIR] [--record]

For temperature 0 and 1, and for the open prompts and the self-repeating one separately: plain
decoding, every fixed gamma and every adaptive policy (their POLICIES defaults, planning with this
machine's c and v(gamma), as the pages' policies do) are timed with the chosen drafter by
`analysis.policy_compare.compare_policies` (interleaved repetitions, median speedup and its range),
with the serving stacks' acceptance metrics. The oracle bound is the cost model's speedup of a
gamma = 12 run's rounds, had each drafted exactly the drafts that were accepted (best gamma per
round in hindsight), over the cost model's speedup of the best fixed gamma's own rounds. Writes
policy_bench.md and policy_bench.json under --out (default bench-out/).
"""
import argparse
import json
import sys
import time
from pathlib import Path

import torch

from ...analysis.pass_costs import cost_profile
from ...analysis.policy_compare import PLAIN, best_adaptive, calibration_rounds, compare_policies, summary
from ...analysis.round_stats import calibration, modelled_speedup, oracle_speedup
from ...analysis.stats import Pacing
from ...pairs import PAIRS, load_pair
from ...policies import ADAPTIVE, POLICIES, Costs, with_costs
from ...policy_record import write_choice
from ...request import GenerationRequest
from ...sampling_config import GREEDY, SamplingConfig
from .plan import load_prompts

ORACLE_GAMMA = 12
PAIR = "shakespeare"


def _gammas(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi) + 1)) if hi else [int(x) for x in text.split(",")]


def one_setting(pair, drafter, prompts, sampling, gammas, reps, tokens, costs, log) -> dict:
    contestants = {f"fixed gamma={g}": g for g in gammas}
    contestants.update({name: with_costs(POLICIES[name](), costs) for name in ADAPTIVE})
    request = GenerationRequest(max_new_tokens=tokens, sampling=sampling, seed=0)
    results = compare_policies(pair.target, drafter, prompts, contestants, request, repeats=reps, pacing=Pacing(
        progress=lambda f, text: log(f"  {f:4.0%} {text}") if f in (0.5, 1.0) else None))
    rows = summary(results, costs)
    fixed = [r for r in rows if r["policy"].startswith("fixed")]
    best = max(fixed, key=lambda r: r["speedup"])
    long_rounds = calibration_rounds(pair.target, drafter, prompts, ORACLE_GAMMA, request)
    best_model = max(fixed, key=lambda r: r["modelled_speedup"])
    oracle = {"oracle_modelled_speedup": oracle_speedup(long_rounds, costs),
              "best_fixed_modelled_speedup": best_model["modelled_speedup"],
              "long_gamma_modelled_speedup": modelled_speedup(long_rounds, costs)}
    oracle["oracle_over_best_fixed"] = oracle["oracle_modelled_speedup"] / best_model["modelled_speedup"]
    for r in rows:
        r["vs_best_fixed"] = r["speedup"] / best["speedup"]
    cal = calibration(long_rounds, "margin", bins=5).to_dict(orient="records")
    return {"rows": rows, "best_fixed": best["policy"], "oracle": oracle, "calibration_margin": cal}


def markdown(report: dict) -> str:
    choice = report["choice"]
    out = [f"# Adaptive draft length: {report['command']}", "",
           f"{report['when']}, {report['seconds']:.0f} s; drafter {report['drafter']}; {report['reps']} interleaved "
           f"repetitions, {report['tokens']} new tokens per prompt; speedup = plain decoding time / policy time "
           "(decoding phase, summed over the prompts), median over repetitions (lowest-highest). The adaptive "
           f"policies plan with c = {report['costs']['c']:.3f} and v(gamma) measured here.", "",
           f"Adaptive default for this drafter: **{choice['policy']}**, {choice['score']:.3f}x the best fixed gamma "
           "(geometric mean over the open-prompt settings" + (", recorded)." if report.get("recorded") else ")."), ""]
    for key, res in report["settings"].items():
        out += [f"## {key}", "", "| policy | speedup | range | vs best fixed | mean acceptance length | drafts/round "
                "| per-position acceptance | model speedup |", "|---|---|---|---|---|---|---|---|"]
        for r in res["rows"]:
            if r["policy"] == PLAIN:
                continue
            name = r["policy"] + (" (adaptive default)" if r["policy"] == choice["policy"] else "")
            out.append(f"| {name} | {r['speedup']:.2f}x | {r['speedup_low']:.2f}-{r['speedup_high']:.2f} | "
                       f"{r['vs_best_fixed']:.3f} | {r['mean_acceptance_length']:.2f} | {r['mean_drafted']:.2f} | "
                       + " ".join(f"{x:.2f}" for x in r["per_position_acceptance_rate"][:8])
                       + f" | {r['modelled_speedup']:.2f}x |")
        o = res["oracle"]
        out += ["", f"Best fixed: {res['best_fixed']}. Oracle bound (best gamma per round in hindsight, cost model): "
                f"{o['oracle_modelled_speedup']:.2f}x against the best fixed gamma's {o['best_fixed_modelled_speedup']:.2f}x "
                f"in the same model = **{o['oracle_over_best_fixed']:.2f}x**.", ""]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gammas", default="1-8")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--prompts", type=int, default=None, help="the first N open prompts (default all)")
    ap.add_argument("--temperatures", default="0,1")
    ap.add_argument("--out", type=Path, default=Path("bench-out"))
    ap.add_argument("--drafter", default="draft", help="draft (the pair's distilled drafter), medusa, eagle or eagle3")
    ap.add_argument("--record", action="store_true",
                    help="write the adaptive policy that measured best into the bundled pair's record (the pages' default)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    start = time.time()
    pair = load_pair(PAIR)
    if args.drafter != "draft" and args.drafter not in pair.self_drafters:
        ap.error(f"--drafter must be draft or one of {sorted(pair.self_drafters)}, got {args.drafter!r}")
    drafter = pair.draft if args.drafter == "draft" else pair.self_drafters[args.drafter]
    prompts = load_prompts(args.prompts)
    groups = {kind: [pair.tokenizer.encode(p["text"]) for p in prompts if (p["kind"] == "open") == (kind == "open")]
              for kind in ("open", "repetitive")}
    # The policies plan with this machine's costs, as on the pages; the model speedup uses them too.
    costs = Costs.from_profile(cost_profile(pair.target, pair.draft))
    report = {"command": "specdec bench-policies " + " ".join(argv if argv is not None else sys.argv[1:]),
              "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "reps": args.reps, "tokens": args.tokens,
              "drafter": args.drafter, "costs": {"c": costs.c, "v": list(costs.table)}, "settings": {}}
    for t in (float(x) for x in args.temperatures.split(",")):
        sampling = GREEDY if t == 0 else SamplingConfig(t)
        for kind, group in groups.items():
            key = f"T={t:g}, {kind} prompts ({len(group)})"
            print(key, flush=True)
            report["settings"][key] = one_setting(pair, drafter, group, sampling, _gammas(args.gammas), args.reps,
                                                  args.tokens, costs, print)
    report["seconds"] = time.time() - start
    report["choice"] = best_adaptive({key: res["rows"] for key, res in report["settings"].items() if "open" in key})
    if args.record:
        write_choice(PAIRS[PAIR].policy_record, args.drafter,
                     {**report["choice"], "command": report["command"], "when": report["when"], "precision": pair.precision})
        report["recorded"] = PAIRS[PAIR].policy_record
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "policy_bench.json").write_text(json.dumps(report, indent=1, default=str))
    (args.out / "policy_bench.md").write_text(markdown(report))
    print(markdown(report))
    return 0
