"""Benchmarks: our core against plain decoding and against Hugging Face assisted generation.

    python -m specdec_core bench [--quick] [--pair shakespeare ...] [--out DIR]

On the fixed held-out prompts of assets/bench_prompts.json, in ONE process, with every configuration
interleaved (each repetition visits prompts and configurations in a fresh shuffled order, so a slow
moment of the machine hits all of them alike) and the median of the repetitions reported:

  - plain greedy and plain sampling with our core (`autoregressive_generate`);
  - speculative greedy and sampling for every gamma, with the model drafter and the n-gram drafter;
  - transformers `generate()` plain, and with `assistant_model=` (greedy), once per constant
    `num_assistant_tokens = gamma` and once with the library's default (dynamic) setting.

Each row gets wall time, tokens/s, target passes per token, measured alpha, the speedup end to end
and for the decoding phase alone (the prompt's prefill left out, as the cost model leaves it out),
the theory's predicted speedup E / (gamma c + v(gamma)) from the measured alpha and the c and v of
the row's own passes (and, for comparison, from an isolated `measure.cost_profile`), and the peak
memory of the run. Output goes to --out: bench.md (tables and the targets of issue 6 with PASS /
MISS), bench.csv (aggregated rows), runs.csv (every run) and bench.png.
Speedups are median over prompts of the per-prompt ratio to plain decoding of the same kind.
"""
import argparse
import copy
import csv
import json
import math
import os
import platform
import random
import re
import resource
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from .. import theory
from ..drafters import NgramDrafter
from ..analysis.measure import CostProfile, cost_profile
from ..pairs import PAIRS, PairUnavailable, load_pair
from ..sampler import autoregressive_generate, speculative_generate
from ..sampling import GREEDY, SamplingConfig

FORWARD_ENV = "SPECDEC_TRANSFORMERS_FORWARD"  # see specdec_core.lm
PROMPTS_FILE = Path(__file__).resolve().parent.parent / "assets" / "bench_prompts.json"
SAMPLING = SamplingConfig(temperature=1.0)  # sampling rows: the model's own distribution, no truncation
TARGETS = {  # issue 6, for the bundled pair, greedy, 64 new tokens, median over prompts
    "vs_hf": 1.15, "of_prediction": 0.9, "fewer_passes": 2.5, "wall": 1.3, "wall_stretch": 1.5, "trace": 0.05}


@dataclass(frozen=True)
class Config:
    """One thing to time. method: "plain" | "spec" (our core) | "hf" | "hf-assisted" (transformers)."""
    method: str
    decoding: str = "greedy"  # "greedy" | "sampling"
    drafter: str = ""  # "model" | "ngram" for "spec"; the assistant schedule for "hf-assisted"
    gamma: int = 0  # drafts per round (HF: constant num_assistant_tokens; 0 where it does not apply)
    trace: bool = True  # our sampler's trace flag (True is the default callers get)
    forward: str = "core"  # our rows: "core" (lm.CachedLM's own GPT-2 pass) or "transformers" (model forward)

    @property
    def label(self) -> str:
        if self.method == "plain":
            return f"plain {self.decoding}" + self.forward_tag
        if self.method == "hf":
            return "hf generate (plain greedy)"
        if self.method == "hf-assisted":
            return f"hf assisted, {self.drafter}" + (f" gamma={self.gamma}" if self.gamma else "")
        return (f"spec {self.drafter} {self.decoding} gamma={self.gamma}" + ("" if self.trace else " (trace off)")
                + self.forward_tag)

    @property
    def forward_tag(self) -> str:
        return " [transformers forward]" if self.forward == "transformers" else ""


@dataclass
class Settings:
    pairs: list[str] = field(default_factory=lambda: ["shakespeare"])
    gammas: list[int] = field(default_factory=lambda: list(range(1, 9)))
    max_new_tokens: int = 64  # the setting
    reps: int = 5  # repetitions per (prompt, config); the median is reported
    prompts: int | None = None  # the first N prompts of each kind ratio kept (None: all)
    hf: bool = True  # include transformers' generate()
    sampling: bool = True  # include the sampling rows
    trace_reps: int = 6  # repetitions of the trace on/off comparison at the best gamma
    threads: int = 1  # torch threads; 1: on a shared 2-core machine two OpenMP threads made passes
    # up to 8x slower whenever anything else ran, and small models gain little from a second one
    quick: bool = False
    profile: bool = False  # also write a cProfile of speculative greedy decoding at the best gamma
    device: str = "cpu"  # "cpu", "cuda", ... or "auto" (load_pair's choice); peak memory is host RSS
    out: Path = Path("bench-out")


def quick_settings(**over) -> Settings:
    """A CI-sized run: two prompts (one open, the repetitive one), few gammas, short outputs."""
    s = Settings(gammas=[1, 2, 4], max_new_tokens=32, reps=2, prompts=1, trace_reps=2, quick=True)
    for k, v in over.items():
        setattr(s, k, v)
    return s


# --- prompts and memory -----------------------------------------------------------------------------

