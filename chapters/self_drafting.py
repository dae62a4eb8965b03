"""Chapter: Drafters That Read the Target. Medusa heads and an EAGLE-style drafter trained here on the
bundled target's own features: what they read, how they were trained with the target frozen, their first
round next to the distilled draft's, and the three drafters measured on the sidebar prompt (acceptance
by position, speedup, and how well each one's confidence predicts the target's verdict)."""
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from specdec_core import autoregressive_generate, speculative_generate
from specdec_core.analysis.self_draft import compare_drafters
from specdec_core.sampling import GREEDY
from ui.sections import self_drafting_heads
from ui.server import admission, demo, models
from ui.state import settings
from ui.widgets import charts, palette, tables

REPEATS = 3  # interleaved repetitions: every timed figure is their median
GAMMA = 5  # the Medusa heads draft at most five tokens a round (one per head)
COIN_AUC = 0.5  # the AUC of a confidence that says nothing: a coin ranks an accepted draft above a rejected one half the time

s = settings.current()
pair = models.require_pair()
ids = models.require_prompt_ids(pair)

st.header("Drafters That Read the Target")
st.markdown("The distilled draft is a second, smaller model that reads the text. **Medusa and EAGLE read the target "
            "itself**: its last hidden state, the vector its LM head turns into the next token's probabilities, "
            "already holds what the target knows, so a drafter built on it needs very little of its own.")

if not pair.self_drafters:
    st.info("This pair has no heads trained on its target (only the bundled Shakespeare pair has them). "
            + (" ".join(pair.notes) if pair.notes else "Choose the bundled pair in the sidebar."),
            icon=":material/info:")
    st.stop()

medusa, eagle = pair.self_drafters.get("medusa"), pair.self_drafters.get("eagle")
width = next(iter(pair.self_drafters.values())).config.width
heads = {d.name: d for d in (medusa, eagle) if d is not None}  # each drafter names itself
params = {name: sum(p.numel() for p in d.net.parameters()) for name, d in heads.items()}

with st.container(key="lesson-demo"):
    st.subheader("One round, three drafters")
    st.caption("Each drafter's first round of five drafts on the sidebar prompt (greedy), next to the five tokens the "
               "target itself then writes. A draft counts only if every draft before it was right.")
    truth = autoregressive_generate(pair.target, ids, GAMMA, GREEDY).tokens
    words = lambda toks: [charts.token_label(pair.tokenizer.decode([t])) for t in toks]
    first = {"target (what it writes)": (words(truth), [None] * len(truth))}
    for label, d in {"distilled draft": pair.draft, **heads}.items():
        r = speculative_generate(pair.target, d, ids, gamma=GAMMA, max_new_tokens=GAMMA + 1, sampling=GREEDY, max_rounds=1)
        rnd = r.rounds[0] if r.rounds else None
        drafts = rnd.draft_tokens if rnd else []
        first[label] = (words(drafts), (rnd.draft_top or [None] * len(drafts)) if rnd else [])
    table = []
    for label, (toks, conf) in first.items():
        row = {"": label}
        for k in range(GAMMA):
            if k < len(toks):
                mark = "" if label.startswith("target") else (" ✓" if k < len(truth) and toks[k] == first[
                    "target (what it writes)"][0][k] else " ✗")
                row[f"token {k + 1}"] = toks[k] + mark + (f" ({conf[k]:.0%})" if conf[k] is not None else "")
            else:
                row[f"token {k + 1}"] = "—"
        table.append(row)
    tables.show(table, key="sd_first_round")
    st.caption("✓ / ✗: the same token as the target's at that position (a later ✓ after a ✗ is not accepted: the round "
               "ends at the first wrong draft). In brackets: the drafter's own top probability.")
st.info("**Try this:** measure the three drafters below, then compare their acceptance by position and their "
        "calibration charts: which drafter knows when it is right?", icon=":material/lightbulb:")

st.subheader("Measured: the three drafters on this prompt")
drafters = {"distilled draft": pair.draft, **heads}
max_new = min(s.max_new_tokens, pair.context_length - len(ids))
signature = (models.pair_key(pair), s.signature())
demo.run("Measure the three drafters", key="sd_run", state="sd_result", signature=signature,
         what="the drafter comparison", slot=False, type="primary", icon=":material/compare_arrows:",
         work=lambda progress: {"out": compare_drafters(pair.target, drafters, [ids], s.request(max_new_tokens=max_new),
                                                        gamma=GAMMA, repeats=REPEATS,
                                                        pacing=admission.pacing("the drafter comparison", progress))})
