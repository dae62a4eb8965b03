"""The self-drafters' part of the model card:  python -m specdec_core.tools.train.heads_card [--bench FILE]

Reads the heads' training run (runs/heads: log.jsonl, summary.json) and the bundled heads, plots the
curves (shakespeare-heads/heads_curves.png), and writes the heads' section at the end of
assets/models/README.md (after HEADS_MARK, replacing the section there): what the heads are,
which target they belong to, how they were trained, their held-out agreement per head (teacher
forced), and, given the drafter benchmark's JSON, acceptance by draft position in real generations.

    python -m specdec_core.tools.train.heads_card --eagle3 BENCH_JSON

writes (or replaces) only the EAGLE-3 drafter's part, after EAGLE3_MARK at the end of the README: its
training, its files' sizes, and the held-out benchmark with the ablation (`specdec bench-drafters
--variants`), whose JSON is also stored beside the heads (eagle3_bench.json) for the chapter.
"""
import argparse
import json
from pathlib import Path

import numpy as np

from ...analysis.self_draft import vocabulary_coverage
from ...pairs import load_pair
from ..bench.plan import load_prompts
from .card import HEADS_MARK, read_log


def plot(rows: list[dict], out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    steps = np.array([r["step"] for r in rows])
    smooth = lambda xs: np.convolve(xs, np.ones(20) / 20, mode="valid") if len(xs) >= 20 else np.array(xs)
    for key, color, label in (("medusa", "tab:orange", "Medusa (weighted soft CE, 5 heads)"),
                              ("eagle", "tab:blue", "EAGLE (smooth L1 + 0.1 CE)")):
        y = smooth([r[key] for r in rows])
        axes[0].plot(steps[len(steps) - len(y):], y / y[0], color=color, label=label)
    axes[0].set(title="training loss (20-step mean, relative to its start)", xlabel="step")
    axes[0].legend()
    evals = [r for r in rows if "val_eagle_agree" in r]
    if evals:
        s = [r["step"] for r in evals]
        axes[1].plot(s, [r["val_eagle_agree"] for r in evals], color="tab:blue", marker="o", label="EAGLE")
        for k in range(len(evals[0]["val_medusa_agree"])):
            axes[1].plot(s, [r["val_medusa_agree"][k] for r in evals], color="tab:orange", alpha=1 - 0.15 * k,
                         marker=".", label=f"Medusa head {k + 1}")
    axes[1].set(title="held-out top-1 agreement with the target", xlabel="step", ylim=(0, 1))
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=90)


EAGLE3_MARK = "<!-- EAGLE-3 drafter: written by specdec_core.tools.train.heads_card --eagle3 -->"


def eagle3_section(heads: Path, bench: dict) -> list[str]:
    """The EAGLE-3 drafter's part of the card: training, sizes, and the held-out benchmark's table."""
    config = json.loads((heads / "eagle3" / "config.json").read_text())
    t = config["training"]
    s = t["settings"]
    assets = heads.parent.parent
    size = (heads / "eagle3" / "heads.safetensors").stat().st_size
    layers = config.get("target_layers", [])  # a fusing drafter's target states, the final one last
    total = sum(f.stat().st_size for f in assets.rglob("*") if f.is_file())
    lines = [EAGLE3_MARK, "", "### EAGLE-3 drafter (`eagle3/`)", "",
             f"`{t['command']}`: from the EAGLE drafter above, {t['steps']} steps of {s['batch']} windows of "
             f"{s['window']} tokens ({s['train_windows']} training windows, features of the frozen target computed once), "
             f"{t['seconds'] / 60:.0f} min on one torch thread of the shared 2-core machine. Training-time test over "
             f"{s['ttt_steps']} draft steps (weight {s['step_decay']}^j), cross-entropy against the target's "
             f"distribution only, a draft vocabulary of the {config['draft_vocab']:,} most frequent training tokens "
             "(d2t), read out by those rows of the target's frozen LM head. "
             + (f"Its input fuses the target's states after blocks {' and '.join(map(str, layers[:-1]))} and its "
                "final state (transformers' hidden_states " + ", ".join(map(str, layers)) + "), the lower ones "
                "RMS-normalised, through one fc (EAGLE-3's fusion); the target's passes hand them over for every "
                "token they verify. " if layers else "")
             + "Held-out agreement with the target's top token, unrolled on its own drafts (draft 1, 2, 3): "
             + ", ".join(f"{a:.3f}" for a in t["val_agree_by_step"]) + " (before: "
             + ", ".join(f"{a:.3f}" for a in t["start"]["val_agree_by_step"]) + ").",
             "", f"fp16 safetensors, {size / 1e6:.1f} MB; all of assets/ {total / 1e6:.1f} MB.", ""]
    if "coverage" in bench:
        cov = bench["coverage"]
        lines += [f"Its {cov['tokens']:,} draft tokens hold {cov['mass']:.1%} of the target's probability mass and its "
                  f"top token at {cov['top']:.1%} of the {cov['positions']:,} positions of the held-out prompts "
                  "(`analysis.self_draft.vocabulary_coverage`): at T = 1 no draft is accepted with a higher chance "
                  "than that mass.", ""]
    lines += [
             f"Held-out benchmark: `{bench['command']}` ({bench['when']}, {bench['prompts']} prompts, "
             f"{bench['tokens']} tokens, γ = {bench['gamma']}, {bench['reps']} interleaved repetitions, load average "
             f"{bench['load_before'][0]:.2f} before, {bench['load_after'][0]:.2f} after). Accepted ÷ reached by draft "
             "position; the ablation's variants each had the same 150 steps from the EAGLE drafter.", ""]
    for key, rows in bench["compare"].items():
        lines += [f"{key}:", "", "| drafter | tokens / target pass | c | speedup (range) | accepted ÷ reached, drafts 1-"
                  f"{bench['gamma']} |", "|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['drafter']} | {r['tokens_per_pass']:.2f} | {r['c']:.3f} | {r['speedup']:.2f}x "
                         f"({r['low']:.2f}-{r['high']:.2f}) | " + " ".join(f"{x:.2f}" for x in r["conditional"]) + " |")
        lines.append("")
    if bench.get("offline"):
        lines += ["Held-out windows (32 windows of Macbeth and The Tempest), agreement with the target's top token "
                  "with each variant unrolled on its own drafts, draft 1, 2, 3, before → after its steps:", "",
                  "| variant | steps | before | after |", "|---|---|---|---|"]
        for name, o in bench["offline"].items():
            lines.append(f"| {name} | {o['steps']} | " + ", ".join(f"{a:.3f}" for a in o["start"]) + " | "
                         + ", ".join(f"{a:.3f}" for a in o["end"]) + " |")
        lines.append("")
    return lines