def load_prompts(limit: int | None = None) -> list[dict]:
    """The fixed benchmark prompts; `limit` keeps the first N open prompts (the repetitive ones stay)."""
    prompts = json.loads(PROMPTS_FILE.read_text(encoding="utf-8"))["prompts"]
    open_ = [p for p in prompts if p["kind"] == "open"]
    rest = [p for p in prompts if p["kind"] != "open"]
    return (open_ if limit is None else open_[:limit]) + rest


def _status_kib(key: str) -> int | None:
    try:
        m = re.search(rf"^{key}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
        return int(m.group(1)) if m else None
    except OSError:
        return None


class PeakMemory:
    """Peak resident memory of one run above the resident memory before it, in MiB. Linux: reset the
    high-water mark (VmHWM) by writing 5 to /proc/self/clear_refs, run, read VmHWM. Elsewhere NaN
    (resource.getrusage's maxrss cannot be reset, so it only gives the process-wide peak)."""
    method = "VmHWM after /proc/self/clear_refs=5, minus VmRSS before the run"

    def __init__(self):
        try:
            Path("/proc/self/clear_refs").write_text("5")
            self.ok = _status_kib("VmHWM") is not None
        except OSError:
            self.ok = False

    def __enter__(self):
        if self.ok:
            Path("/proc/self/clear_refs").write_text("5")
            self.before = _status_kib("VmRSS")
        return self

    def __exit__(self, *exc):
        self.mib = (_status_kib("VmHWM") - self.before) / 1024 if self.ok else float("nan")
        return False


def process_peak_mib() -> float:
    """resource.getrusage maxrss of this process (KiB on Linux, bytes on macOS), in MiB."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 1024


# --- one run ----------------------------------------------------------------------------------------

class _PassCounter:
    """Counts forward calls of a model while installed (for transformers' generate, which does not
    report them); removed right after, so our own runs never pay for the hook."""

    def __init__(self, model):
        self.n = 0
        self.handle = model.register_forward_pre_hook(self._count)

    def _count(self, module, args):
        self.n += 1

    def remove(self):
        self.handle.remove()


def _assistant_config(draft, cfg: Config):
    """The assistant's generation config for one HF run (the model's own config is put back after)."""
    gc_ = copy.deepcopy(draft.generation_config)
    if cfg.drafter == "constant":
        gc_.num_assistant_tokens = cfg.gamma
        gc_.num_assistant_tokens_schedule = "constant"
        gc_.assistant_confidence_threshold = 0.0  # 0 switches the early stop off: exactly gamma drafts
    elif cfg.drafter == "heuristic":  # transformers 4.x's default: +2 after a full accept, -1 otherwise
        gc_.num_assistant_tokens = 5
        gc_.num_assistant_tokens_schedule = "heuristic_transient"
        gc_.assistant_confidence_threshold = 0.0
    return gc_  # "default": untouched (5.x: up to 20 drafts, a round stops when confidence < 0.4)


def _hf_run(pair, cfg: Config, ids: list[int], n: int) -> dict:
    x = torch.tensor([ids], device=pair.target.device)
    eos = pair.target.config.eos_token_id
    kwargs = dict(attention_mask=torch.ones_like(x), max_new_tokens=n, min_new_tokens=n, do_sample=False,
                  pad_token_id=eos if isinstance(eos, int) else 0)
    saved = pair.draft.generation_config
    if cfg.method == "hf-assisted":
        kwargs["assistant_model"] = pair.draft
        pair.draft.generation_config = _assistant_config(pair.draft, cfg)
    target_calls, draft_calls = _PassCounter(pair.target), _PassCounter(pair.draft)
    try:
        start = time.perf_counter()
        with torch.inference_mode():
            out = pair.target.generate(x, **kwargs)
        seconds = time.perf_counter() - start
    finally:
        target_calls.remove()
        draft_calls.remove()
        pair.draft.generation_config = saved
    tokens = out[0, len(ids):].tolist()
    # HF's first target call covers the prompt together with the first round; ours prefills apart
    # and does not count it. Both figures therefore count decoding rounds (plain: one per token).
    nan = float("nan")
    return dict(seconds=seconds, tokens=tokens, target_passes=target_calls.n, draft_passes=draft_calls.n,
                accepted=None, judged=None, prefill_s=nan, target_s=nan, draft_s=nan,
                pass_s=nan, draft_pass_s=nan, draft_prefill_s=nan)


def _our_run(pair, cfg: Config, ids: list[int], n: int, seed: int) -> dict:
    sampling = GREEDY if cfg.decoding == "greedy" else SAMPLING
    os.environ[FORWARD_ENV] = "1" if cfg.forward == "transformers" else "0"  # read when a CachedLM is made
    try:
        start = time.perf_counter()
        if cfg.method == "plain":
            res = autoregressive_generate(pair.target, ids, n, sampling, seed=seed, eos_token_id=None)
        else:
            drafter = pair.draft if cfg.drafter == "model" else NgramDrafter()
            res = speculative_generate(pair.target, drafter, ids, gamma=cfg.gamma, max_new_tokens=n,
                                       sampling=sampling, seed=seed, eos_token_id=None, trace=cfg.trace)
        seconds = time.perf_counter() - start
    finally:
        os.environ.pop(FORWARD_ENV, None)
    # Judged drafts: the accepted ones plus the one rejected (a round stops at its first rejection).
    # accepted / judged is the per-draft acceptance rate alpha of the theory's i.i.d. model.
    judged = sum(r.n_accepted + (r.next_kind == "corrective") for r in res.rounds)
    # The cost of each kind of pass as it ran here, for the prediction from in-run costs: a target
    # pass over gamma + 1 positions (full rounds only; plain decoding: one position), and a draft
    # pass over one new token (the run's first draft pass also reads the prompt: kept apart).
    full_rounds = [r.target_pass_s for r in res.rounds if len(r.draft_tokens) == cfg.gamma]
    draft_passes = [s for r in res.rounds for s in r.draft_pass_s]
    return dict(seconds=seconds, tokens=res.tokens, target_passes=res.target_passes,
                draft_passes=res.draft_passes, accepted=res.accepted if res.rounds else None,
                judged=judged if res.rounds else None, prefill_s=res.prefill_s,
                target_s=sum(res.target_pass_s), draft_s=sum(draft_passes),
                pass_s=_mean(full_rounds if res.rounds else res.target_pass_s),
                draft_pass_s=_mean(draft_passes[1:]), draft_prefill_s=draft_passes[0] if draft_passes else 0.0)


def run_one(pair, cfg: Config, ids: list[int], n: int, seed: int, memory: PeakMemory) -> dict:
    """Time one generation of n new tokens; returns the raw measurements.

    No gc.collect() before a run: the app never forces one, and a forced collection made the run
    after it slower (speculative greedy gamma 5: 143 -> 152 ms; plain greedy 250 -> 256 ms)."""
    with memory:
        row = _hf_run(pair, cfg, ids, n) if cfg.method.startswith("hf") else _our_run(pair, cfg, ids, n, seed)
    row["peak_mib"] = memory.mib
    return row


# --- the plan ---------------------------------------------------------------------------------------

def configs(s: Settings) -> list[Config]:
    out = [Config("plain", "greedy")]
    decodings = ["greedy", "sampling"] if s.sampling else ["greedy"]
    if s.sampling:
        out.append(Config("plain", "sampling"))
    for decoding in decodings:
        for drafter in ("model", "ngram"):
            out += [Config("spec", decoding, drafter, g) for g in s.gammas]
    if s.hf:
        # Our core on transformers' own forward: the same algorithm with the same per-pass costs as
        # the HF rows, so the comparison below can be read apples to apples.
        out.append(Config("plain", "greedy", forward="transformers"))
        out += [Config("spec", "greedy", "model", g, forward="transformers") for g in s.gammas]
        out.append(Config("hf"))
        out += [Config("hf-assisted", drafter="constant", gamma=g) for g in s.gammas]
        out += [Config("hf-assisted", drafter="default"), Config("hf-assisted", drafter="heuristic")]
    return out


def _mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def _median(xs):
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return statistics.median(xs) if xs else float("nan")


def measure_pair(pair, s: Settings, log=print) -> dict:
    """Every configuration on every prompt, interleaved, s.reps times; then the trace comparison."""
    prompts = load_prompts(s.prompts)
    window = pair.context_length - s.max_new_tokens
    ids = {p["name"]: pair.tokenizer.encode(p["text"])[-window:] for p in prompts}
    plan = configs(s)
    memory = PeakMemory()

    log(f"[{pair.name}] cost profile (c, v) ...")
    forwards = ["core", "transformers"] if s.hf else ["core"]
    # Pass costs at the context a generation typically has: the median prompt plus half the new tokens.
    context = int(statistics.median(len(x) for x in ids.values())) + s.max_new_tokens // 2
    costs = {f: [_cost_profile(pair, s, f, context)] for f in forwards}

    log(f"[{pair.name}] warm-up ...")
    first = prompts[0]["name"]
    for cfg in plan:
        run_one(pair, cfg, ids[first], min(8, s.max_new_tokens), 0, memory)

    runs = []
    total = s.reps * len(prompts) * len(plan)
    t0 = time.perf_counter()
    for rep in range(s.reps):
        order = [(p, c) for p in prompts for c in plan]
        random.Random(rep).shuffle(order)
        for prompt, cfg in order:
            seed = 1000 * rep + prompts.index(prompt)  # the same seed for every config of a (rep, prompt)
            row = run_one(pair, cfg, ids[prompt["name"]], s.max_new_tokens, seed, memory)
            runs.append({"pair": pair.name, "rep": rep, "prompt": prompt["name"], "kind": prompt["kind"],
                         "config": cfg, **row})
        for f in forwards:  # c and v measured again after every repetition, under the same load
            costs[f].append(_cost_profile(pair, s, f, context))
        log(f"[{pair.name}] repetition {rep + 1}/{s.reps} done ({len(runs)}/{total} runs, "
            f"{time.perf_counter() - t0:.0f} s)")
    # Each field's median over the profiles: one profile taken while something else ran cannot skew v.
    cost = {f: CostProfile(statistics.median(c.target_s for c in cs), statistics.median(c.draft_s for c in cs),
                           {k: statistics.median(c.verify_s[k] for c in cs) for k in cs[0].verify_s})
            for f, cs in costs.items()}

    rows = aggregate(runs, plan, cost, s)
    best = best_gamma(rows)
    trace = trace_overhead(pair, prompts, ids, best, s, memory, log) if best else {}
    return {"pair": pair, "runs": runs, "rows": rows, "cost": cost, "costs": costs, "context": context, "best_gamma": best,
            "trace": trace, "prompts": prompts, "prompt_tokens": {k: len(v) for k, v in ids.items()}}


def _cost_profile(pair, s: Settings, forward: str, context: int = 64):
    os.environ[FORWARD_ENV] = "1" if forward == "transformers" else "0"
    try:
        return cost_profile(pair.target, pair.draft, ks=range(1, max(s.gammas) + 2), context=context,
                            repeats=15 if s.quick else 30)
    finally:
        os.environ.pop(FORWARD_ENV, None)


def baseline_of(cfg: Config) -> Config:
    """What a row's speedup is measured against: plain decoding of the same kind and forward; for
    transformers' assisted generation, transformers' own plain generate(); for that, our plain greedy."""
    if cfg.method == "hf-assisted":
        return Config("hf")
    if cfg.method == "hf":
        return Config("plain", "greedy")
    return Config("plain", cfg.decoding, forward=cfg.forward)


def trace_overhead(pair, prompts, ids, gamma: int, s: Settings, memory, log) -> dict:
    """trace=True against trace=False at the best gamma, model drafter, alternating run by run:
    the median over prompts and repetitions of t(trace on) / t(trace off) - 1, per decoding."""
    log(f"[{pair.name}] trace on/off at gamma={gamma} ...")
    out = {}
    for decoding in (["greedy", "sampling"] if s.sampling else ["greedy"]):
        ratios = []
        for rep in range(s.trace_reps):
            for i, p in enumerate(prompts):
                seed = 7 + 1000 * rep + i
                on, off = Config("spec", decoding, "model", gamma, True), Config("spec", decoding, "model", gamma, False)
                pair_order = (on, off) if (rep + i) % 2 == 0 else (off, on)
                t = {c.trace: run_one(pair, c, ids[p["name"]], s.max_new_tokens, seed, memory)["seconds"]
                     for c in pair_order}
                ratios.append(t[True] / t[False])
        out[decoding] = statistics.median(ratios) - 1
    return out


def in_run_fit(cfg: Config, runs: list[dict], base_runs: list[dict]) -> dict:
    """The cost model against one prompt's runs of a row and of its plain baseline.

    decode_speedup: the ratio of median times without the target's prefill of the prompt (both
    sides pay it alike and the model leaves it out; the drafter's own pass over the prompt stays in).
    c and v: this row's draft passes (one new token) and target passes over gamma + 1 positions as
    they ran, over the baseline's single-position pass; predicted: E(alpha, gamma) / (gamma c + v)
    with this prompt's alpha; ratio: decode_speedup / predicted. NaN where it does not apply."""
    nan = float("nan")
    decode = lambda rs: _median(r["seconds"] - r["prefill_s"] for r in rs)
    out = {"decode_speedup": decode(base_runs) / decode(runs), "c": nan, "v": nan, "predicted": nan, "ratio": nan}
    judged = sum(r["judged"] or 0 for r in runs)
    if cfg.method != "spec" or not judged:
        return out
    t1 = _median(r["pass_s"] for r in base_runs)
    alpha = min(1.0, sum(r["accepted"] for r in runs) / judged)
    out["v"] = _median(r["pass_s"] for r in runs) / t1
    out["c"] = _median(r["draft_pass_s"] for r in runs) / t1 if cfg.drafter == "model" else 0.0
    out["predicted"] = theory.speedup(alpha, cfg.gamma, out["c"], out["v"])
    out["ratio"] = out["decode_speedup"] / out["predicted"]
    return out


