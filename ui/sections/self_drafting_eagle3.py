"""Drafters That Read the Target → Go deeper: the EAGLE-3 drafter against the distilled draft and EAGLE-1, and
what each of EAGLE-3's changes bought here (the ablation), from the stored held-out benchmark
(`specdec bench-drafters --variants`, assets/models/shakespeare-heads/eagle3_bench.json), with its
command, date and load. Every comparison in words is computed from the stored figures."""
import json
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from ui.widgets import palette, tables

BENCH = Path(__file__).resolve().parents[2] / "assets" / "models" / "shakespeare-heads" / "eagle3_bench.json"
DISTILLED, EAGLE1, EAGLE3 = "distilled draft", "EAGLE drafter", "EAGLE-3 drafter"
ABLATION = [f"ablation: {v}" for v in ("eagle1", "ttt", "vocab", "vocab2048")] + [EAGLE3]  # in the order of the changes
UNFUSED = "ablation: vocab2048"  # the shipped drafter less its fusion: what the fusion bought
OFFLINE = {"eagle1": "ablation: eagle1", "ttt": "ablation: ttt", "vocab": "ablation: vocab", "vocab2048": UNFUSED,
           "fused": EAGLE3}


@st.cache_data(show_spinner=False)
def shipped_layers() -> list[int]:
    """The target states the shipped EAGLE-3 drafter fuses (its config, transformers' numbering; the last is
    the final state), or [] where it fuses none or is missing."""
    config = BENCH.parent / "eagle3" / "config.json"
    return json.loads(config.read_text()).get("target_layers", []) if config.exists() else []


def variant_name(bench: dict, label: str) -> str:
    """What one stored variant changed, in words, its sizes read from its training settings."""
    settings = bench.get("training", {}).get(label, {}).get("settings", {})
    vocab, steps = settings.get("draft_vocab", 0), settings.get("ttt_steps", 0)
    return {"ablation: eagle1": "EAGLE-1's recipe, the same extra steps (control)",
            "ablation: ttt": f"+ training-time test ({steps} steps, CE only)",
            "ablation: vocab": f"+ reduced vocabulary ({vocab:,} tokens)",
            UNFUSED: f"+ reduced vocabulary ({vocab:,} tokens), top layer only",
            EAGLE3: f"EAGLE-3 (shipped): + fusion of {len(shipped_layers())} target layers"
            }.get(label, label)


@st.cache_data(show_spinner=False)
def stored_bench(path: str) -> dict | None:
    """The stored benchmark report, or None where it is missing."""
    file = Path(path)
    return json.loads(file.read_text()) if file.exists() else None


def verdicts(rows: dict) -> list[str]:
    """EAGLE-3 against the distilled draft and EAGLE-1 at one temperature (label -> row), in words."""
    d, e1, e3 = rows[DISTILLED], rows[EAGLE1], rows[EAGLE3]
    ratio = e3["tokens_per_pass"] / d["tokens_per_pass"]
    out = [f"tokens per target pass {e3['tokens_per_pass']:.2f} against the distilled draft's {d['tokens_per_pass']:.2f}: "
           f"**{ratio:.2f}×** the distilled draft's",
           f"c {e3['c']:.3f} against the distilled draft's {d['c']:.3f}: "
           + ("cheaper" if e3["c"] <= d["c"] else f"**{e3['c'] / d['c']:.1f}×** as costly per draft"),
           f"speedup over plain decoding {e3['speedup']:.2f}× ({e3['low']:.2f}–{e3['high']:.2f}) against the distilled "
           f"draft's {d['speedup']:.2f}× ({d['low']:.2f}–{d['high']:.2f}): "
           + ("faster" if e3["speedup"] > d["speedup"] else "**slower**")]
    drop = lambda r: r["conditional"][0] - min(x for x in r["conditional"] if x == x)
    out.append(f"acceptance by position falls {drop(e3):.2f} from draft 1 to its lowest for EAGLE-3, {drop(e1):.2f} for "
               "EAGLE-1: " + ("flatter" if drop(e3) < drop(e1) else "**not flatter**"))
    if UNFUSED in rows:
        u = rows[UNFUSED]
        out.append(f"fusing {len(shipped_layers())} target layers: {e3['tokens_per_pass']:.2f} tokens per pass against "
                   f"{u['tokens_per_pass']:.2f} from the top layer alone after the same training "
                   f"({e3['tokens_per_pass'] / u['tokens_per_pass']:.2f}×)")
    return out


