"""`specdec bench`: parse the command line, run the plan for every pair, write and print the results."""
import argparse
import time
from dataclasses import asdict
from pathlib import Path

import torch

from ...pairs import PAIRS, PairUnavailable, load_pair
from .fit import check_targets
from .plan import Settings, quick_settings
from .report import report_markdown, verdict_word, write_chart, write_csv
from .runs import measure_pair, profile_text


def run(s: Settings, command: str = "python -m specdec_core bench", log=print) -> dict:
    """Run the benchmark and write its outputs; returns {'results', 'skipped', 'files'}."""
    if s.threads:
        torch.set_num_threads(s.threads)
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()  # generate() warns about unused defaults on every call
    start = time.perf_counter()
    results, skipped = [], {}
    for name in s.pairs:
        try:
            pair = load_pair(name, device=None if s.device == "auto" else s.device) if name in PAIRS else None
        except (PairUnavailable, ValueError) as err:
            skipped[name] = str(err)
            log(f"[{name}] skipped: {err}")
            continue
        if pair is None:
            skipped[name] = f"unknown pair (choose from {sorted(PAIRS)})"
            continue
        results.append(measure_pair(pair, s, log))
        if s.profile and results[-1]["best_gamma"]:
            s.out.mkdir(parents=True, exist_ok=True)
            (s.out / f"profile-{name}.txt").write_text(profile_text(pair, results[-1], s))
    s.out.mkdir(parents=True, exist_ok=True)
    rows = [{"pair": res["pair"].name, **r} for res in results for r in res["rows"]]
    write_csv(s.out / "bench.csv", rows)
    write_csv(s.out / "runs.csv", [
        {**{k: v for k, v in r.items() if k not in ("config", "tokens")}, "config": r["config"].label,
         "n_tokens": len(r["tokens"]), **{f"cfg_{k}": v for k, v in asdict(r["config"]).items()}}
        for res in results for r in res["runs"]])
    md = report_markdown(results, skipped, s, command, time.perf_counter() - start)
    (s.out / "bench.md").write_text(md)
    chart = write_chart(results, s.out)
    files = [s.out / "bench.md", s.out / "bench.csv", s.out / "runs.csv"] + ([chart] if chart else [])
    files += sorted(s.out.glob("profile-*.txt")) if s.profile else []
    return {"results": results, "skipped": skipped, "files": files, "markdown": md}


def add_arguments(b: argparse.ArgumentParser) -> None:
    b.add_argument("--quick", action="store_true", help="CI size: 2 prompts, gamma 1,2,4, 32 tokens, 2 repetitions")
    b.add_argument("--pair", nargs="+", default=["shakespeare"], choices=sorted(PAIRS),
                   help="pairs to measure (a hub pair is skipped with a note when it cannot be loaded)")
    b.add_argument("--out", type=Path, default=Path("bench-out"), help="output folder")
    b.add_argument("--gammas", type=str, default=None, help="e.g. 1-8 or 2,4 (default: 1-8; quick: 1,2,4)")
    b.add_argument("--max-new-tokens", type=int, default=None, help="default 64 (quick: 32)")
    b.add_argument("--reps", type=int, default=None, help="repetitions per prompt and configuration (default 5; quick 2)")
    b.add_argument("--prompts", type=int, default=None, help="open prompts to use (default all; quick 1); "
                   "the self-repeating prompt is always added")
    b.add_argument("--trace-reps", type=int, default=None, help="repetitions of the trace on/off comparison")
    b.add_argument("--threads", type=int, default=1, help="torch threads (default 1; 0: torch's own choice)")
    b.add_argument("--device", default="cpu", help="cpu (default), cuda, mps, or auto")
    b.add_argument("--no-hf", action="store_true", help="skip transformers' generate() rows")
    b.add_argument("--no-sampling", action="store_true", help="skip the sampling rows")
    b.add_argument("--profile", action="store_true", help="also write profile-PAIR.txt (cProfile at the best gamma)")


def parse_gammas(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    if not out or min(out) < 1:
        raise ValueError(f"--gammas must name integers >= 1, got {text!r}")
    return sorted(set(out))


def settings_from_args(args) -> Settings:
    s = quick_settings() if args.quick else Settings()
    s.pairs, s.out, s.threads, s.device = list(args.pair), args.out, args.threads, args.device
    s.hf, s.sampling, s.profile = not args.no_hf, not args.no_sampling, args.profile
    if args.gammas:
        s.gammas = parse_gammas(args.gammas)
    for name in ("max_new_tokens", "reps", "prompts", "trace_reps"):
        if getattr(args, name) is not None:
            setattr(s, name, getattr(args, name))
    if s.max_new_tokens < 2 or s.reps < 1:
        raise ValueError("--max-new-tokens must be >= 2 and --reps >= 1")
    return s


def main(args) -> int:
    s = settings_from_args(args)
    out = run(s, " ".join(["python -m specdec_core"] + getattr(args, "argv", ["bench"])))
    for res in out["results"]:
        print()
        print(f"== {res['pair'].name}: targets ==")
        for t in check_targets(res):
            print(f"  {verdict_word(t['met'])}  {t['target']}: {t['value']} (goal {t['goal']}) {t['note']}")
    print("\nwrote " + ", ".join(str(f) for f in out["files"]))
    return 0 if out["results"] else 2
