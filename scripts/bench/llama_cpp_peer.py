"""llama.cpp as a benchmark peer: the bundled pair in llama.cpp and in our core, side by side.

    python scripts/bench/llama_cpp_peer.py [--reps 3] [--gammas 4,5,6] [--tokens 64] [--work /tmp/llama-peer]
    python scripts/bench/llama_cpp_peer.py --v-gamma 1-8 [--reps 5]   (v(gamma) of both engines' target passes)

What a CPU user would try instead of us, built and run as they would:
  1. llama.cpp from the source distribution of `llama-cpp-python` on PyPI (it vendors llama.cpp with
     its `convert_hf_to_gguf.py` and the `speculative` example): `pip download --no-binary :all:`, then
     CMake, CPU only, `-DGGML_NATIVE=ON`; plain runs through `llama-completion` (`llama-cli` now needs
     the server build), speculative runs through `llama-speculative`. Skipped, with the reason, when
     cmake or a C++ compiler is missing; an existing build under --work is reused.
  2. The bundled target and distilled draft converted to GGUF, f32 and f16, by its own converter.
  3. Greedy, --tokens new tokens, on the open prompts of assets/bench_prompts.json (held out); every
     llama.cpp text is checked against ours (the same tokens, so the same text).
  4. Timed interleaved with ours: every repetition visits the prompts, and within a prompt the
     contestants, in a fresh shuffled order. Times are the work only: llama.cpp's own counters
     (prompt + generation; the process start and the model load left out), our generate() call
     (prefill + generation). Medians over prompts of each prompt's median, with the spread.
Never part of `make test`: it downloads, compiles and runs for minutes.
"""
import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SDIST = "llama-cpp-python==0.3.36"  # pinned: its vendored llama.cpp is the one these flags were checked on
TARGETS = ("llama-completion", "llama-speculative", "llama-bench")
MODELS = ROOT / "assets" / "models"


# ---------------------------------------------------------------- pure helpers (tests/core/test_llama_peer.py)

