"""c = one draft step / one target one-token pass on the bundled pair, the lean pass of a git revision
against today's, interleaved in one process (docs/benchmarks.md, "Where a round's time goes").

Each contestant is the cost profile's own isolated pass (`pass_costs.pass_cost`: one pass after 64 cached
tokens, the median of 3 after a warm-up) of the draft or the target through CachedLM, with
the core's passes as they are now or as they were at --before; `stats.contest` runs them interleaved, and c is
taken repetition by repetition (draft / target of the same revision), median and spread. Run:

    python scripts/draft_step_cost.py [--before HEAD~1] [--reps 60]

With --runs N: instead, whole generations before against now (greedy, 64 new tokens, the held-out
prompts, plain runs of the target and of the draft and speculative runs at --gamma), N interleaved
repetitions, decoding time per repetition; c also the way plain runs give it (the draft's decoding
time per token over the target's, and the same of their one-token passes).
"""
import argparse
import importlib
import io
import json
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import torch

from specdec_core import GREEDY, GenerationRequest, ModelDrafter, autoregressive_generate, speculative_generate
from specdec_core.analysis.pass_costs import pass_cost
from specdec_core.analysis.stats import contest, decode_seconds
from specdec_core.model import cached_lm as lm
from specdec_core.pairs import load_pair

ROOT = Path(__file__).resolve().parent.parent


def model_pass_at(rev: str):
    """The core's `model_pass` as it was at `rev`: that revision's specdec_core copied and imported as a
    package of its own (specdec_at_<rev>), so both revisions run in one process, each with its own
    compiled passes (their build named by their source)."""
    name = "specdec_at_" + re.sub(r"\W", "_", rev)
    dest = Path(tempfile.mkdtemp())
    archive = subprocess.run(["git", "archive", rev, "specdec_core"], cwd=ROOT, check=True, capture_output=True).stdout
    tarfile.open(fileobj=io.BytesIO(archive)).extractall(dest, filter="data")
    (dest / "specdec_core").rename(dest / name)
    for py in (dest / name).rglob("*.py"):
        py.write_text(py.read_text(encoding="utf-8").replace("specdec_core", name), encoding="utf-8")
    sys.path.insert(0, str(dest))
    for module in (f"{name}.model.passes", f"{name}.passes"):  # the model room, or the modules before it
        try:
            return importlib.import_module(module).model_pass
        except ModuleNotFoundError:
            continue
    raise SystemExit(f"no model_pass at {rev}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="HEAD~1", help="the git revision whose passes are 'before'")
    ap.add_argument("--reps", type=int, default=60)
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--runs", type=int, default=0, help="whole generations instead, this many repetitions")
    ap.add_argument("--gamma", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    pair = load_pair("shakespeare", device="cpu")
    now, before = lm.model_pass, model_pass_at(args.before)
    if args.runs:
        return generations(pair, now, before, args)

    def cost(model, pass_of):
        def run():
            lm.model_pass = pass_of
            try:
                return pass_cost(model, 1, args.context, repeats=3, warmup=1)
            finally:
                lm.model_pass = now
        return run

    runs = {(role, rev): cost(getattr(pair, role), pass_of) for role in ("draft", "target")
            for rev, pass_of in (("before", before), ("now", now))}
    done = contest(runs, args.reps, warm_up=True)
    print(f"one-token passes after {args.context} cached tokens, one thread, {done.repeats} interleaved "
          f"repetitions (the passes at {args.before} = before); median (spread)")
    for name in runs:
        print(f"  {name[0]:6s} {name[1]:6s} {done.measured(name, lambda s: 1e3 * s).text('ms', 3)}")
    for rev in ("before", "now"):
        c = done.ratios(("draft", rev), ("target", rev), float)
        print(f"  c {rev:6s} {c.text('', 4)}")
    step = done.ratios(("draft", "now"), ("draft", "before"), float)
    print(f"  draft step now / before {step.text('×', 3)}")
    target = done.ratios(("target", "now"), ("target", "before"), float)
    print(f"  target pass now / before {target.text('×', 3)}")


def generations(pair, now, before, args) -> None:
    prompts = [pair.tokenizer.encode(p["text"]) for p in
               json.loads((ROOT / "assets/bench_prompts.json").read_text())["prompts"] if p["kind"] == "open"]
    drafter = ModelDrafter(pair.draft)

    def run(pass_of, gamma, model=pair.target):
        def go():
            lm.model_pass = pass_of
            try:
                out = []
                for ids in prompts:
                    request = GenerationRequest(ids, 64, GREEDY).fixed_length()
                    if gamma:
                        out.append(speculative_generate(pair.target, drafter, request, gamma=gamma, trace=False))
                    else:
                        out.append(autoregressive_generate(model, request))
                return out
            finally:
                lm.model_pass = now
        return go

    kinds = (("plain", 0, pair.target), ("draft plain", 0, pair.draft), (f"gamma={args.gamma}", args.gamma, None))
    runs = {(kind, rev): run(pass_of, g, model) for kind, g, model in kinds
            for rev, pass_of in (("before", before), ("now", now))}
    done = contest(runs, args.runs, warm_up=True)
    seconds = lambda rs: sum(decode_seconds(r) for r in rs) / len(rs)
    print(f"greedy, 64 new tokens, {len(prompts)} held-out prompts a repetition, {done.repeats} interleaved "
          f"repetitions (the passes at {args.before} = before); decoding ms per 64 tokens, median (spread)")
    for name in runs:
        print(f"  {name[0]:8s} {name[1]:6s} {done.measured(name, seconds).text(' ms', 1, 1e3)}")
    for kind in ("plain", "draft plain", f"gamma={args.gamma}"):
        print(f"  {kind}: before / now {done.ratios((kind, 'before'), (kind, 'now'), seconds).text('×', 3)}")
    # c the way plain runs give it: the draft's decoding time per token over the target's, repetition by
    # repetition; and from the runs' own one-token passes (the median pass of each run, averaged)
    pass_s = lambda rs: statistics.fmean(statistics.median(r.target_pass_s) for r in rs)
    for rev in ("before", "now"):
        print(f"  c from plain runs, {rev}: decoding {done.ratios(('draft plain', rev), ('plain', rev), seconds).text('', 4)}; "
              f"their passes {done.ratios(('draft plain', rev), ('plain', rev), pass_s).text('', 4)}")
    for rev in ("before", "now"):
        print(f"  speedup over plain, {rev}: "
              f"{done.ratios(('plain', rev), (f'gamma={args.gamma}', rev), seconds).text('×', 2)}")
    for kind in ("plain", "draft plain", f"gamma={args.gamma}"):  # the outputs: the same before and now, run for run
        pairs = zip(done.results[kind, "before"], done.results[kind, "now"])
        same = all(a.tokens == b.tokens for rb, rn in pairs for a, b in zip(rb, rn))
        print(f"  {kind}: every output the same before and now: {same}")
    plain = [r.tokens for r in done.results["plain", "now"][0]]
    spec = [r.tokens for r in done.results[f"gamma={args.gamma}", "now"][0]]
    print(f"  speculative outputs equal to plain greedy's: {plain == spec}")


if __name__ == "__main__":
    main()
