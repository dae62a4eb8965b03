"""Two checkouts of the whole core against each other: each measured in processes of its own that
import that checkout's specdec_core, the checkouts taking turns process by process (A B B A ...), so
a change anywhere in the core (the passes, the caches, the loops) is timed as a run sees it.

    python scripts/bench/tree_ab.py --before /tmp/before-checkout [--after .] [--processes 6]

--before / --after: folders holding a checkout (a git worktree of the revision to compare, e.g.
`git worktree add /tmp/before REV`). Each process, one torch thread, the bundled pair:
  - race: the Wall-Clock Race as the app runs it (race.live_race: its documented prompt, greedy,
    γ 4, 64 tokens, the page's own repetitions), its median speedup;
  - runs: greedy plain and speculative (γ 4 and 5) runs over the held-out prompts (64 new tokens),
    ms per 64 tokens (the sum over the prompts / their number), and batch_generate over them at γ 4;
    also each run's time outside the model's passes (wall time minus its prefill and its target and
    draft passes' own timers): the loops' and caches' Python, which a load that slows memory moves least;
  - passes: the target's one-token pass and its verify pass over 6 rows after 64 cached tokens
    through CachedLM (extend + rollback), medians of --reps.
Printed per checkout: the median over its processes (lowest-highest), and the load average at the start
and the end. A benchmark that prints figures, not a test.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve()


def measure(reps: int) -> dict:
    """One process's figures for the specdec_core found first on sys.path (seconds, and ×)."""
    import time

    import torch

    from specdec_core import (
        GREEDY,
        GenerationRequest,
        ModelDrafter,
        autoregressive_generate,
        batch_generate,
        load_pair,
        speculative_generate,
    )
    from specdec_core.analysis import lab, race
    from specdec_core.model import CachedLM

    torch.set_num_threads(1)
    pair = load_pair()
    drafter = ModelDrafter(pair.draft)
    out = {}
    request = GenerationRequest(pair.tokenizer.encode(lab.DOCUMENTED_PROMPT), 64, GREEDY).fixed_length()
    out["race ×"] = race.live_race(pair.target, drafter, request, lab.DOCUMENTED_GAMMA).speedups.median

    root = Path(sys.modules["specdec_core"].__file__).parent.parent
    texts = [p["text"] for p in json.loads((root / "assets/bench_prompts.json").read_text())["prompts"]
             if p["kind"] == "open"]
    requests = [GenerationRequest(pair.tokenizer.encode(t), 64, GREEDY).fixed_length() for t in texts]
    runs = {"plain": lambda r: autoregressive_generate(pair.target, r),
            "γ 4": lambda r: speculative_generate(pair.target, drafter, r, gamma=4, trace=False),
            "γ 5": lambda r: speculative_generate(pair.target, drafter, r, gamma=5, trace=False)}
    times = {name: [] for name in runs}
    outside = {name: [] for name in runs}
    same, plain = True, None
    for rep in range(3):  # the first a warm-up
        for name, run in runs.items():
            tokens, wall, passes = [], 0.0, 0.0
            for r in requests:
                start = time.perf_counter()
                result = run(r)
                wall += time.perf_counter() - start
                drafting = sum(s for t in result.rounds for s in t.draft_pass_s)
                passes += result.prefill_s + sum(result.target_pass_s) + drafting
                tokens.append(result.tokens)
            if rep:
                times[name].append(wall / len(requests))
                outside[name].append((wall - passes) / len(requests))
            plain = tokens if name == "plain" else plain
            same = same and tokens == plain
    for name, ts in times.items():
        out[f"{name} ms"] = 1e3 * min(ts)
        out[f"{name} outside passes ms"] = 1e3 * min(outside[name])
    prompts = [r.prompt_ids for r in requests]
    batch_s = []
    for _ in range(2):
        start = time.perf_counter()
        result = batch_generate(pair.target, drafter, prompts, gamma=4, max_new_tokens=64, sampling=GREEDY,
                                eos_token_id=None)
        batch_s.append(time.perf_counter() - start)
    same = same and [r.tokens for r in result.results] == plain
    out["batch γ 4 ms"] = 1e3 * min(batch_s)

    lm = CachedLM(pair.target)
    lm.prefill(list(range(100, 164)))
    ones, verifies = [], []
    with torch.inference_mode():
        for _ in range(reps):
            for k, into in ((1, ones), (6, verifies)):
                lm.extend(list(range(5, 5 + k)))
                into.append(lm.last_pass_s)
                lm.rollback(k)
    out["one-token pass ms"] = 1e3 * statistics.median(ones)
    out["v(5)"] = statistics.median(verifies) / statistics.median(ones)
    out["greedy outputs equal plain"] = same
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, type=Path, help="a checkout's folder")
    ap.add_argument("--after", default=HERE.parent.parent.parent, type=Path, help="a checkout's folder (this one)")
    ap.add_argument("--processes", type=int, default=6, help="processes per checkout, taking turns")
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.child.write_text(json.dumps(measure(args.reps)))
        return
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    results = {name: [] for name in trees}
    start_load = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.processes):
            for name in (list(trees) if i % 2 == 0 else list(trees)[::-1]):
                out = Path(tmp) / "out.json"
                env = {**os.environ, "PYTHONPATH": str(trees[name])}
                subprocess.run([sys.executable, str(HERE), "--before", str(args.before), "--reps", str(args.reps),
                                "--child", str(out)], cwd=trees[name], env=env, check=True)
                results[name].append(json.loads(out.read_text()))
                print(f"  process {i + 1}, {name}: " + ", ".join(f"{k} {v:.3g}" if not isinstance(v, bool) else
                                                                 f"{k} {v}" for k, v in results[name][-1].items()),
                      flush=True)
    print(f"\n{args.processes} processes per checkout taking turns; median (lowest-highest) over them; load average "
          f"{start_load} at the start, {[round(x, 2) for x in os.getloadavg()]} at the end")
    for key in results["before"][0]:
        cells = []
        for name in trees:
            xs = [r[key] for r in results[name]]
            cells.append(f"{name} {all(xs)}" if isinstance(xs[0], bool) else
                         f"{name} {statistics.median(xs):.3g} ({min(xs):.3g}–{max(xs):.3g})")
        print(f"| {key} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
