"""Timing single runs (ours and transformers' generate()) and the interleaved plan over every prompt."""
import copy
import random
import re
import resource
import statistics
import sys
import time
from pathlib import Path

import torch

from ...analysis.pass_costs import PassTimes, cost_profile, pass_seconds
from ...costs import Costs
from ...drafters import ModelDrafter, NgramDrafter
from ...model import with_forward
from ...request import GenerationRequest
from ...sampling_config import GREEDY
from ...speculative import autoregressive_generate, speculative_generate
from ...tree import tree_generate
from .fit import aggregate, best_gamma
from .plan import SAMPLING, Config, Settings, configs, load_prompts


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
                accepted=None, judged=None, nodes=None, prefill_s=nan, target_s=nan, draft_s=nan,
                pass_s=nan, draft_pass_s=nan, draft_prefill_s=nan)


def _our_run(pair, cfg: Config, ids: list[int], n: int, seed: int) -> dict:
    sampling = GREEDY if cfg.decoding == "greedy" else SAMPLING
    request = GenerationRequest(ids, n, sampling, seed).fixed_length()
    target, draft = with_forward(pair.target, cfg.forward), with_forward(pair.draft, cfg.forward)
    start = time.perf_counter()
    if cfg.method == "plain":
        res = autoregressive_generate(target, request)
    elif cfg.method == "tree":
        res = tree_generate(target, ModelDrafter(draft), request, shape=cfg.shape, node_budget=cfg.node_budget or None,
                            trace=cfg.trace)
    else:
        drafter = ModelDrafter(draft) if cfg.drafter == "model" else NgramDrafter()
        res = speculative_generate(target, drafter, request, gamma=cfg.gamma, trace=cfg.trace)
    seconds = time.perf_counter() - start
    # Judged drafts: the accepted ones plus the one rejected (a round stops at its first rejection).
    # accepted / judged is the per-draft acceptance rate alpha of the theory's i.i.d. model.
    # (Tree rows: alpha of the chain model does not apply, so no judged count.)
    judged = sum(r.n_accepted + (r.next_kind == "corrective") for r in res.rounds) if cfg.method != "tree" else 0
    # The cost of each kind of pass as it ran here, for the prediction from in-run costs, by the
    # core's one method (analysis.pass_costs.PassTimes, as the app's figures): a target pass over
    # gamma + 1 positions (full rounds; plain decoding: one position), and a draft pass as a round pays
    # for it on average, the drafter's warm-up after the target's pass included (round_draft_seconds).
    # Tree rows: a target pass over nodes + 1 positions, in the rounds that drafted every node.
    passes = PassTimes().add(res, "draft")
    full = cfg.nodes if cfg.method == "tree" else cfg.gamma
    target_k = passes.target.get(full + 1 if res.rounds else 1)
    drafted = bool(passes.draft.get("draft"))
    draft_passes = [s for r in res.rounds for s in r.draft_pass_s]
    return dict(seconds=seconds, tokens=res.tokens, target_passes=res.target_passes,
                draft_passes=res.draft_passes, accepted=res.accepted if res.rounds else None,
                judged=judged if res.rounds and cfg.method != "tree" else None, prefill_s=res.prefill_s,
                nodes=res.drafted if cfg.method == "tree" else None,
                target_s=sum(res.target_pass_s), draft_s=sum(draft_passes),
                pass_s=pass_seconds(target_k) if target_k else float("nan"),
                draft_pass_s=passes.round_draft_seconds("draft") if drafted else float("nan"),
                draft_prefill_s=draft_passes[0] if draft_passes else 0.0)


def run_one(pair, cfg: Config, ids: list[int], n: int, seed: int, memory: PeakMemory) -> dict:
    """Time one generation of n new tokens; returns the raw measurements.

    No gc.collect() before a run: the app never forces one, and a forced collection made the run
    after it slower (speculative greedy gamma 5: 143 -> 152 ms; plain greedy 250 -> 256 ms)."""
    with memory:
        row = _hf_run(pair, cfg, ids, n) if cfg.method.startswith("hf") else _our_run(pair, cfg, ids, n, seed)
    row["peak_mib"] = memory.mib
    return row


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
    cost = {f: Costs.measured(statistics.median(c.target_s for c in cs), statistics.median(c.draft_s for c in cs),
                              {k: statistics.median(c.verify_s[k] for c in cs) for k in cs[0].verify_s})
            for f, cs in costs.items()}

    rows = aggregate(runs, plan, cost, s)
    best = best_gamma(rows)
    trace = trace_overhead(pair, prompts, ids, best, s, memory, log) if best else {}
    return {"pair": pair, "runs": runs, "rows": rows, "cost": cost, "costs": costs, "context": context, "best_gamma": best,
            "trace": trace, "prompts": prompts, "prompt_tokens": {k: len(v) for k, v in ids.items()}}


def _cost_profile(pair, s: Settings, forward: str, context: int = 64):
    ks = sorted(set(range(1, max(s.gammas) + 2)) | {c.nodes + 1 for c in configs(s) if c.method == "tree"})
    return cost_profile(with_forward(pair.target, forward), with_forward(pair.draft, forward), ks=ks, context=context,
                        repeats=15 if s.quick else 30)


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


def profile_text(pair, result: dict, s: Settings, top: int = 30) -> str:
    """cProfile of our speculative greedy decoding at the best gamma over the open prompts."""
    import cProfile
    import io
    import pstats
    ids = [pair.tokenizer.encode(p["text"]) for p in result["prompts"] if p["kind"] == "open"]
    prof = cProfile.Profile()
    prof.enable()
    for x in ids:
        speculative_generate(pair.target, pair.draft, GenerationRequest(x, s.max_new_tokens, GREEDY).fixed_length(),
                             gamma=result["best_gamma"])
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    return buf.getvalue()