def aggregate(runs: list[dict], plan: list[Config], costs: dict, s: Settings) -> list[dict]:
    """One row per (config, prompt group): medians over repetitions, then over prompts."""
    by = {}
    for r in runs:
        by.setdefault((r["config"], r["prompt"]), []).append(r)
    prompts = sorted({(r["prompt"], r["kind"]) for r in runs})
    greedy_tokens = {p: by[(Config("plain", "greedy"), p)][0]["tokens"] for p, _ in prompts}
    rows = []
    for group in ("open", "repetitive"):
        names = [p for p, kind in prompts if kind == group]
        if not names:
            continue
        for cfg in plan:
            per_prompt = {p: _median(r["seconds"] for r in by[(cfg, p)]) for p in names}
            base = {p: _median(r["seconds"] for r in by[(baseline_of(cfg), p)]) for p in names}
            cost = costs["transformers" if cfg.forward == "transformers" or cfg.method.startswith("hf") else "core"]
            all_runs = [r for p in names for r in by[(cfg, p)]]
            n_tokens = [len(r["tokens"]) for r in all_runs]
            accepted = [r["accepted"] for r in all_runs if r["accepted"] is not None]
            judged = sum(r["judged"] for r in all_runs if r["judged"] is not None)
            alpha = sum(accepted) / judged if judged else float("nan")
            c = cost.c if cfg.drafter == "model" or cfg.method == "hf-assisted" else 0.0
            if cfg.method == "spec" and not math.isnan(alpha):
                predicted = theory.speedup(min(alpha, 1.0), cfg.gamma, c, cost.v)
            else:
                predicted = float("nan")
            speedup = _median(base[p] / per_prompt[p] for p in names)
            fit = [in_run_fit(cfg, by[(cfg, p)], by[(baseline_of(cfg), p)]) for p in names]
            decode_speedup, c_run, v_run, predicted_run, of_predicted_run = (
                _median(f[key] for f in fit) for key in ("decode_speedup", "c", "v", "predicted", "ratio"))
            matches = (all(r["tokens"] == greedy_tokens[r["prompt"]] for r in all_runs)
                       if cfg.decoding == "greedy" else None)
            seconds = _median(per_prompt.values())
            rows.append({
                "group": group, "config": cfg.label, "method": cfg.method, "forward": cfg.forward, "decoding": cfg.decoding,
                "drafter": cfg.drafter, "gamma": cfg.gamma, "prompts": len(names),
                "seconds": seconds, "ms": 1e3 * seconds, "tokens_per_s": _median(n_tokens) / seconds if seconds else float("nan"),
                "speedup": speedup, "decode_speedup": decode_speedup,
                "predicted_run": predicted_run, "of_predicted_run": of_predicted_run,
                "predicted": predicted,
                "of_predicted": speedup / predicted if predicted == predicted else float("nan"),
                "target_passes_per_token": sum(r["target_passes"] for r in all_runs) / sum(n_tokens),
                "draft_passes_per_token": sum(r["draft_passes"] for r in all_runs) / sum(n_tokens),
                "alpha": alpha, "c_run": c_run, "v_run": v_run,
                "c": c if cfg.method in ("spec", "hf-assisted") else float("nan"),
                "v": cost.v(cfg.gamma) if cfg.gamma else float("nan"),
                "peak_mib": max((r["peak_mib"] for r in all_runs), default=float("nan")),
                "matches_greedy": matches,
            })
    return rows


