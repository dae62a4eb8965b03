"""A page section: where speculation stops paying, measured live by batch size, and the first token.

Self-contained (`show(pair)`), so a chapter places it where its story needs it. The measurement is
`specdec_core.analysis.batching.measure_regime` behind a button, in ONE admission slot for the whole
measurement (batches are heavy: one class request at a time), with progress shown; its result is
kept for the whole server process per pair and largest batch (demo's shared store), so the next
student sees it at once.
"""
import math
import time

import plotly.graph_objects as go
import streamlit as st

from specdec_core import GenerationRequest
from specdec_core.analysis.batching import FIXED_GAMMA, PROMPT_TOKENS, measure_regime, summary
from specdec_core.analysis.stats import Pacing
from specdec_core.pairs import ModelPair
from ui.server import demo
from ui.server.models import pair_key
from ui.widgets import charts, layout, tables

LARGEST = (4, 8, 16, 32)  # the batch-size control: the largest batch measured (bounded for a classroom)
DEFAULT_LARGEST = 16
TOKENS = 16  # new tokens per prompt: enough rounds for a median, short enough for a class
REPEATS = 3  # interleaved repetitions per batch size


def _sizes(largest: int) -> tuple[int, ...]:
    return tuple(b for b in (1, 2, 4, 8, 16, 32) if b <= largest)


def _log_axis(batches: list[int], title: str) -> dict:
    """A log batch-size axis with room at both ends for the end points' labels."""
    lo, hi = math.log10(min(batches)), math.log10(max(batches))
    pad = 0.12 * max(hi - lo, 0.3)
    return dict(title=title, type="log", tickvals=batches, range=[lo - pad, hi + pad])


def _mark_crossover(fig, batch: int | None, label: str, dash: str) -> None:
    if batch is not None:
        fig.add_vline(x=batch, line_dash=dash, line_color=charts.INK,
                      annotation_text=label, annotation_position="top left")


def throughput_figure(regime) -> go.Figure:
    """Tokens per second by batch size: measured (median, lowest-highest bars) and predicted (dashed)."""
    b = [r.batch for r in regime.rows]
    fig = go.Figure()
    for name, attr, pred, color, symbol in (("plain", "plain", "predicted_plain", charts.MUTED, "circle"),
                                            ("speculative", "speculative", "predicted_speculative", charts.P_COLOR,
                                             "diamond")):
        m = [getattr(r, attr) for r in regime.rows]
        fig.add_scatter(x=b, y=[x.median for x in m], name=f"{name}, measured", mode="lines+markers",
                        line=dict(color=color, width=3), marker=dict(symbol=symbol, size=10),
                        error_y=dict(type="data", symmetric=False, array=[x.high - x.median for x in m],
                                     arrayminus=[x.median - x.low for x in m]))
        fig.add_scatter(x=b, y=[getattr(r, pred) for r in regime.rows], name=f"{name}, cost model",
                        mode="lines+markers", line=dict(color=color, dash="dash"), marker=dict(symbol=symbol, size=7))
    _mark_crossover(fig, regime.crossover, f"crossover: batch {regime.crossover}", "solid")
    fig.update_layout(height=400, margin=dict(t=30, b=8), legend=dict(orientation="h", y=-0.25),
                      xaxis=_log_axis(b, "batch size (prompts decoded together)"),
                      yaxis=dict(title="tokens/s, all rows (decoding)", rangemode="tozero"))
    return fig


