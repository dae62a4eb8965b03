"""The benchmark's outputs: the markdown report, CSV files and the chart."""
import csv
import math
import os
import platform
from pathlib import Path

import torch

from .fit import check_targets, rows_of, time_breakdown, tree_rows
from .plan import Settings
from .runs import PeakMemory, process_peak_mib

COLUMNS = [("config", "config", "{}"), ("ms", "ms", "{:.1f}"), ("tok/s", "tokens_per_s", "{:.0f}"),
           ("speedup", "speedup", "{:.2f}x"), ("decoding speedup", "decode_speedup", "{:.2f}x"),
           ("predicted", "predicted_run", "{:.2f}x"), ("meas/pred", "of_predicted_run", "{:.2f}"),
           ("alpha", "alpha", "{:.2f}"), ("c", "c_run", "{:.3f}"), ("v", "v_run", "{:.2f}"),
           ("predicted (profile)", "predicted", "{:.2f}x"), ("speedup / pred. (profile)", "of_predicted", "{:.2f}"),
           ("target passes/tok", "target_passes_per_token", "{:.3f}"),
           ("mean acceptance length", "mean_acceptance_length", "{:.2f}"),
           ("draft passes/tok", "draft_passes_per_token", "{:.2f}"), ("peak MiB", "peak_mib", "{:.2f}"),
           ("= greedy", "matches_greedy", "{}")]


def verdict_word(met) -> str:
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
    md = ["# Speculative decoding benchmark", "",
          f"Command: `{command}`  ", f"Environment: {', '.join(f'{k}={v}' for k, v in env.items())}  ",
          f"Wall time of the benchmark: {seconds:.0f} s; process peak RSS {process_peak_mib():.0f} MiB "
          "(resource.getrusage maxrss).  ",
          f"Per-row memory: {PeakMemory.method} (the most over the row's runs), MiB.  ",
          "Sampling rows: temperature 1.0; greedy rows: temperature 0. Every run makes exactly "
          f"{s.max_new_tokens} new tokens (our core: eos_token_id=None; transformers: min_new_tokens="
          "max_new_tokens). Speedup: median over prompts of the per-prompt ratio baseline time / row time; "
          "the baseline is our plain decoding of the same kind (greedy or sampling) on the same forward, "
          "for transformers' assisted rows its own plain generate(), for that one our plain greedy. "
          "'core' forward: specdec_core.model's GPT-2 pass; '[transformers forward]': the model's own forward "
          "(forward='transformers'), as transformers' generate() uses it. "
          "Decoding speedup: the same ratio without the target's prefill of the prompt (both sides pay it "
          "alike; the drafter's own pass over the prompt stays in). "
          "Predicted: E(alpha, gamma) / (gamma c + v(gamma)) per prompt, from that prompt's measured alpha "
          "(accepted / judged drafts) and the row's own c and v on it: its draft pass as a round pays for it on "
          "average (the lower quartile at each position of a round, averaged: the drafter's warm-up after the "
          "target's pass included; the app's c is the warmest position alone) and its target passes over gamma + 1 "
          "positions, timed inside its runs, each over the single-position "
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
                      f"pass_costs.cost_profile runs, one before "
                      f"the runs and one after each repetition): target pass {cost.target_s * 1e3:.2f} ms, draft pass "
                      f"{cost.draft_s * 1e3:.3f} ms, c = {cost.c:.3f} (single profiles: {min(cs):.3f} to "
                      f"{max(cs):.3f}); v(gamma) = "
                      + ", ".join(f"{g}: {cost.v(g):.2f}" for g in s.gammas) + ".  ")
        md += ["Prompt tokens: " + ", ".join(f"{k} {v}" for k, v in res["prompt_tokens"].items())
               + f". Best gamma (model drafter, greedy, open prompts): {res['best_gamma']}.", ""]
        targets = check_targets(res)
        if targets:
            md += ["### Targets", "", "| target | value | goal | met | detail |", "|---|---|---|---|---|"]
            md += [f"| {t['target']} | {t['value']} | {t['goal']} | {verdict_word(t['met'])} | {t['note']} |"
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
        md += tree_markdown(res["rows"])
        for group, title in (("open", "Open prompts"), ("repetitive", "The self-repeating prompt")):
            rows = [r for r in res["rows"] if r["group"] == group]
            if rows:
                md += [f"### {title} ({rows[0]['prompts']} prompt{'s' if rows[0]['prompts'] > 1 else ''})", "",
                       markdown_table(rows), ""]
    return "\n".join(md) + "\n"


def tree_markdown(rows) -> list[str]:
    """The token-tree rows next to the chain of their depth (greedy, model drafter)."""
    md = []
    for group, title in (("open", "open prompts"), ("repetitive", "the self-repeating prompt")):
        trees = tree_rows(rows, group)
        if not trees:
            continue
        md += [f"### Token trees against the chain of the same depth ({title})", "",
               "Tokens per target pass (the runs' own counts) and wall clock; predicted: tokens per pass / "
               "(v(nodes) + c x draft passes per round) with v and c from the isolated cost profile, and with "
               "v = 1 as on an accelerator where a pass over a few dozen positions costs one pass.", "",
               "| tree | nodes (max) | nodes/round | tokens/pass | chain tokens/pass | x chain | ms | chain ms | "
               "speedup | predicted (this machine) | predicted (v = 1) | v(nodes) | = greedy |",
               "|" + "---|" * 13]
        md += [f"| {t['config']} | {t['nodes']} | {t['nodes_per_round']:.1f} | {t['tokens_per_pass']:.2f} | "
               f"{t['chain']['tokens_per_pass']:.2f} (gamma={t['gamma']}) | {t['tpp_ratio']:.2f}x | "
               f"{t['ms']:.1f} | {t['chain']['ms']:.1f} | {t['speedup']:.2f}x | {t['predicted']:.2f}x | "
               f"{t['predicted_v1']:.2f}x | "
               f"{t['v']:.2f} | {_fmt('{}', t['matches_greedy'])} |" for t in trees]
        md.append("")
    return md


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
    groups = [(res, g) for res in results for g in ("open", "repetitive") if rows_of(res["rows"], g)]
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
            for r in rows_of(rows, group, **match):
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
        return sorted((r["gamma"], r[key]) for r in rows_of(rows, group, **m) if r["gamma"])
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