def parse_completion(log: str) -> dict:
    """llama-completion's perf lines -> {'prompt_ms', 'eval_ms', 'eval_runs', 'ms'} (ms: prompt + generation)."""
    prompt = re.search(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens", log)
    gen = re.search(r"\beval time =\s*([\d.]+) ms /\s*(\d+) runs", log)
    if not prompt or not gen:
        raise ValueError("no llama_perf_context_print lines in llama-completion's output")
    p, e = float(prompt.group(1)), float(gen.group(1))
    return {"prompt_ms": p, "eval_ms": e, "eval_runs": int(gen.group(2)), "ms": p + e}


def parse_speculative(log: str) -> dict:
    """llama-speculative's summary -> {'enc_ms', 'dec_ms', 'n_predict', 'n_drafted', 'n_accept'}."""
    enc = re.search(r"encoded\s+(\d+) tokens in\s+([\d.]+) seconds", log)
    dec = re.search(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds", log)
    counts = {k: re.search(rf"{k}\s*=\s*(\d+)", log) for k in ("n_drafted", "n_accept")}
    if not enc or not dec or not all(counts.values()):
        raise ValueError("no encoded/decoded/n_accept summary in llama-speculative's output")
    return {"enc_ms": 1e3 * float(enc.group(2)), "dec_ms": 1e3 * float(dec.group(2)), "n_predict": int(dec.group(1)),
            **{k: int(m.group(1)) for k, m in counts.items()}}


def speculative_ms(run: dict, tokens: int) -> float:
    """A speculative run's time for `tokens` new tokens: llama-speculative stops after the round that
    passes its -n, so it may make a few more; its decoding time is scaled to `tokens` (stated in the table)."""
    return run["enc_ms"] + run["dec_ms"] * tokens / max(run["n_predict"], 1)


def spread(values: list[float]) -> tuple[float, float, float]:
    """(median, min, max)."""
    return statistics.median(values), min(values), max(values)


def summarize(times: dict[str, dict[str, list[float]]]) -> dict[str, tuple[float, float, float]]:
    """contestant -> prompt -> run times  =>  contestant -> (median over prompts of each prompt's median,
    lowest prompt median, highest prompt median)."""
    return {name: spread([statistics.median(v) for v in per_prompt.values()]) for name, per_prompt in times.items()}


def table(summary: dict[str, tuple[float, float, float]], rows: list[tuple[str, str, str | None]], tokens: int) -> str:
    """Markdown: one row per (label, contestant, its plain baseline or None): median ms per `tokens`
    new tokens with the spread over prompts, and the speedup over the baseline's median."""
    out = [f"| engine, precision, decoding | ms per {tokens} tokens: median (range over prompts) | speedup over its own plain |",
           "|---|---|---|"]
    for label, name, base in rows:
        if name not in summary:
            continue
        med, lo, hi = summary[name]
        speed = f"{summary[base][0] / med:.2f}×" if base and base in summary else "1 (baseline)" if base is None else "-"
        out.append(f"| {label} | {med:.0f} ({lo:.0f}–{hi:.0f}) | {speed} |")
    return "\n".join(out)


def record(summary, rows, tokens: int, prompts: int, reps: int, texts_equal: dict, runs: int) -> dict:
    """The table as data, with when, where and how it was measured (what the race chapter shows)."""
    import platform
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    out = []
    for label, name, base in rows:
        if name in summary:
            med, lo, hi = summary[name]
            out.append({"contestant": label, "ms": round(med, 1), "low": round(lo, 1), "high": round(hi, 1),
                        "speedup_over_own_plain": round(summary[base][0] / med, 3) if base in summary else 1.0,
                        "texts_equal_to_ours": f"{texts_equal[name]} of {runs}"})
    return {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpu": cpu, "threads": 1, "tokens": tokens,
            "prompts": prompts, "repetitions": reps, "llama_cpp": SDIST, "rows": out}


# ---------------------------------------------------------------- build and convert

def missing_tools() -> list[str]:
    """What the build needs and this machine lacks."""
    need = {"cmake": ["cmake"], "a C++ compiler": ["c++", "g++", "clang++"], "a C compiler": ["cc", "gcc", "clang"]}
    return [what for what, names in need.items() if not any(shutil.which(n) for n in names)]


def source_dir(work: Path) -> Path:
    """llama.cpp's source, from the llama-cpp-python sdist (downloaded once into work)."""
    found = sorted(work.glob("llama_cpp_python-*/vendor/llama.cpp"))
    if found:
        return found[-1]
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", SDIST, "-d", str(work)],
                   check=True)
    with tarfile.open(next(work.glob("llama_cpp_python-*.tar.gz"))) as tar:
        tar.extractall(work, filter="data")
    return sorted(work.glob("llama_cpp_python-*/vendor/llama.cpp"))[-1]


def build(src: Path, jobs: int = 1) -> Path:
    """CPU-only release build of the two tools (reused when present); returns the bin folder."""
    bin_dir = src / "build" / "bin"
    if all((bin_dir / t).exists() for t in TARGETS):
        return bin_dir
    subprocess.run(["cmake", "-B", "build", "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON", "-DGGML_OPENMP=ON",
                    "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_SERVER=OFF",
                    "-DBUILD_SHARED_LIBS=OFF"], cwd=src, check=True)
    subprocess.run(["nice", "-n", "15", "cmake", "--build", "build", f"-j{jobs}", "--target", *TARGETS], cwd=src, check=True)
    return bin_dir


# The converter's patch: it names a BPE pre-tokenizer by hashing how the tokenizer splits a test string,
# and our tokenizer (trained here) has a hash it does not know. Ours is byte-level BPE with GPT-2's own
# split regex (tokenizer.json: pre_tokenizer ByteLevel, use_regex true, add_prefix_space false), which
# is exactly llama.cpp's "gpt-2" pre-tokenizer (LLAMA_VOCAB_PRE_TYPE_GPT2), so naming it is exact, and
# the text check below confirms it on every prompt.
CONVERT = """
import sys
sys.path.insert(0, {src!r}); sys.path.insert(1, {src!r} + "/gguf-py")
import conversion.base as base
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "gpt-2"
import convert_hf_to_gguf
sys.argv = ["convert_hf_to_gguf.py", {model!r}, "--outfile", {out!r}, "--outtype", {outtype!r}]
convert_hf_to_gguf.main()
"""


def convert(src: Path, model_dir: Path, out: Path, outtype: str) -> Path:
    """GGUF of a bundled model. The converter's GPT-2 class reads the context length from `n_ctx`, which
    transformers' config.json calls n_positions: a temporary copy gets both."""
    if out.exists():
        return out
    with tempfile.TemporaryDirectory() as tmp:
        for f in model_dir.iterdir():
            shutil.copy(f, tmp)
        cfg = json.loads((model_dir / "config.json").read_text())
        cfg["n_ctx"] = cfg["n_positions"]
        (Path(tmp) / "config.json").write_text(json.dumps(cfg))
        code = CONVERT.format(src=str(src), model=tmp, out=str(out), outtype=outtype)
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return out


# ---------------------------------------------------------------- runs

# Greedy, every asked token made, our window, no BOS (our tokenizer adds none), one thread. (The
# speculative example takes neither --no-warmup, its warm-up falls before its clock anyway, nor
# --no-escape: the held-out prompts hold no backslash for it to read as an escape.)
COMMON = ["--temp", "0", "--ignore-eos", "-c", "256", "--override-kv", "tokenizer.ggml.add_bos_token=bool:false",
          "-t", "1", "-tb", "1"]


def llama_plain(bin_dir: Path, model: Path, prompt: str, tokens: int) -> tuple[str, dict]:
    return _run([str(bin_dir / "llama-completion"), "-m", str(model), "-p", prompt, "-n", str(tokens),
                 "-no-cnv", "--no-display-prompt", "--simple-io", "--no-warmup", "--no-escape", *COMMON], parse_completion)


def _run(cmd: list[str], parse, tries: int = 3) -> tuple[str, dict]:
    """Run a llama.cpp tool; its log is written by a thread of its own, and under load a run now and
    then exits before the summary lines are out: such a run is made again (at most `tries` times)."""
    for attempt in range(tries):
        r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=True)
        try:
            return r.stdout, parse(r.stderr)
        except ValueError:
            if attempt == tries - 1:
                raise ValueError(f"{Path(cmd[0]).name}: no summary in its output, {tries} tries; its last lines: "
                                 + r.stderr[-800:]) from None
    raise AssertionError("unreachable")