def speedup_figure(regime) -> go.Figure:
    """Speculative / plain by batch size: measured (median, lowest-highest) and the cost model's."""
    b = [r.batch for r in regime.rows]
    fig = go.Figure()
    m = [r.speedup for r in regime.rows]
    fig.add_scatter(x=b, y=[x.median for x in m], name="measured, γ per batch size", mode="lines+markers+text",
                    line=dict(color=charts.P_COLOR, width=3), marker=dict(symbol="diamond", size=10),
                    text=[f"{x.median:.2f}×, γ={r.gamma}" for x, r in zip(m, regime.rows)],
                    textposition=["middle right"] * (len(b) - 1) + ["middle left"],
                    error_y=dict(type="data", symmetric=False, array=[x.high - x.median for x in m],
                                 arrayminus=[x.median - x.low for x in m]))
    fig.add_scatter(x=b, y=[r.predicted_speedup for r in regime.rows], name="cost model", mode="lines+markers",
                    line=dict(color=charts.P_COLOR, dash="dash"), marker=dict(symbol="diamond", size=7))
    if regime.fixed_gamma is not None:
        f = [r.fixed_speedup for r in regime.rows]
        fig.add_scatter(x=b, y=[x.median for x in f], name=f"measured, fixed γ = {regime.fixed_gamma}",
                        mode="lines+markers", line=dict(color=charts.MUTED, width=3), marker=dict(symbol="square", size=9),
                        error_y=dict(type="data", symmetric=False, array=[x.high - x.median for x in f],
                                     arrayminus=[x.median - x.low for x in f]))
        fig.add_scatter(x=b, y=[r.fixed_predicted for r in regime.rows], name=f"cost model, fixed γ = {regime.fixed_gamma}",
                        mode="lines+markers", line=dict(color=charts.MUTED, dash="dash"), marker=dict(symbol="square", size=6))
        _mark_crossover(fig, regime.fixed_crossover, f"crossover at γ = {regime.fixed_gamma}", "dot")
    fig.add_hline(y=1, line_dash="dot", line_color=charts.INK, annotation_text="no gain",
                  annotation_position="bottom right")
    _mark_crossover(fig, regime.crossover, "crossover", "solid")
    _mark_crossover(fig, regime.predicted_crossover, "predicted crossover", "dash")
    fig.update_layout(height=400, margin=dict(t=30, b=8), legend=dict(orientation="h", y=-0.25),
                      xaxis=_log_axis(b, "batch size"),
                      yaxis=dict(title="speedup (speculative ÷ plain)", rangemode="tozero"))
    return fig


def ttft_figure(regime) -> go.Figure:
    """Time to first token by batch size, plain against speculative, the prefills drawn inside."""
    b = [str(r.batch) for r in regime.rows]
    fig = go.Figure()
    fig.add_bar(x=b, y=[1e3 * r.ttft_plain.median for r in regime.rows], name="plain", marker_color=charts.MUTED,
                text=[f"{1e3 * r.ttft_plain.median:.0f}" for r in regime.rows], textposition="outside")
    fig.add_bar(x=b, y=[1e3 * r.ttft_speculative.median for r in regime.rows], name="speculative",
                marker_color=charts.P_COLOR, marker_pattern_shape="/",
                text=[f"{1e3 * r.ttft_speculative.median:.0f}" for r in regime.rows], textposition="outside")
    fig.add_scatter(x=b, y=[1e3 * r.prefill.median for r in regime.rows], name="the target's prefill alone",
                    mode="markers", marker=dict(symbol="line-ew-open", size=28, color=charts.INK, line=dict(width=3)))
    fig.update_layout(barmode="group", height=360, margin=dict(t=30, b=8), legend=dict(orientation="h", y=-0.25),
                      xaxis=dict(title="batch size", type="category"), yaxis=dict(title="time to first token (ms)"))
    return fig


