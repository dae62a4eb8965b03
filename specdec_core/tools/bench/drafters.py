"""The distilled draft, the Medusa heads, the EAGLE and the EAGLE-3 drafters on the benchmark's held-out prompts.

    specdec bench-drafters [--gamma 5] [--reps 3] [--tokens 64] [--prompts N] [--temperatures 0,1] [--out DIR]
                           [--only distilled,eagle,eagle3] [--variants DIR]

--variants adds every drafter exported under DIR/<name>/ (the EAGLE-3 ablation's variants, `specdec
train eagle3 --out`) as "ablation: <name>". --only keeps the named drafters (distilled, medusa,
eagle, eagle3).
For each temperature: `analysis.self_draft.compare_drafters` (tokens per target pass, mean acceptance
length, acceptance by position, c, wall-clock speedup over plain decoding with its range, the AUC of
each drafter's top probability against the target's verdict). Greedy only: the EAGLE drafter's
best-first tree against every static shape of equal node count, and its confidence stop against
every fixed gamma. Writes drafter_bench.md and drafter_bench.json under --out (default bench-out/).
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

from ...analysis.self_draft import compare_drafters, policy_comparison, tree_comparison
from ...analysis.stats import Pacing
from ...pairs import load_pair
from ...request import GenerationRequest
from ...sampling_config import GREEDY, SamplingConfig
from ...self_drafters import for_target
from .plan import load_prompts

TREE_NODES, TREE_DEPTH = (8, 16), 5


def markdown(report: dict) -> str:
    out = [f"# Self-drafters against the distilled draft: {report['command']}", "",
           f"{report['when']}, {report['seconds']:.0f} s on {report['machine']} (load average "
           f"{report['load_before'][0]:.2f} before, {report['load_after'][0]:.2f} after); "
           f"held-out prompts ({report['prompts']}), "
           f"{report['tokens']} new tokens each, γ = {report['gamma']}, {report['reps']} interleaved repetitions; "
           "speedup = plain decoding time / drafter time (decoding phase, summed over the prompts), median "
           "(lowest-highest). AUC: the drafter's top probability against the target's verdict on its judged drafts.", ""]
    for key, rows in report["compare"].items():
        out += [f"## {key}", "", "| drafter | tokens / target pass | mean acceptance length | acceptance by position "
                "(of drafted) | accepted / reached | c | speedup | range | AUC top | AUC margin |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            out.append(f"| {r['drafter']} | {r['tokens_per_pass']:.2f} | {r['mean_acceptance_length']:.2f} | "
                       + " ".join(f"{x:.2f}" for x in r["per_position"]) + " | "
                       + " ".join(f"{x:.2f}" for x in r["conditional"])
                       + f" | {r['c']:.3f} | {r['speedup']:.2f}x | {r['low']:.2f}-{r['high']:.2f} | "
                       f"{r['auc_top']:.3f} | {r['auc_margin']:.3f} |")
        out.append("")
    for t in report.get("trees", []):
        out.append(f"- EAGLE, best-first tree of {t['nodes']} nodes (depth ≤ {t['depth']}): {t['best_first']:.2f} tokens / "
                   f"target pass; best static shape of {t['nodes']} nodes {t['best_static']}: "
                   f"{t['static'][t['best_static']]:.2f} (ratio {t['ratio']:.3f}; {len(t['static'])} shapes tried)")
    if "policy" in report:
        p = report["policy"]
        out.append(f"- EAGLE, confidence stop: best {p['best_stop']} {p['speedups'][p['best_stop']]} against the best "
                   f"fixed {p['best_fixed']} {p['speedups'][p['best_fixed']]}: ratio {p['ratio']:.3f} (every "
                   "contestant: " + "; ".join(f"{k} {v}" for k, v in p["speedups"].items()) + ")")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gamma", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--prompts", type=int, default=None, help="the first N open prompts (default all)")
    ap.add_argument("--temperatures", default="0,1")
    ap.add_argument("--thresholds", default="0.3,0.5,0.7", help="the confidence stop's top probabilities")
    ap.add_argument("--policy-gammas", default="2-7", help="the fixed gammas the confidence stop is held against")
    ap.add_argument("--no-trees", action="store_true")
    ap.add_argument("--no-policy", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("bench-out"))
    ap.add_argument("--only", default=None, help="comma-separated: distilled, medusa, eagle, eagle3 (default all)")
    ap.add_argument("--variants", type=Path, default=None, help="a folder of exported EAGLE-3 ablation variants")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    start = time.time()
    pair = load_pair("shakespeare")
    if not pair.self_drafters:
        print("error: the bundled pair has no self-drafters: " + "; ".join(pair.notes), file=sys.stderr)
        return 2
    prompts = [pair.tokenizer.encode(p["text"]) for p in load_prompts(args.prompts) if p["kind"] == "open"]
    named = {"distilled": ("distilled draft", pair.draft), **{k: (d.name, d) for k, d in pair.self_drafters.items()}}
    keep = args.only.split(",") if args.only else list(named)
    drafters = dict(named[k] for k in keep)
    if args.variants is not None:
        for folder in sorted(p for p in args.variants.iterdir() if (p / "config.json").exists()):
            drafters[f"ablation: {folder.name}"] = for_target(pair.target, folder)
    report = {"command": "specdec bench-drafters " + " ".join(argv if argv is not None else sys.argv[1:]),
              "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "reps": args.reps, "tokens": args.tokens,
              "gamma": args.gamma, "prompts": len(prompts), "machine": f"{torch.get_num_threads()} torch thread(s), cpu",
              "load_before": os.getloadavg(), "compare": {},
              "training": {label: getattr(d, "training", {}) for label, d in drafters.items() if label != "distilled draft"}}
    greedy = GenerationRequest(max_new_tokens=args.tokens, sampling=GREEDY, seed=0)  # the trees and the policy stop
    for t in (float(x) for x in args.temperatures.split(",")):
        sampling = GREEDY if t == 0 else SamplingConfig(t)
        print(f"T={t:g}", flush=True)
        request = GenerationRequest(max_new_tokens=args.tokens, sampling=sampling, seed=0)
        res = compare_drafters(pair.target, drafters, prompts, request, gamma=args.gamma, repeats=args.reps,
                               pacing=Pacing(progress=lambda f, text: print(f"  {text}", flush=True)))
        report["compare"][f"T={t:g}"] = [
            {**{k: v for k, v in r.items() if k not in ("measured", "rounds", "calibration")},
             "low": r["measured"].low, "high": r["measured"].high,
             "calibration": r["calibration"].to_dict(orient="records")} for r in res["rows"]]
    if not args.no_trees:
        eagle = pair.self_drafters["eagle"]
        report["trees"] = []
        for nodes in TREE_NODES:
            print(f"trees of {nodes} nodes", flush=True)
            t = tree_comparison(pair.target, eagle, prompts, greedy, nodes, TREE_DEPTH)
            t["static"] = {",".join(map(str, k)): v for k, v in t["static"].items()}
            t["best_static"] = ",".join(map(str, t["best_static"]))
            report["trees"].append(t)
    if not args.no_policy:
        print("confidence stop against fixed gamma", flush=True)
        lo, _, hi = args.policy_gammas.partition("-")
        p = policy_comparison(pair.target, pair.self_drafters["eagle"], prompts, greedy,
                              range(int(lo), int(hi or lo) + 1), tuple(float(t) for t in args.thresholds.split(",")),
                              repeats=args.reps)
        report["policy"] = {**p, "speedups": {k: m.text() for k, m in p["speedups"].items()},
                            "medians": {k: m.median for k, m in p["speedups"].items()}}
    report["seconds"] = time.time() - start
    report["load_after"] = os.getloadavg()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "drafter_bench.json").write_text(json.dumps(report, indent=1, default=str))
    (args.out / "drafter_bench.md").write_text(markdown(report))
    print(markdown(report))
    return 0