def llama_speculative(bin_dir: Path, target: Path, draft: Path, prompt: str, tokens: int, k: int) -> tuple[str, dict]:
    out, perf = _run([str(bin_dir / "llama-speculative"), "-m", str(target), "-md", str(draft), "-p", prompt,
                      "-n", str(tokens - 1), "--spec-draft-n-max", str(k), "--spec-draft-n-min", "0", "-td", "1", "-tbd", "1",
                      *COMMON], parse_speculative)
    return (out.split(prompt, 1)[-1] if prompt in out else out), perf


def llama_pass_ms(bin_dir: Path, model: Path, ks, depth: int, reps: int) -> dict[int, float]:
    """llama.cpp's pass over k new tokens after `depth` cached ones, for each k: llama-bench's prompt
    test of k tokens (one llama_decode of a batch of k) at that depth, one thread; mean ms of `reps`."""
    out = subprocess.run([str(bin_dir / "llama-bench"), "-m", str(model), "-p", ",".join(str(k) for k in ks), "-n", "0",
                          "-d", str(depth), "-t", "1", "-r", str(reps), "-o", "json"],
                         capture_output=True, text=True, check=True, stdin=subprocess.DEVNULL).stdout
    return {int(row["n_prompt"]): row["avg_ns"] / 1e6 for row in json.loads(out)}


