"""Two builds of the compiled pass (specdec_core/model/gpt2_pass.cpp) against each other: the source at a
git revision and the working tree's, each built with kernel.FLAGS and timed in processes of its own,
the builds taking turns process by process. (Two builds in one process hold two copies of the target's
63 MB of packed weights, and both then time passes in a slower regime than a run ever sees.)

    python scripts/bench/pass_ab.py --before HEAD [--processes 4] [--reps 25] [--rows 1,2,4,5,6,7,8,9,13]

Each process: the bundled pair packed by its build, 64 cached tokens, then --reps repetitions of one
target pass over each k rows (logits of every row, as a verify pass) and twenty draft one-token passes;
per k the median over the repetitions. Printed per build: the one-token pass of every process, then
v(k - 1) = pass over k / one-token pass, the median over the processes (lowest-highest), and the draft
pass of every process. One torch thread. A benchmark that prints figures, not a test.
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def measure(source: str, reps: int, ks: list[int]) -> dict:
    """One process's figures for the build of `source` (seconds)."""
    import torch

    from specdec_core import load_pair
    from specdec_core.model import kernel

    torch.set_num_threads(1)
    tag = hashlib.sha256(Path(source).read_bytes() + " ".join(kernel.FLAGS).encode()).hexdigest()[:12]
    compiled = kernel.build(f"pass_ab_{tag}", Path(source), kernel.FLAGS)
    pair = load_pair()

    def prepared(model, context: int = 64):
        weights = kernel.PackedGPT2(model, compiled)
        cache = torch.zeros(model.config.n_layer, 1, 256, 2 * model.config.n_embd)
        kernel.pass_rows(weights, list(range(10, 10 + context)), list(range(context)), [0] * context,
                         list(range(context)), None, cache, [context - 1])
        return weights, cache

    def one_pass(prepared_model, k: int, first: int = 64) -> float:
        weights, cache = prepared_model
        positions = list(range(first, first + k))
        start = time.perf_counter()
        kernel.pass_rows(weights, list(range(5, 5 + k)), positions, [0] * k, positions, None, cache, list(range(k)))
        return time.perf_counter() - start

    target, draft = prepared(pair.target), prepared(pair.draft)
    passes = {k: [] for k in ks}
    drafts = []
    for _ in range(reps):
        for k in ks:
            passes[k].append(one_pass(target, k))
        drafts.append(statistics.median(one_pass(draft, 1, 64 + j % 2) for j in range(20)))
    return {"passes": {k: statistics.median(v) for k, v in passes.items()}, "draft": statistics.median(drafts)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="HEAD", help="the git revision to compare the working tree's source with")
    ap.add_argument("--processes", type=int, default=4, help="processes per build, taking turns")
    ap.add_argument("--reps", type=int, default=25)
    ap.add_argument("--rows", default="1,2,4,5,6,7,8,9,13")
    ap.add_argument("--child", nargs=2, metavar=("SOURCE", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    ks = [int(k) for k in args.rows.split(",")]
    if 1 not in ks:
        ks = [1] + ks
    if args.child:
        Path(args.child[1]).write_text(json.dumps(measure(args.child[0], args.reps, ks)))
        return
    source = "specdec_core/model/gpt2_pass.cpp"
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp) / "gpt2_pass_before.cpp"
        before.write_bytes(subprocess.run(["git", "show", f"{args.before}:{source}"], cwd=ROOT, check=True,
                                          capture_output=True).stdout)
        builds = {args.before: str(before), "working tree": str(ROOT / source)}
        results = {name: [] for name in builds}
        load = [round(x, 2) for x in os.getloadavg()]
        for i in range(args.processes):
            for name in (list(builds) if i % 2 == 0 else list(builds)[::-1]):
                out = Path(tmp) / "out.json"
                subprocess.run([sys.executable, __file__, "--rows", ",".join(map(str, ks)), "--reps", str(args.reps),
                                "--child", builds[name], str(out)], cwd=ROOT, check=True)
                results[name].append(json.loads(out.read_text()))
    print(f"one target pass over k rows after 64 cached tokens; {args.processes} processes per build taking turns, "
          f"each the median of {args.reps} repetitions; load average {load} at the start, "
          f"{[round(x, 2) for x in os.getloadavg()]} at the end")
    for name, runs in results.items():
        ones = [r["passes"]["1"] for r in runs]
        cells = []
        for k in ks[1:]:
            v = [r["passes"][str(k)] / r["passes"]["1"] for r in runs]
            cells.append(f"v({k - 1}) {statistics.median(v):.2f} ({min(v):.2f}–{max(v):.2f})")
        print(f"{name}: one-token pass " + ", ".join(f"{1e3 * t:.2f}" for t in ones) + " ms; " + "; ".join(cells)
              + "; draft pass " + ", ".join(f"{1e6 * r['draft']:.0f}" for r in runs) + " µs")


if __name__ == "__main__":
    main()
