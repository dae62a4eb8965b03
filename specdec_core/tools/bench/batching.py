"""Batch rows of the benchmark: plain and speculative tokens per second by batch size, the crossover.

    specdec bench-batch [--sizes 1,2,4,8,16,32] [--tokens 32] [--reps 3] [--temperature 1] [--out DIR]

`analysis.batching.measure_regime` on the bundled pair: pass costs t(B, k) and d(B), γ per batch
size from the cost model (and a fixed γ, as a stack that never adapts it), interleaved plain /
speculative batches (median and range of the
repetitions), the cost model's prediction beside them, the time to first token. Writes
batch_bench.md and batch_bench.csv under --out (default bench-out/).
"""
import argparse
import sys
import time
from pathlib import Path

import torch

from ...analysis.batching import BATCH_SIZES, measure_regime, progress_printer, summary
from ...analysis.stats import Pacing
from ...pairs import load_pair
from ...request import GenerationRequest
from ...sampling_config import GREEDY, SamplingConfig


def markdown(regime, command: str, when: str, seconds: float) -> str:
    out = [f"# Batch rows: {command}", "",
           f"{when}, {seconds:.0f} s; bundled pair, {regime.max_new_tokens} new tokens per prompt, "
           f"{regime.repeats} interleaved repetitions per batch size, teacher-forced α = {regime.alpha:.2f}. "
           "Tokens/s of the decoding phase (all rows' new tokens / (batch time - the target's prefill)); "
           "speedup = speculative / plain tokens/s, repetition by repetition: median (lowest-highest). "
           "γ per batch size from the measured cost model; predicted = the cost model's speedup "
           "E(α, γ) · t(B, 1) / (γ · d(B) + t(B, γ + 1)).", "",
           "| batch | γ | plain tok/s | speculative tok/s | speedup | predicted | v(B·(γ+1)) | "
           + (f"speedup at γ={regime.fixed_gamma} | predicted at γ={regime.fixed_gamma} | " if regime.fixed_gamma else "")
           + "TTFT plain | TTFT speculative | target prefill | drafter prefill | acceptance |",
           "|---" * (12 + (2 if regime.fixed_gamma else 0)) + "|"]
    for r in regime.rows:
        fixed = (f"{r.fixed_speedup.median:.2f}x ({r.fixed_speedup.low:.2f}-{r.fixed_speedup.high:.2f}) | "
                 f"{r.fixed_predicted:.2f}x | ") if r.fixed_speedup is not None else ""
        out.append(f"| {r.batch} | {r.gamma} | {r.plain.median:.0f} | {r.speculative.median:.0f} | "
                   f"{r.speedup.median:.2f}x ({r.speedup.low:.2f}-{r.speedup.high:.2f}) | {r.predicted_speedup:.2f}x | "
                   f"{r.v:.1f} | {fixed}{1e3 * r.ttft_plain.median:.0f} ms | {1e3 * r.ttft_speculative.median:.0f} ms | "
                   f"{1e3 * r.prefill.median:.0f} ms | {1e3 * r.draft_prefill.median:.1f} ms | {r.acceptance:.2f} |")
    at = lambda b: f"batch {b}" if b else "none in this range"
    out += ["", f"**Crossover (measured), γ per batch size: {at(regime.crossover)}**; predicted: "
            f"{at(regime.predicted_crossover)}."]
    if regime.fixed_gamma:
        out.append(f"**Crossover (measured) at a fixed γ = {regime.fixed_gamma}: {at(regime.fixed_crossover)}**.")
    out += [""] + [f"- {line}" for line in summary(regime)]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="specdec bench-batch", description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(map(str, BATCH_SIZES)))
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--temperature", type=float, default=1.0, help="0 = greedy")
    ap.add_argument("--fixed-gamma", type=int, default=4, help="also measure this γ at every batch size (0: not)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1; 0: torch's own choice)")
    ap.add_argument("--out", type=Path, default=Path("bench-out"))
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    start = time.time()
    pair = load_pair("shakespeare")
    sampling = GREEDY if args.temperature == 0 else SamplingConfig(args.temperature)
    try:
        regime = measure_regime(pair.target, pair.draft, pair.tokenizer,
                                GenerationRequest(max_new_tokens=args.tokens, sampling=sampling, seed=0),
                                [int(x) for x in args.sizes.split(",")], repeats=args.reps,
                                fixed_gamma=args.fixed_gamma or None, pacing=Pacing(progress=progress_printer(print)))
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    command = "specdec bench-batch " + " ".join(argv if argv is not None else sys.argv[1:])
    md = markdown(regime, command, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), time.time() - start)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "batch_bench.md").write_text(md)
    regime.frame().to_csv(args.out / "batch_bench.csv", index=False)
    print(md)
    return 0