def show(pair: ModelPair) -> None:
    st.subheader("Where speculation stops paying: batches, measured here")
    st.markdown(
        "A server decodes many requests together: one target pass serves a whole **batch**, one position per "
        "request. Speculation asks that same pass to verify γ drafts for every request as well, so a pass over "
        "B·(γ + 1) positions replaces a pass over B. While a pass leaves the arithmetic idle, the extra positions "
        "ride almost free; once the batch fills it, each one costs, and every rejected draft is work a "
        "waiting request could have used. The cost model of the earlier chapters says where that happens with "
        "v(B·(γ + 1)), the verification pass in single passes, measured on this machine; below, it chooses γ for "
        "each batch size (as serving stacks set the draft length per batch size), and the measurement checks it, "
        f"beside a fixed γ = {FIXED_GAMMA} that never adapts.")
    largest = st.select_slider("Largest batch to measure", options=LARGEST, value=DEFAULT_LARGEST, key="bt_largest",
                               help="Batches 1, 2, 4, … up to this size; each batch size runs plain and speculative "
                                    f"decoding {REPEATS} times in alternating order, {TOKENS} new tokens per prompt.")
    key = (pair_key(pair), largest)
    st.caption(f"Prompts: the benchmark's held-out passages (up to {PROMPT_TOKENS} tokens each, ragged), "
               f"{TOKENS} new tokens each, "
               f"temperature 1, seed 0. Batch sizes {', '.join(map(str, _sizes(largest)))}; pass costs t(B, k) first, "
               "then plain and speculative batches interleaved, "
               f"{REPEATS} repetitions each. One measurement at a time on this server.")

    def work(progress):
        regime = measure_regime(pair.target, pair.draft, pair.tokenizer, GenerationRequest(max_new_tokens=TOKENS, seed=0),
                                _sizes(largest), repeats=REPEATS, pacing=Pacing(progress=progress))
        return {"regime": regime, "when": time.strftime("%H:%M UTC", time.gmtime())}

    demo.run("Measure the batch regime", key="bt_run", state="bt_result", signature=key, work=work, shared=True,
             what="the batch measurement", type="primary", icon=":material/stacked_bar_chart:")
    stored = demo.latest("bt_result", key, shared=True)
    if stored is None:
        st.caption(f"Press **Measure the batch regime** (a minute or more at batch {largest}, longer on a busy "
                   "server). The result stays here for everyone on this server.")
        return
    regime = stored["regime"]
    st.caption(f"Measured on this server at {stored['when']}; teacher-forced α of the pair "
               f"{regime.alpha:.2f}.")
    c = st.columns(3)
    first, last = regime.rows[0], regime.rows[-1]
    c[0].metric(f"Plain tokens/s, batch {last.batch} ÷ batch 1", f"{last.plain.median / first.plain.median:.1f}×")
    c[1].metric(f"Speedup at batch 1 → {last.batch}", f"{first.speedup.median:.2f}× → {last.speedup.median:.2f}×")
    c[2].metric("Crossover (measured)", f"batch {regime.crossover}" if regime.crossover else f"none up to {last.batch}",
                help="The smallest batch size whose median speedup fell below 1, with γ chosen per batch size.")
    if regime.fixed_gamma is not None:
        crossed = regime.fixed_crossover
        c[2].caption(f"At a fixed γ = {regime.fixed_gamma}: " + (f"batch {crossed}" if crossed else f"none up to {last.batch}"))
    left, right = st.columns(2)
    with left:
        st.plotly_chart(throughput_figure(regime), key="bt_tps")
    with right:
        st.plotly_chart(speedup_figure(regime), key="bt_speedup")
    widest = max(regime.rows, key=lambda r: r.speedup.spread)
    demo.spread_note(widest.speedup, f"Speedup at batch {widest.batch}, the widest spread here")
    for line in summary(regime):
        st.markdown(f"{layout.measured_badge()} {line}")
    st.markdown("**The first token.** Before any token appears the target must read the whole prompt. Here the "
                "speculative decoder also lets the drafter read it, and its first round reads the prompt's last "
                "token together with γ drafts, so its first token waits for that whole round (γ draft passes, "
                "then the verification). vLLM and SGLang instead take the first token from the target's prefill "
                "and speculate from the second: the extra round is this app's choice. Either way speculation makes "
                "the tokens after the first cheaper; it does not shorten the wait for the first.")
    st.plotly_chart(ttft_figure(regime), key="bt_ttft")
    if st.toggle("Every figure, by batch size", key="bt_show_table"):  # a toggle: the section may sit in an expander
        tables.show(regime.frame().round(3).to_dict(orient="records"), key="bt_table")
