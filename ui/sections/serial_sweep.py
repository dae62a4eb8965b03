"""The Serial Tax → Go deeper: one target pass over k new positions, timed on this machine (behind a button),
and why a GPU keeps that curve flat where a CPU does not."""
import streamlit as st
from plotly.subplots import make_subplots

from ui.server import demo, measure, models
from ui.widgets import charts, chips, layout


def show(pair) -> None:
    st.caption(f"Times one pass of the target over k = 1…{measure.SWEEP_KS[-1]} new positions, {measure.CONTEXT} tokens "
               "already in the KV cache (the *KV cache* keeps the attention keys and values of every token the model "
               "has read, so a pass computes only the new positions): every k once per repetition, "
               f"{measure.SWEEP_REPEATS} repetitions taking turns "
               "in opposite orders, so a busy moment of the machine hits every k alike.")
    # The latest sweep is kept for everyone on this server (`shared`): it is about this machine, not a session.
    demo.run(f"Time one pass over k = 1…{measure.SWEEP_KS[-1]}", key="st_sweep_run", state="st_sweep",
             signature=models.pair_key(pair), shared=True, slot=False, what="timing one pass over k positions",
             progress_text="Timing passes…", icon=":material/timer:",
             work=lambda progress: {"sweep": measure.pass_sweep(pair, lambda f, text: progress(f, f"Timing passes: k = {text}"))})
    stored_sweep = demo.latest("st_sweep", models.pair_key(pair), shared=True)
    sweep = stored_sweep["sweep"] if stored_sweep else None
    if sweep is None:
        st.caption("Press the button to time the passes (a few seconds; the result is kept for everyone on this server).")
    else:
        ks = sorted(sweep)
        per_pass = [sweep[k].median * 1e3 for k in ks]
        t1 = per_pass[0]
        fig = make_subplots(rows=1, cols=2, subplot_titles=("time of ONE pass (ms)", "time per position (ms)"))
        fig.add_scatter(x=ks, y=per_pass, mode="lines+markers", name="measured (median; bars: range)",
                        line_color=chips.KINDS["bonus"].color, row=1, col=1,
                        error_y=dict(type="data", symmetric=False, array=[(sweep[k].high - sweep[k].median) * 1e3 for k in ks],
                                     arrayminus=[(sweep[k].median - sweep[k].low) * 1e3 for k in ks]))
        fig.add_scatter(x=ks, y=[t1] * len(ks), mode="lines", name="flat: k positions for the price of one", line_dash="dot",
                        line_color=chips.KINDS["accepted"].color, row=1, col=1)
        fig.add_scatter(x=ks, y=[t1 * k for k in ks], mode="lines", name="linear: k separate passes", line_dash="dash",
                        line_color=chips.KINDS["rejected"].color, row=1, col=1)
        fig.add_scatter(x=ks, y=[t / k for t, k in zip(per_pass, ks)], mode="lines+markers", showlegend=False,
                        line_color=chips.KINDS["bonus"].color, row=1, col=2)
        fig.add_scatter(x=ks, y=[t1 / k for k in ks], mode="lines", showlegend=False, line_dash="dot",
                        line_color=chips.KINDS["accepted"].color, row=1, col=2)
        fig.add_scatter(x=ks, y=[t1] * len(ks), mode="lines", showlegend=False, line_dash="dash",
                        line_color=chips.KINDS["rejected"].color, row=1, col=2)
        fig.update_xaxes(title_text="k (new positions in the pass)")
        fig.update_yaxes(rangemode="tozero")
        fig.update_yaxes(type="log", row=1, col=1,
                         tickvals=charts.log_ticks(min(sweep[k].low for k in ks) * 1e3,
                                                   max(max(sweep[k].high for k in ks) * 1e3, t1 * ks[-1])))
        fig.update_layout(height=380, margin=dict(t=40, b=8), legend=dict(orientation="h", y=-0.3))
        st.plotly_chart(fig, key="st_sweep")

        ratio = sweep[ks[-1]].median / sweep[1].median
        c = st.columns(3)
        c[0].metric("One pass, 1 position", f"{t1:.2f} ms", help=sweep[1].text(" ms", 2, 1e3))
        c[1].metric(f"One pass, {ks[-1]} positions", f"{per_pass[-1]:.2f} ms", help=sweep[ks[-1]].text(" ms", 2, 1e3))
        c[2].metric(f"Cost of {ks[-1]} positions in one pass", f"{ratio:.1f}× one position",
                    help=f"Decoding {ks[-1]} tokens one by one would cost {ks[-1]}× instead.")
        demo.spread_note(max(sweep.values(), key=lambda m: m.spread), "The least steady pass time", " ms", 2, 1e3)
        if ratio < 2 and pair.device == "cpu":
            verdict = (f"On this machine the curve is nearly flat: {ks[-1]} positions cost {ratio:.1f}× one. Most of "
                       "a pass here is fixed cost, with a model this small on a CPU mostly Python and launching each "
                       "operation rather than idle arithmetic: plain decoding pays it once per token, one pass over "
                       "several positions once for all of them.")
        elif ratio < 2:
            verdict = (f"On this machine the curve is nearly flat: {ks[-1]} positions cost {ratio:.1f}× one. "
                       "Most of a pass here is fixed cost (waiting for weights from memory and, for a small model, "
                       "launching each operation), so plain decoding leaves almost all of it unused.")
        elif ratio < ks[-1] / 3:
            verdict = (f"On this machine {ks[-1]} positions cost {ratio:.1f}× one: far from free, but much cheaper "
                       "than as many separate passes.")
        else:
            verdict = (f"On this machine {ks[-1]} positions cost {ratio:.1f}× one, close to paying per position: "
                       "the arithmetic itself is the bottleneck here, so verification is not free.")
        st.markdown(f"{layout.measured_badge()} {verdict}")

    st.markdown(
        "**Why a GPU keeps this flat and a CPU does not.** A pass for one new token multiplies one vector by "
        "every weight matrix of the model, so each weight is fetched from memory to be used in a single "
        "multiply-add. A GPU can do hundreds of operations in the time one weight takes to arrive, so at k = 1 "
        "its arithmetic units mostly wait on memory. Give the same pass k positions and every fetched weight is "
        "used k times: the arithmetic grows k-fold, the memory traffic hardly at all, and the time stays almost "
        "flat until the units are busy. That idle arithmetic is the *under-utilisation* speculative decoding "
        "puts to work. A CPU has a few cores whose arithmetic runs out after a few positions; beyond that each "
        "extra position adds its own share of time and the curve climbs. A tiny model is a third case: its "
        "pass is mostly fixed overhead (Python, launching each operation), so even a CPU draws a flat curve, "
        "for a less useful reason.")
    st.caption(f"Each point: the median over {measure.SWEEP_REPEATS} repetitions of the median of {measure.SWEEP_PASSES} "
               f"timed passes (after one warm-up pass), {models.configure_torch()} torch thread(s). Other load on the "
               "machine shows up here too, in the spread.")