def _rows(rows, group, **match):
    return [r for r in rows if r["group"] == group and all(r[k] == v for k, v in match.items())]


def best_gamma(rows) -> int | None:
    """The gamma of our fastest greedy model-drafter row on the open prompts."""
    cand = _rows(rows, "open", method="spec", drafter="model", decoding="greedy", forward="core")
    return max(cand, key=lambda r: r["speedup"])["gamma"] if cand else None


def time_breakdown(result: dict) -> list[dict]:
    """Where our wall time goes, per run then median over the open prompts' runs: the prompt's
    prefill, target passes, draft passes, and the rest (sampler, drafter logic, trace, tensor glue)."""
    best, out = result["best_gamma"], []
    if best is None:
        return out
    wanted = [Config("plain", "greedy"), Config("spec", "greedy", "model", best),
              Config("spec", "sampling", "model", best), Config("spec", "greedy", "ngram", best),
              Config("plain", "greedy", forward="transformers"),
              Config("spec", "greedy", "model", best, forward="transformers")]
    for cfg in wanted:
        runs = [r for r in result["runs"] if r["config"] == cfg and r["kind"] == "open"]
        if not runs:
            continue
        share = lambda key: _median(r[key] / r["seconds"] for r in runs)
        rest = _median((r["seconds"] - r["prefill_s"] - r["target_s"] - r["draft_s"]) / r["seconds"] for r in runs)
        rounds = _median(r["target_passes"] for r in runs)
        out.append({"config": cfg.label, "ms": 1e3 * _median(r["seconds"] for r in runs),
                    "prefill": share("prefill_s"), "target passes": share("target_s"),
                    "draft passes": share("draft_s"), "rest": rest,
                    "rest per round (ms)": 1e3 * _median((r["seconds"] - r["prefill_s"] - r["target_s"] - r["draft_s"])
                                                         / r["target_passes"] for r in runs),
                    "rounds": rounds})
    return out