def verify_costs(bin_dir: Path, gguf: dict, target, ks, reps: int, depth: int = 64) -> int:
    """v(gamma) = a pass over gamma + 1 positions / a pass over 1, after `depth` cached tokens: llama.cpp's
    f32 and f16 targets (llama-bench) beside ours (pass_costs.pass_sweep), alternating engine by engine."""
    from specdec_core.analysis.pass_costs import pass_sweep
    sizes = sorted({1, *(g + 1 for g in ks)})
    ms = {"llama.cpp f32": [], "llama.cpp f16": [], "ours fp32": []}
    for _ in range(reps):
        for t in ("f32", "f16"):
            ms[f"llama.cpp {t}"].append(llama_pass_ms(bin_dir, gguf[("target", t)], sizes, depth, 3))
        ms["ours fp32"].append({k: 1e3 * m.median for k, m in pass_sweep(target, sizes, depth, repeats=3).items()})
    print(f"one target pass over gamma + 1 positions after {depth} cached tokens, one thread, {reps} rounds of "
          "each engine in turn; ms of a one-token pass, then v(gamma), medians over the rounds")
    print("| engine | one-token pass | " + " | ".join(f"v({g})" for g in ks) + " |")
    print("|---|---|" + "---|" * len(list(ks)))
    for name, runs in ms.items():
        one = statistics.median(r[1] for r in runs)
        v = [statistics.median(r[g + 1] / r[1] for r in runs) for g in ks]
        print(f"| {name} | {one:.2f} ms | " + " | ".join(f"{x:.2f}" for x in v) + " |")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--gammas", default="4,5,6", help="draft lengths tried by both (llama.cpp's --spec-draft-n-max K)")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--prompts", type=int, default=None, help="the first N open prompts (default all 8)")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "llama-peer")
    ap.add_argument("--jobs", type=int, default=1, help="parallel compile jobs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--v-gamma", default=None, help="e.g. 1-8: v(gamma) of both engines' target passes instead")
    ap.add_argument("--save", type=Path, default=None,
                    help="also write the table as JSON (default: result.json under --work); the race chapter shows "
                         "assets/llama_cpp_peer.json")
    args = ap.parse_args()
    lacking = missing_tools()
    if lacking:
        print(f"llama.cpp peer skipped: this machine lacks {', '.join(lacking)} (needed to build llama.cpp)")
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    src = source_dir(args.work)
    bin_dir = build(src, args.jobs)
    gguf = {(role, t): convert(src, MODELS / f"shakespeare-{role}", args.work / f"{role}-{t}.gguf", t)
            for role in ("target", "draft") for t in ("f32", "f16")}

    import torch  # after the build: the build does not need torch

    sys.path.insert(0, str(ROOT))
    from specdec_core import GREEDY, GenerationRequest, ModelDrafter, autoregressive_generate, load_pair, speculative_generate
    torch.set_num_threads(1)
    pairs = {"fp32": load_pair("shakespeare", device="cpu")}
    pairs["bf16"] = pairs["fp32"].at_precision("bf16")
    tok = pairs["fp32"].tokenizer
    prompts = [p for p in json.loads((ROOT / "assets/bench_prompts.json").read_text())["prompts"] if p["kind"] == "open"]
    prompts = prompts[:args.prompts] if args.prompts else prompts
    gammas = [int(g) for g in args.gammas.split(",")]
    n = args.tokens
    if args.v_gamma:
        lo, hi = (int(x) for x in args.v_gamma.split("-"))
        return verify_costs(bin_dir, gguf, pairs["fp32"].target, range(lo, hi + 1), args.reps)

    def ours(prec: str, gamma: int | None, ids: list[int]) -> tuple[list[int], float]:
        pair, request = pairs[prec], GenerationRequest(ids, n, GREEDY).fixed_length()
        start = time.perf_counter()
        if gamma is None:
            res = autoregressive_generate(pair.target, request)
        else:
            res = speculative_generate(pair.target, ModelDrafter(pair.draft), request, gamma=gamma, trace=False)
        return res.tokens, 1e3 * (time.perf_counter() - start)

    contestants = {}  # name -> callable(prompt dict) -> (text or tokens, ms, extra)
    for prec in ("fp32", "bf16"):
        for g in [None] + gammas:
            contestants[f"ours {prec} " + ("plain" if g is None else f"gamma={g}")] = ("ours", prec, g)
    for t in ("f32", "f16"):
        for g in [None] + gammas:
            contestants[f"llama.cpp {t} " + ("plain" if g is None else f"K={g}")] = ("llama", t, g)

    reference = {}  # prompt -> our fp32 plain tokens and text (the text every fp32 run must give)
    for p in prompts:
        ids = tok.encode(p["text"])
        tokens, _ = ours("fp32", None, ids)
        reference[p["name"]] = (ids, tokens, tok.decode(tokens))
    times = {name: {p["name"]: [] for p in prompts} for name in contestants}
    texts_equal = {name: 0 for name in contestants}
    accept = {name: [] for name in contestants}
    rng = random.Random(args.seed)
    for rep in range(args.reps + 1):  # repetition 0 warms up every contestant and is not counted
        order = list(prompts)
        rng.shuffle(order)
        for p in order:
            names = list(contestants)
            rng.shuffle(names)
            ids, ref_tokens, ref_text = reference[p["name"]]
            for name in names:
                kind, prec, g = contestants[name]
                if kind == "ours":
                    tokens, ms = ours(prec, g, ids)
                    same = tokens == ref_tokens
                else:
                    model, draft = gguf[("target", prec)], gguf[("draft", prec)]
                    if g is None:
                        text, perf = llama_plain(bin_dir, model, p["text"], n)
                        ms = perf["ms"]
                    else:
                        text, perf = llama_speculative(bin_dir, model, draft, p["text"], n, g)
                        ms = speculative_ms(perf, n)
                        accept[name].append(perf["n_accept"] / max(perf["n_drafted"], 1))
                    same = text.startswith(ref_text)
                if rep:
                    times[name][p["name"]].append(ms)
                    texts_equal[name] += same
    summary = summarize(times)
    runs = args.reps * len(prompts)
    rows = []
    for prec, t in (("fp32", "f32"), ("bf16", "f16")):
        for engine, tag, mode in (("llama.cpp", t, "K"), ("ours", prec, "gamma")):
            base = f"{engine} {tag} plain"
            rows.append((f"{engine}, {tag}, plain", base, None))
            for g in gammas:
                rows.append((f"{engine}, {tag}, speculative {mode} = {g}", f"{engine} {tag} {mode}={g}", base))
    print(f"greedy, {n} new tokens, {len(prompts)} held-out prompts x {args.reps} repetitions (+1 warm-up), one thread, "
          f"interleaved; llama.cpp from {SDIST}'s vendored source ({bin_dir})")
    print(table(summary, rows, n))
    print()
    print("| contestant | runs whose text equals our fp32 plain text | acceptance (llama.cpp: n_accept / n_drafted) |")
    print("|---|---|---|")
    for name in contestants:
        acc = f"{statistics.median(accept[name]):.2f}" if accept[name] else ""
        print(f"| {name} | {texts_equal[name]} of {runs} | {acc} |")
    save = args.save or args.work / "result.json"
    save.write_text(json.dumps(record(summary, rows, n, len(prompts), args.reps, texts_equal, runs), indent=1) + "\n")
    best = lambda prefix: min((v[0], k) for k, v in summary.items() if k.startswith(prefix) and "plain" not in k)
    for ours_tag, peer_tag in (("ours fp32", "llama.cpp f32"), ("ours bf16", "llama.cpp f16")):
        o, p = best(ours_tag), best(peer_tag)
        print(f"best speculative: {o[1]} {o[0]:.0f} ms against {p[1]} {p[0]:.0f} ms: ours at {p[0] / o[0]:.2f}x its speed")
    o, p = summary["ours fp32 plain"][0], summary["llama.cpp f32 plain"][0]
    print(f"plain: ours fp32 {o:.0f} ms against llama.cpp f32 {p:.0f} ms: ours takes {o / p:.2f}x its time (goal <= 1.1x)")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
