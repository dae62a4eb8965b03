"""Drafters That Read the Target → Go deeper: the four drafters measured on the sidebar prompt (behind a
button): tokens per target pass, c and speedup; acceptance by draft position, the same quantity as the α
Dial's chart (accepted ÷ reached); and how well each drafter's confidence predicts the target's verdict."""
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from specdec_core.analysis.round_stats import acceptance_by_position
from specdec_core.analysis.self_draft import compare_drafters
from ui.server import admission, demo, models
from ui.widgets import charts, palette, tables

REPEATS = 3  # interleaved repetitions: every timed figure is their median
COIN_AUC = 0.5  # the AUC of a confidence that says nothing: a coin ranks an accepted draft above a rejected one half the time
FAVOURED = 0.5  # the AUC's verdict line on min(1, p/q), as specdec_core.analysis.self_draft.confidence_auc draws it


def show(pair, s, drafters: dict, ids: list[int], gamma: int) -> None:
    """The measurement button, then the table, the position chart and the calibration chart of its result."""
    max_new = min(s.max_new_tokens, pair.context_length - len(ids))
    signature = (models.pair_key(pair), s.signature())
    demo.run("Measure the four drafters", key="sd_run", state="sd_result", signature=signature,
             what="the drafter comparison", slot=False, type="primary", icon=":material/compare_arrows:",
             work=lambda progress: {"out": compare_drafters(pair.target, drafters, [ids], s.request(max_new_tokens=max_new),
                                                            gamma=gamma, repeats=REPEATS,
                                                            pacing=admission.pacing("the drafter comparison", progress))})
    st.caption(f"γ = {gamma} for every drafter, {s.describe_sampling()}, seed {s.seed}, {max_new} tokens; plain decoding "
               f"and each drafter run in turn, {REPEATS} times over in alternating order; a speedup is the median of "
               "plain time / drafter time (prompt processing excluded). c is the drafter's warm pass over a target pass "
               "(for Medusa one pass drafts the whole round).")
    stored = demo.latest("sd_result", signature, stale="note", again="Measure the four drafters")
    if not stored:
        st.caption("Press **Measure the four drafters** to time them on this prompt.")
        return
    rows = stored["out"]["rows"]
    colors = [palette.color(role) for role in ("drafted", "bonus", "accepted", "corrective")]  # with a pattern too
    tables.show([{"drafter": r["drafter"], "tokens per target pass": round(r["tokens_per_pass"], 2), "c": round(r["c"], 3),
                  "speedup (median)": round(r["speedup"], 2),
                  "range": f"{r['measured'].low:.2f}–{r['measured'].high:.2f}",
                  "confidence AUC": round(r["auc_top"], 2) if r["auc_top"] == r["auc_top"] else None} for r in rows],
                key="sd_table")
    best = max(rows, key=lambda r: r["speedup"])
    demo.spread_note(best["measured"], f"Speedup with the {best['drafter']}, the fastest here")
    positions(rows, gamma, colors)
    calibration(rows, colors)


def positions(rows: list[dict], gamma: int, colors: list[str]) -> None:
    """Acceptance by draft position as the α Dial draws it: of the rounds that reached position i (every draft
    before it accepted), the share that accepted draft i."""
    fig = go.Figure()
    for i, r in enumerate(rows):
        frame = acceptance_by_position(r["rounds"], gamma)
        fig.add_bar(name=r["drafter"], x=[f"draft {k}" for k in frame["position"]], y=frame["rate"].tolist(),
                    marker_color=colors[i % 4], marker_pattern_shape=["", "/", ".", "x"][i % 4],
                    customdata=frame[["reached", "accepted"]].to_numpy().tolist(),
                    hovertemplate="%{x}: %{y:.0%} (%{customdata[1]} of %{customdata[0]} reached)<extra></extra>",
                    text=[f"{x:.0%}" if x == x else "" for x in frame["rate"]], textposition="outside")
    fig.update_layout(barmode="group", height=360, yaxis_title="P(accept x_i | x_1…x_{i−1} accepted)",
                      yaxis_range=[0, 1.1], title="Acceptance by draft position (accepted ÷ reached)",
                      legend_orientation="h", legend_y=-0.2, margin=dict(t=40, b=8))
    st.plotly_chart(fig, key="sd_positions")
    # vLLM reports the unconditional rate (accepted ÷ drafted per position: vllm/v1/spec_decode/metrics.py,
    # num_accepted_tokens_per_pos over num_drafts); specdec_core's per_position_acceptance_rate computes it.
    st.caption("Each bar: of the rounds whose earlier drafts all passed (the rounds that *reached* this position), "
               "the share that kept this draft too; hover for the counts. It is the α Dial's chart, per drafter. If "
               "every draft passed independently with one chance α (the paper's model), every bar of a drafter would "
               "be the same height. Serving stacks also report accepted ÷ drafted per position, which counts a draft "
               "after a rejection as a failure: that rate falls like α, α², α³… even when every draft is equally "
               "easy, so its fall does not by itself show that later positions are harder.")


def calibration(rows: list[dict], colors: list[str]) -> None:
    """Per drafter, its judged drafts binned by its own top probability against the target's acceptance there."""
    st.markdown("**Does a drafter know when it is right?** A drafter is *calibrated* when its confidence predicts "
                "the target's verdict. Each chart bins the drafts the target judged by the drafter's own top "
                "probability and plots how often the target accepted drafts in that bin. A curve that rises steeply "
                "lets a drafter stop a round early, or grow a tree, where it is sure (EAGLE-2's observation). The AUC "
                f"is the chance that a draft the target favours (min(1, p/q) ≥ {FAVOURED}; in greedy mode, one it "
                f"accepts) had a higher confidence than one it does not: {COIN_AUC} is a coin.")
    fig = make_subplots(rows=1, cols=len(rows), shared_yaxes=True,
                        subplot_titles=[f"{r['drafter']}<br>AUC {r['auc_top']:.2f}" if r["auc_top"] == r["auc_top"]
                                        else f"{r['drafter']}<br>no AUC: all favoured" for r in rows])
    for i, r in enumerate(rows, start=1):
        cal = r["calibration"]
        mid = ((cal["bin_low"] + cal["bin_high"]) / 2).tolist()
        fig.add_scatter(x=mid, y=cal["acceptance"].tolist(), mode="lines+markers", row=1, col=i, showlegend=False,
                        marker_color=colors[(i - 1) % 4],
                        text=[f"{n} drafts" for n in cal["drafts"]], hovertemplate="%{x:.2f}: %{y:.0%} (%{text})")
        fig.add_scatter(x=[0, 1], y=[0, 1], mode="lines", line_dash="dot", line_color=charts.INK, row=1, col=i,
                        showlegend=False, hoverinfo="skip")
        fig.update_xaxes(title_text="drafter's top probability", title_font_color=charts.INK, range=[0, 1], row=1, col=i)
    fig.update_yaxes(title_text="accepted", range=[0, 1.05], row=1, col=1)
    fig.update_layout(height=380, margin=dict(t=64, b=8, r=16))
    st.plotly_chart(fig, key="sd_calibration")
    st.caption("The dotted diagonal is a reference line, where acceptance would equal the drafter's confidence; it is "
               "not a target. In greedy mode a draft is accepted when it is the target's top token, and a drafter "
               "calibrated against the target would sit on the line. With sampling the y axis is the mean of "
               "min(1, p/q), which need not equal the drafter's top probability even for a perfect drafter: read the "
               "slope, not the distance to the line.")