def profile_text(pair, result: dict, s: Settings, top: int = 30) -> str:
    """cProfile of our speculative greedy decoding at the best gamma over the open prompts."""
    import cProfile
    import io
    import pstats
    ids = [pair.tokenizer.encode(p["text"]) for p in result["prompts"] if p["kind"] == "open"]
    prof = cProfile.Profile()
    prof.enable()
    for x in ids:
        speculative_generate(pair.target, pair.draft, x, gamma=result["best_gamma"], max_new_tokens=s.max_new_tokens,
                             sampling=GREEDY, eos_token_id=None)
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    return buf.getvalue()


# --- the targets ----------------------------------------------------------------------------

def check_targets(result: dict) -> list[dict]:
    """Issue 6's targets as (name, value, goal, met) rows, from one pair's results."""
    rows, best = result["rows"], result["best_gamma"]
    if best is None:
        return []
    ours = _rows(rows, "open", method="spec", drafter="model", decoding="greedy", gamma=best, forward="core")[0]
    out = []

    def add(name, value, goal, met, note=""):
        out.append({"target": name, "value": value, "goal": goal, "met": met, "note": note})

    hf = _rows(rows, "open", method="hf-assisted")
    if hf:
        hf_best = min(hf, key=lambda r: r["seconds"])
        ratio = hf_best["seconds"] / ours["seconds"]
        add("best-gamma speculative vs HF assisted at its best", f"{ratio:.2f}x", f">= {TARGETS['vs_hf']}x",
            ratio >= TARGETS["vs_hf"], f"ours gamma={best} {ours['seconds'] * 1e3:.0f} ms; HF best: "
            f"{hf_best['config']} {hf_best['seconds'] * 1e3:.0f} ms")
        same = _rows(rows, "open", method="spec", drafter="model", decoding="greedy", forward="transformers")
        if same:
            ours_t = min(same, key=lambda r: r["seconds"])
            add("(for reading it) the same, ours on transformers' forward", f"{hf_best['seconds'] / ours_t['seconds']:.2f}x",
                "info", None, f"{ours_t['config']} {ours_t['seconds'] * 1e3:.0f} ms: the sampler alone, same passes as HF")
    ratio = ours["of_predicted_run"]
    add("measured / hardware-aware predicted speedup (decoding phase; c, v as the runs' passes cost)",
        f"{ratio:.2f}", f">= {TARGETS['of_prediction']}", ratio >= TARGETS["of_prediction"],
        f"measured {ours['decode_speedup']:.2f}x, predicted {ours['predicted_run']:.2f}x "
        f"(alpha={ours['alpha']:.2f}, c={ours['c_run']:.3f}, v={ours['v_run']:.2f})")
    add("(for reading it) end to end, prompt prefill included, / prediction from the isolated cost profile",
        f"{ours['of_predicted']:.2f}", "info", None,
        f"measured {ours['speedup']:.2f}x, predicted {ours['predicted']:.2f}x "
        f"(alpha={ours['alpha']:.2f}, c={ours['c']:.3f}, v={ours['v']:.2f})")
    fewer = 1 / ours["target_passes_per_token"]
    add("fewer target passes at best gamma", f"{fewer:.2f}x", f">= {TARGETS['fewer_passes']}x",
        fewer >= TARGETS["fewer_passes"], f"{ours['target_passes_per_token']:.3f} passes per token")
    add("wall clock vs plain greedy", f"{ours['speedup']:.2f}x",
        f">= {TARGETS['wall']}x (stretch {TARGETS['wall_stretch']}x)", ours["speedup"] >= TARGETS["wall"],
        "stretch met" if ours["speedup"] >= TARGETS["wall_stretch"] else "stretch not met")

    def best_time(group, drafter):
        cand = _rows(rows, group, method="spec", drafter=drafter, decoding="greedy")
        return min(cand, key=lambda r: r["seconds"]) if cand else None
    rep_ngram, rep_model = best_time("repetitive", "ngram"), best_time("repetitive", "model")
    open_ngram, open_model = best_time("open", "ngram"), best_time("open", "model")
    if rep_ngram and rep_model:
        add("n-gram beats the model drafter on the self-repeating prompt",
            f"{rep_model['seconds'] / rep_ngram['seconds']:.2f}x", "> 1x", rep_ngram["seconds"] < rep_model["seconds"],
            f"n-gram best {rep_ngram['config']} {rep_ngram['seconds'] * 1e3:.0f} ms, model best "
            f"{rep_model['config']} {rep_model['seconds'] * 1e3:.0f} ms")
    if open_ngram and open_model:
        add("... and not on open prompts", f"{open_model['seconds'] / open_ngram['seconds']:.2f}x", "< 1x",
            open_ngram["seconds"] > open_model["seconds"],
            f"n-gram best {open_ngram['config']} {open_ngram['seconds'] * 1e3:.0f} ms, model best "
            f"{open_model['config']} {open_model['seconds'] * 1e3:.0f} ms")
    for decoding, overhead in result["trace"].items():
        add(f"tracing overhead ({decoding}, gamma={best})", f"{100 * overhead:+.1f}%",
            f"<= {100 * TARGETS['trace']:.0f}%", overhead <= TARGETS["trace"])
    return out