def show() -> None:
    """The stored comparison: verdicts, the acceptance-by-position chart, the ablation table."""
    bench = stored_bench(str(BENCH))
    if bench is None:
        st.info("No stored benchmark of the EAGLE-3 drafter in this checkout.")
        return
    st.caption(f"Stored measurement: `{bench['command']}`, {bench['when']}, {bench['prompts']} held-out prompts "
               f"(Macbeth, The Tempest), {bench['tokens']} tokens, γ = {bench['gamma']}, {bench['reps']} interleaved "
               f"repetitions, {bench['machine']}, load average {bench['load_before'][0]:.1f} before and "
               f"{bench['load_after'][0]:.1f} after (a shared machine: the speedups are noisy, the counts are not).")
    temps = list(bench["compare"])
    for t in temps:
        rows = {r["drafter"]: r for r in bench["compare"][t]}
        if all(k in rows for k in (DISTILLED, EAGLE1, EAGLE3)):
            st.markdown(f"**{'greedy' if t == 'T=0' else t.replace('T=', 'temperature ')}:** "
                        + "; ".join(verdicts(rows)) + ".")
    why(bench)
    chart(bench, temps)
    table = []
    for t in temps:
        rows = {r["drafter"]: r for r in bench["compare"][t]}
        for label in (DISTILLED, EAGLE1, *ABLATION):
            if label in rows:
                r = rows[label]
                table.append({"sampling": t, "drafter": variant_name(bench, label),
                              "tokens per target pass": round(r["tokens_per_pass"], 2), "c": round(r["c"], 3),
                              "speedup": f"{r['speedup']:.2f}× ({r['low']:.2f}–{r['high']:.2f})",
                              "accepted ÷ reached, drafts 1–5": " ".join(f"{x:.2f}" for x in r["conditional"])})
    tables.show(table, key="sd_eagle3_table")
    offline = bench.get("offline", {})
    if offline:
        st.markdown("**On held-out windows.** Agreement with the target's top token when each variant "
                    "drafts step after step on its own predicted features, before and after its training steps: "
                    + "; ".join(f"{offline_name(bench, name)}: " + " · ".join(f"{a:.1%}" for a in o["start"]) + " → "
                                + " · ".join(f"{a:.1%}" for a in o["end"]) for name, o in offline.items()) + ".")
    shipped = bench.get("training", {}).get(EAGLE3, {})
    cut = bench.get("training", {}).get("ablation: vocab", {}).get("settings", {}).get("draft_vocab", 0)
    st.caption(f"The ablation's variants all start from the bundled EAGLE drafter and get the same "
               f"{shipped.get('steps', 0)} steps on the same windows, one change each (its training command in the "
               "model card): the control continues EAGLE-1's own recipe, so the steps alone are not mistaken for a "
               "gain. The "
               f"shipped EAGLE-3 drafter drafts over {shipped.get('settings', {}).get('draft_vocab', 0):,} tokens: the "
               f"{cut:,}-token step costs less (c) but loses acceptance when sampling (the paragraph on sampling "
               "above). The last change, EAGLE-3's fusion, feeds the drafter the target's states after its blocks "
               + " and ".join(map(str, shipped_layers()[:-1])) + " beside its final one: every verify pass hands "
               "over all of them for the tokens it "
               "checks, and the drafter's fc maps them to one feature.")


def offline_name(bench: dict, name: str) -> str:
    """A variant trained and judged on held-out windows, in words."""
    return variant_name(bench, OFFLINE[name]) if name in OFFLINE else name


def chart(bench: dict, temps: list[str]) -> None:
    """Acceptance by draft position (accepted ÷ reached), EAGLE-1 against EAGLE-3, per sampling mode."""
    fig = go.Figure()
    colors = {EAGLE1: palette.color("drafted"), EAGLE3: palette.color("accepted")}
    # A colour per drafter, a pattern per series: the sampling mode is told apart by pattern, not by fading a colour
    # (a faded bar falls under 3:1 on the dark background).
    patterns = iter(["", "/", ".", "x"] * len(temps))
    for t in temps:
        rows = {r["drafter"]: r for r in bench["compare"][t]}
        for label, color in colors.items():
            if label in rows:
                y = rows[label]["conditional"]
                fig.add_bar(name=f"{label}, {t}", x=[f"draft {i + 1}" for i in range(len(y))], y=y,
                            marker_color=color, marker_pattern_shape=next(patterns),
                            text=[f"{x:.0%}" for x in y], textposition="outside")
    fig.update_layout(barmode="group", height=340, yaxis_range=[0, 1.1], yaxis_title="accepted ÷ reached",
                      title="Acceptance by draft position, held-out prompts: EAGLE-1 against EAGLE-3",
                      legend_orientation="h", legend_y=-0.2, margin=dict(t=40, b=8))
    st.plotly_chart(fig, key="sd_eagle3_positions")


def why(bench: dict) -> None:
    """Why EAGLE-3 loses here, from the stored figures: what a draft step costs, and what a reduced
    vocabulary leaves out at T = 1."""
    greedy = {r["drafter"]: r for r in bench["compare"].get("T=0", [])}
    text = []
    if all(k in greedy for k in (DISTILLED, EAGLE3, "ablation: ttt")):
        d, e3, ttt = greedy[DISTILLED], greedy[EAGLE3], greedy["ablation: ttt"]
        cut = greedy.get(UNFUSED, e3)  # the reduced vocabulary's step, before the fusion
        text.append(f"**Why it is slower.** Its draft step, a decoder layer as wide as the target's and its "
                    f"readout, costs c = {e3['c']:.3f} of a target pass; the distilled draft's step, a 128-wide "
                    f"layer, costs {d['c']:.3f}. Both run through the same compiled pass as the target, so the gap is "
                    f"the weights a step reads. The reduced vocabulary cut c from {ttt['c']:.3f} to "
                    f"{cut['c']:.3f}, but at γ = 5 a round still costs 1 + 5c = {1 + 5 * e3['c']:.2f} target passes "
                    f"against {1 + 5 * d['c']:.2f}: EAGLE-3 would need {(1 + 5 * e3['c']) / (1 + 5 * d['c']):.2f}× the "
                    "distilled draft's tokens per pass just to break even.")
    cov = bench.get("coverage")
    if cov:
        text.append(f"**Why sampling suffers.** The {cov['tokens']:,} draft tokens hold the target's top token at "
                    f"{cov['top']:.1%} of the held-out positions, but only {cov['mass']:.1%} of its probability mass: "
                    "at T = 1 a draft is accepted with a chance of at most the mass its vocabulary holds, because q is "
                    "zero elsewhere (greedy decoding only needs the top token).")
    if text:
        st.markdown("\n\n".join(text))