stored = demo.latest("sd_result", signature, stale="note", again="Measure the three drafters")
if stored:
    rows = stored["out"]["rows"]
    colors = [palette.color(role) for role in ("drafted", "bonus", "accepted")]  # with a pattern: not colour alone
    tables.show([{"drafter": r["drafter"], "tokens per target pass": round(r["tokens_per_pass"], 2),
                  "mean acceptance length": round(r["mean_acceptance_length"], 2), "c": round(r["c"], 3),
                  "speedup (median)": round(r["speedup"], 2),
                  "range": f"{r['measured'].low:.2f}–{r['measured'].high:.2f}",
                  "confidence AUC": round(r["auc_top"], 2) if r["auc_top"] == r["auc_top"] else None} for r in rows],
                key="sd_table")
    fig = go.Figure()
    for i, r in enumerate(rows):
        fig.add_bar(name=r["drafter"], x=[f"draft {k + 1}" for k in range(len(r["per_position"]))],
                    y=r["per_position"], marker_color=colors[i % 3],
                    marker_pattern_shape=["", "/", "."][i % 3],
                    text=[f"{x:.0%}" if x == x else "" for x in r["per_position"]], textposition="outside")
    fig.update_layout(barmode="group", height=360, yaxis_title="rounds that accepted it / rounds that drafted it",
                      yaxis_range=[0, 1.1], title="Acceptance by draft position", legend_orientation="h",
                      legend_y=-0.2, margin=dict(t=40, b=8))
    st.plotly_chart(fig, key="sd_positions")
    best = max(rows, key=lambda r: r["speedup"])
    demo.spread_note(best["measured"], f"Speedup with the {best['drafter']}, the fastest here")

    st.markdown("**Does a drafter know when it is right?** Each judged draft binned by the drafter's own top "
                "probability, against how often the target accepted drafts in that bin. A drafter whose curve rises "
                "steeply can stop a round early or grow a tree where it is sure (EAGLE-2's observation). The AUC is "
                "the chance that an accepted draft had a higher confidence than a rejected one: "
                f"{COIN_AUC} is a coin.")
    fig_c = make_subplots(rows=1, cols=len(rows), shared_yaxes=True,
                          subplot_titles=[f"{r['drafter']} (AUC {r['auc_top']:.2f})" if r["auc_top"] == r["auc_top"]
                                          else f"{r['drafter']} (no AUC: no draft rejected)" for r in rows])
    for i, r in enumerate(rows, start=1):
        cal = r["calibration"]
        mid = ((cal["bin_low"] + cal["bin_high"]) / 2).tolist()
        fig_c.add_scatter(x=mid, y=cal["acceptance"].tolist(), mode="lines+markers", row=1, col=i, showlegend=False,
                          marker_color=colors[(i - 1) % 3],
                          text=[f"{n} drafts" for n in cal["drafts"]], hovertemplate="%{x:.2f}: %{y:.0%} (%{text})")
        fig_c.add_scatter(x=[0, 1], y=[0, 1], mode="lines", line_dash="dot", line_color=charts.INK, row=1, col=i,
                          showlegend=False, hoverinfo="skip")
        fig_c.update_xaxes(title_text="drafter's top probability", range=[0, 1], row=1, col=i)
    fig_c.update_yaxes(title_text="accepted", range=[0, 1.05], row=1, col=1)
    fig_c.update_layout(height=360, margin=dict(t=40, b=8))
    st.plotly_chart(fig_c, key="sd_calibration")
else:
    st.caption("Press **Measure the three drafters** to time them on this prompt.")
with st.expander("How the three drafters are measured"):
    st.caption(f"γ = {GAMMA} for every drafter, {s.describe_sampling()}, seed {s.seed}, {max_new} tokens; plain decoding "
               f"and each drafter run in turn, {REPEATS} times over in alternating order; a speedup is the median of "
               "plain time / drafter time (prompt processing excluded). c is the drafter's warm pass over a target pass "
               "(for Medusa one pass drafts the whole round).")

st.subheader("Go deeper")
with st.expander("What a head reads, and how the heads were trained here"):
    self_drafting_heads.show(medusa, eagle, width, params)