# --- output -----------------------------------------------------------------------------------------

COLUMNS = [("config", "config", "{}"), ("ms", "ms", "{:.1f}"), ("tok/s", "tokens_per_s", "{:.0f}"),
           ("speedup", "speedup", "{:.2f}x"), ("decoding speedup", "decode_speedup", "{:.2f}x"),
           ("predicted", "predicted_run", "{:.2f}x"), ("meas/pred", "of_predicted_run", "{:.2f}"),
           ("alpha", "alpha", "{:.2f}"), ("c", "c_run", "{:.3f}"), ("v", "v_run", "{:.2f}"),
           ("predicted (profile)", "predicted", "{:.2f}x"), ("speedup / pred. (profile)", "of_predicted", "{:.2f}"),
           ("target passes/tok", "target_passes_per_token", "{:.3f}"),
           ("draft passes/tok", "draft_passes_per_token", "{:.2f}"), ("peak MiB", "peak_mib", "{:.2f}"),
           ("= greedy", "matches_greedy", "{}")]


def _verdict(met) -> str:
    return "info" if met is None else "PASS" if met else "MISS"


def _fmt(fmt, value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "yes" if value else "NO"
    return fmt.format(value)


def markdown_table(rows) -> str:
    lines = ["| " + " | ".join(h for h, _, _ in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(f, r[k]) for _, k, f in COLUMNS) + " |")
    return "\n".join(lines)


def environment(s: Settings) -> dict:
    import transformers
    return {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
            "threads": torch.get_num_threads(), "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(), "reps": s.reps, "max_new_tokens": s.max_new_tokens,
            "gammas": s.gammas, "quick": s.quick}


def report_markdown(results: list[dict], skipped: dict, s: Settings, command: str, seconds: float) -> str:
    env = environment(s)
    md = [f"# Speculative decoding benchmark", "",
          f"Command: `{command}`  ", f"Environment: {', '.join(f'{k}={v}' for k, v in env.items())}  ",
          f"Wall time of the benchmark: {seconds:.0f} s; process peak RSS {process_peak_mib():.0f} MiB "
          "(resource.getrusage maxrss).  ",
          f"Per-row memory: {PeakMemory.method} (the most over the row's runs), MiB.  ",
          "Sampling rows: temperature 1.0; greedy rows: temperature 0. Every run makes exactly "
          f"{s.max_new_tokens} new tokens (our core: eos_token_id=None; transformers: min_new_tokens="
          "max_new_tokens). Speedup: median over prompts of the per-prompt ratio baseline time / row time; "
          "the baseline is our plain decoding of the same kind (greedy or sampling) on the same forward, "
          "for transformers' assisted rows its own plain generate(), for that one our plain greedy. "
          "'core' forward: specdec_core.lm's GPT-2 pass; '[transformers forward]': the model's own forward "
          "(SPECDEC_TRANSFORMERS_FORWARD=1), as transformers' generate() uses it. "
          "Decoding speedup: the same ratio without the target's prefill of the prompt (both sides pay it "
          "alike; the drafter's own pass over the prompt stays in). "
          "Predicted: E(alpha, gamma) / (gamma c + v(gamma)) per prompt, from that prompt's measured alpha "
          "(accepted / judged drafts) and the row's own c and v on it: its draft passes (one new token) and "
          "its target passes over gamma + 1 positions, timed inside its runs, each over the single-position "
          "pass of its plain baseline (n-gram: c = 0); meas/pred = decoding speedup / predicted per prompt; "
          "the columns give medians over prompts (alpha: accepted / judged over all the row's runs). "
          "Predicted (profile): the same formula with c and v from the isolated cost profile below; "
          "speedup / pred. (profile) compares it with the end-to-end speedup.", ""]
    for name, why in skipped.items():
        md += [f"## {name}: skipped", "", why, ""]
    for res in results:
        pair = res["pair"]
        md += [f"## {pair.name}: {pair.target_name} ({pair.target_params / 1e6:.1f} M) drafted by "
               f"{pair.draft_name} ({pair.draft_params / 1e6:.2f} M)", ""]
        for forward, cost in res["cost"].items():
            cs = [p.c for p in res["costs"][forward]]
            md.append(f"Cost profile, {forward} forward, at {res['context']} cached tokens (median of {len(cs)} "
                      f"measure.cost_profile runs, one before "
                      f"the runs and one after each repetition): target pass {cost.target_s * 1e3:.2f} ms, draft pass "
                      f"{cost.draft_s * 1e3:.3f} ms, c = {cost.c:.3f} (single profiles: {min(cs):.3f} to "
                      f"{max(cs):.3f}); v(gamma) = "
                      + ", ".join(f"{g}: {cost.v(g):.2f}" for g in s.gammas) + ".  ")
        md += ["Prompt tokens: " + ", ".join(f"{k} {v}" for k, v in res["prompt_tokens"].items())
               + f". Best gamma (model drafter, greedy, open prompts): {res['best_gamma']}.", ""]
        targets = check_targets(res)
        if targets:
            md += ["### Targets (issue 6)", "", "| target | value | goal | met | detail |", "|---|---|---|---|---|"]
            md += [f"| {t['target']} | {t['value']} | {t['goal']} | {_verdict(t['met'])} | {t['note']} |"
                   for t in targets]
            md.append("")
        breakdown = time_breakdown(res)
        if breakdown:
            md += ["### Where the time goes (open prompts, median shares of each run's wall time)", "",
                   "| config | ms | prefill | target passes | draft passes | rest | rest per round (ms) | rounds |",
                   "|---|---|---|---|---|---|---|---|"]
            md += [f"| {b['config']} | {b['ms']:.1f} | {100 * b['prefill']:.1f}% | {100 * b['target passes']:.1f}% | "
                   f"{100 * b['draft passes']:.1f}% | {100 * b['rest']:.1f}% | {b['rest per round (ms)']:.3f} | "
                   f"{b['rounds']:.0f} |" for b in breakdown]
            md.append("")
        for group, title in (("open", "Open prompts"), ("repetitive", "The self-repeating prompt")):
            rows = [r for r in res["rows"] if r["group"] == group]
            if rows:
                md += [f"### {title} ({rows[0]['prompts']} prompt{'s' if rows[0]['prompts'] > 1 else ''})", "",
                       markdown_table(rows), ""]
    return "\n".join(md) + "\n"


def write_csv(path: Path, rows: list[dict]) -> None:
    if not rows:
        path.write_text("")
        return
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def write_chart(results: list[dict], out: Path) -> Path | None:
    """Per pair and prompt group: tokens/s against gamma for every method (top), and our measured
    speedup against the theory's prediction (bottom). PNG via matplotlib, else plotly HTML."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return _write_plotly(results, out)
    groups = [(res, g) for res in results for g in ("open", "repetitive") if _rows(res["rows"], g)]
    if not groups:
        return None
    fig, axes = plt.subplots(2, len(groups), figsize=(6.5 * len(groups), 9), squeeze=False)
    for col, (res, group) in enumerate(groups):
        rows = res["rows"]
        top, bottom = axes[0][col], axes[1][col]
        for series, style in _series(rows, group, "tokens_per_s"):
            if series["points"]:
                top.plot(*zip(*series["points"]), style, label=series["label"])
        for label, match, color in (("ours, plain greedy", dict(method="plain", decoding="greedy", forward="core"), "black"),
                                    ("transformers plain generate()", dict(method="hf"), "grey"),
                                    ("HF assisted, default (dynamic)", dict(method="hf-assisted", drafter="default"), "tab:red")):
            for r in _rows(rows, group, **match):
                top.axhline(r["tokens_per_s"], ls=":", color=color, label=label)
        top.set(title=f"{res['pair'].name}: {group} prompts", xlabel="gamma (drafts per round)",
                ylabel="tokens / s (greedy unless noted)")
        lines = (_series(rows, group, "speedup")[:3] + _series(rows, group, "decode_speedup")
                 + _series(rows, group, "predicted_run") + _series(rows, group, "predicted"))
        for series, style in lines:
            if series["points"]:
                bottom.plot(*zip(*series["points"]), style, label=series["label"])
        bottom.axhline(1.0, color="black", lw=0.6)
        bottom.set(xlabel="gamma (drafts per round)", ylabel="speedup over our plain decoding")
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    path = out / "bench.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _series(rows, group, key):
    """(label, points) per method over gamma; for the keys in `single`, only our greedy model-drafter rows."""
    def pts(**m):
        return sorted((r["gamma"], r[key]) for r in _rows(rows, group, **m) if r["gamma"])
    ours = dict(method="spec", forward="core")
    greedy_model = dict(drafter="model", decoding="greedy", **ours)
    single = {"decode_speedup": ("ours, model drafter, greedy, decoding phase only", "o-."),
              "predicted_run": ("predicted from the runs' own c and v (model drafter, greedy)", "o--"),
              "predicted": ("predicted from the isolated cost profile (model drafter, greedy)", "o:")}
    if key in single:
        label, style = single[key]
        return [({"label": label, "points": pts(**greedy_model)}, style)]
    return [({"label": "ours, model drafter, greedy", "points": pts(**greedy_model)}, "o-"),
            ({"label": "ours, model drafter, sampling", "points": pts(drafter="model", decoding="sampling", **ours)}, "s-"),
            ({"label": "ours, n-gram drafter, greedy", "points": pts(drafter="ngram", decoding="greedy", **ours)}, "^-"),
            ({"label": "ours on transformers' forward", "points": pts(method="spec", forward="transformers")}, "d-"),
            ({"label": "HF assisted, constant gamma", "points": pts(method="hf-assisted", drafter="constant")}, "x-")]


def _write_plotly(results, out: Path) -> Path | None:
    try:
        import plotly.graph_objects as go
    except ImportError:
        return None
    fig = go.Figure()
    for res in results:
        for group in ("open", "repetitive"):
            for series, _ in _series(res["rows"], group, "tokens_per_s"):
                if series["points"]:
                    xs, ys = zip(*series["points"])
                    fig.add_scatter(x=xs, y=ys, name=f"{res['pair'].name} {group}: {series['label']}")
    fig.update_layout(xaxis_title="gamma", yaxis_title="tokens / s")
    path = out / "bench.html"
    fig.write_html(path)
    return path


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


def _parse_gammas(text: str) -> list[int]:
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
        s.gammas = _parse_gammas(args.gammas)
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
        print(f"== {res['pair'].name}: targets of issue 6 ==")
        for t in check_targets(res):
            print(f"  {_verdict(t['met'])}  {t['target']}: {t['value']} (goal {t['goal']}) {t['note']}")
    print("\nwrote " + ", ".join(str(f) for f in out["files"]))
    return 0 if out["results"] else 2