def write_eagle3(heads: Path, bench_file: Path, runs: list[Path]) -> None:
    """Store the benchmark beside the heads (without its calibration tables), with each ablation run's
    held-out agreement (its summary.json: unrolled, before and after training; the fused variant is
    judged only there), and rewrite the EAGLE-3 part of the card."""
    bench = json.loads(bench_file.read_text())
    bench["offline"] = {}
    for run in runs:
        summary = json.loads((run / "summary.json").read_text())
        bench["offline"][run.name] = {"steps": summary["steps"], "seconds": summary["seconds"],
                                                "start": summary["start"]["val_agree_by_step"],
                                                "end": summary["val_agree_by_step"]}
    for rows in bench["compare"].values():
        for r in rows:
            r.pop("calibration", None)
    pair = load_pair("shakespeare")
    texts = [pair.tokenizer.encode(p["text"]) for p in load_prompts() if p["kind"] == "open"]
    bench["coverage"] = vocabulary_coverage(pair.target, pair.self_drafters["eagle3"].d2t, texts)
    (heads / "eagle3_bench.json").write_text(json.dumps(bench, indent=1))
    readme = heads.parent / "README.md"
    card = readme.read_text().partition(EAGLE3_MARK)[0].rstrip()
    readme.write_text(card + "\n\n" + "\n".join(eagle3_section(heads, bench)) + "\n")
    print(f"wrote the EAGLE-3 part of {readme} and {heads / 'eagle3_bench.json'}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, default=Path("runs/heads"))
    ap.add_argument("--heads", type=Path, default=Path("assets/models/shakespeare-heads"))
    ap.add_argument("--bench", type=Path, default=None, help="drafter_bench.json from specdec bench-drafters")
    ap.add_argument("--eagle3", type=Path, default=None, help="drafter_bench.json of `specdec bench-drafters "
                                                              "--variants`: rewrite only the EAGLE-3 part")
    ap.add_argument("--ablation-runs", type=Path, nargs="*", default=[], help="the variants' run folders "
                                                                              "(`specdec train eagle3 --run`)")
    args = ap.parse_args(argv)
    if args.eagle3 is not None:
        write_eagle3(args.heads, args.eagle3, args.ablation_runs)
        return
    rows = read_log(args.run / "log.jsonl")
    summary = json.loads((args.run / "summary.json").read_text())
    plot(rows, args.heads / "heads_curves.png")
    pair = load_pair("shakespeare")
    medusa, eagle = pair.self_drafters["medusa"], pair.self_drafters["eagle"]
    n = lambda d: sum(p.numel() for p in d.net.parameters())
    size = sum(f.stat().st_size for f in args.heads.rglob("heads.safetensors"))
    s = summary["settings"]
    lines = [
        HEADS_MARK,
        "",
        "## Self-drafting heads for the target (`shakespeare-heads`)",
        "",
        f"Trained here on the frozen `{medusa.config.target_name}` (`specdec train heads`; this card: "
        "`python -m specdec_core.tools.train.heads_card`). They only draft for that target: its weights' sha256 "
        f"(`{medusa.config.target_sha256[:16]}…`), vocabulary ({medusa.config.vocab}) and width ({medusa.config.width}) "
        "are stored in each `config.json` and checked when the pair loads (and at every generation).",
        "",
        "| drafter | what | trained parameters | reads |",
        "|---|---|---|---|",
        f"| Medusa heads (`medusa/`) | {medusa.n_heads} residual blocks h + SiLU(W h), head k drafts the k-th token "
        f"of a round | {n(medusa):,} | the target's last feature; its frozen LM head (shared by all heads: Medusa "
        "gives each head its own) |",
        f"| EAGLE drafter (`eagle/`) | fc over (token embedding, feature) + one GPT-2 block, predicting the next "
        f"feature | {n(eagle):,} | the target's features and its frozen token embedding and LM head |",
        "",
        f"fp16 safetensors, {size / 1e6:.1f} MB in all.",
        "",
        "### Training",
        f"Target frozen; its final hidden states (after ln_f) computed once over {s['train_windows']} random windows "
        f"of {s['window']} tokens of the training plays and {s['val_windows']} of the held-out plays (Macbeth, The "
        f"Tempest). {summary['steps']} steps of {s['batch']} windows (planned {summary['planned_steps']}; "
        + ("stopped by the time budget" if summary["stopped_by_budget"] else "all of them")
        + f"), {summary['seconds'] / 60:.0f} min on the shared 2-core machine (one torch thread, under load from "
        "parallel work), AdamW, lr {lr} with warm-up and cosine decay over the steps or the budget.".format(lr=s["lr"]),
        f"- Medusa: head k learns the target's own distribution k + 1 tokens ahead (soft cross-entropy, weight "
        f"{s['head_decay']}^k as Medusa-1), on {s['medusa_positions']} random positions of each window per step (the "
        "bundled run's first 250 steps used every position; it was resumed from its checkpoint with the cheaper "
        "step, which left more of the shared machine's time to EAGLE).",
        f"- EAGLE: smooth L1 to the target's next feature (weight {s['feature_weight']}) + cross-entropy of its LM-head "
        f"readout against the target's distribution (weight {s['token_weight']}), uniform noise on the input "
        "features (EAGLE's train/main.py).",
        "",
        "![training curves](shakespeare-heads/heads_curves.png)",
        "",
        "### Held-out agreement (teacher forced)",
        "Top-1 agreement with the target's own next-token argmax on the held-out windows, each head reading the "
        "target's true feature (no earlier draft in between). Head k reads the feature of position t and guesses "
        "token t + k + 1 (the target's own LM head guesses t + 1). For comparison, the distilled draft's greedy "
        "α teacher-forced on held-out text is in the table *Measured on this CPU* above. Medusa's heads level off "
        "within 200 steps: one residual block on a frozen readout has little capacity to look further ahead.",
        "",
        "| | " + " | ".join(f"Medusa head {k + 1} (token {k + 2} ahead)" for k in range(medusa.n_heads))
        + " | EAGLE (next token) |",
        "|---|" + "---|" * (medusa.n_heads + 1),
        "| agreement | " + " | ".join(f"{a:.3f}" for a in summary["val_medusa_agree"])
        + f" | {summary['val_eagle_agree']:.3f} |",
    ]
    if args.bench is not None and args.bench.exists():
        bench = json.loads(args.bench.read_text())
        lines += ["", "### Acceptance in real generations (held-out prompts)",
                  f"From `{bench['command']}` ({bench['when']}, {bench['prompts']} prompts, {bench['tokens']} tokens, "
                  f"γ = {bench['gamma']}): the share of rounds that accepted draft i among those that drafted it.", ""]
        for key, rows_ in bench["compare"].items():
            lines += [f"{key}:", "", "| drafter | " + " | ".join(f"draft {i + 1}" for i in range(bench["gamma"]))
                      + " | tokens / target pass | AUC (top probability) |",
                      "|---|" + "---|" * (bench["gamma"] + 2)]
            for r in rows_:
                lines.append(f"| {r['drafter']} | " + " | ".join(f"{x:.2f}" for x in r["per_position"])
                             + f" | {r['tokens_per_pass']:.2f} | {r['auc_top']:.3f} |")
            lines.append("")
    readme = args.heads.parent / "README.md"
    card = readme.read_text().partition(HEADS_MARK)[0].rstrip() if readme.exists() else ""
    eagle3 = readme.read_text().partition(EAGLE3_MARK) if readme.exists() else ("", "", "")
    readme.write_text(card + "\n\n" + "\n".join(lines) + "\n" + ("\n" + "".join(eagle3[1:]) if eagle3[1] else ""))
    print(f"wrote the heads' section of {readme} and {args.heads / 'heads_curves.png'}")


if __name__ == "__main__":
    main()
