"""Wall-Clock Race → Go deeper: a γ sweep (behind a button): measured speedups against the formula."""
import plotly.graph_objects as go
import streamlit as st

from specdec_core import theory
from specdec_core.analysis import race
from ui.server import demo
from ui.widgets import charts, layout, tables

SWEEP_GAMMAS = tuple(range(1, 9))
SWEEP_REPEATS = 3  # interleaved repetitions of the γ sweep


def show(pair, s, ids, signature, lane_colors) -> None:
    st.caption(f"Runs the live request with plain decoding and at γ = {SWEEP_GAMMAS[0]}…{SWEEP_GAMMAS[-1]}, all "
               f"interleaved, {SWEEP_REPEATS} times over (prompt processing excluded), and draws the median measured "
               "speedup over the formula. The formula uses the α measured over all these runs and the c and v(γ) of the "
               "passes these very runs made.")
    if st.button(f"Sweep γ = {SWEEP_GAMMAS[0]}…{SWEEP_GAMMAS[-1]}", key="race_sweep", icon=":material/query_stats:"):
        with demo.measuring("your γ sweep", "Sweeping γ…", "Could not sweep") as pacing:
            sweep = race.gamma_sweep(pair.target, pair.draft, s.request(ids), SWEEP_GAMMAS, repeats=SWEEP_REPEATS,
                                     pacing=pacing)
        demo.keep("race_sweep_result", signature, {"sweep": sweep})
    swept = demo.latest("race_sweep_result", signature)
    if swept:
        sweep = swept["sweep"]
        a = sweep["alpha"]
        costs = sweep["costs"]  # c and v(γ) of the sweep's own passes
        gs = [row["gamma"] for row in sweep["rows"]]
        fine = list(range(1, SWEEP_GAMMAS[-1] + 1))
        fig = go.Figure()
        fig.add_scatter(x=fine, y=[theory.speedup(a, g, costs.c, costs.v) for g in fine], mode="lines",
                        name=f"formula, this machine's c and v(γ), measured α = {a:.2f}", line_color=lane_colors["machine"])
        fig.add_scatter(x=fine, y=[theory.speedup(a, g, costs.c, 1.0) for g in fine], mode="lines",
                        name="formula, ideal hardware (v = 1), same α and c", line=dict(dash="dash", color=lane_colors["ideal"]))
        fig.add_scatter(x=gs, y=[row["speedup"] for row in sweep["rows"]], mode="markers+lines", name="measured here",
                        marker=dict(size=11, symbol="diamond", color=lane_colors["speculative"],
                                    line=dict(width=1, color=charts.INK)),
                        line=dict(dash="dot", color=lane_colors["speculative"]),
                        error_y=dict(type="data", symmetric=False,
                                     array=[row["measured"].high - row["speedup"] for row in sweep["rows"]],
                                     arrayminus=[row["speedup"] - row["measured"].low for row in sweep["rows"]]),
                        customdata=[[row["tokens_per_pass"], row["alpha"], row["measured"].text()] for row in sweep["rows"]],
                        hovertemplate="γ = %{x}: %{customdata[2]} (%{customdata[0]:.2f} tokens/pass, α %{customdata[1]:.2f})"
                                      "<extra></extra>")
        fig.add_hline(y=1, line_dash="dot", line_color=charts.MUTED)
        fig.update_layout(title="Speedup over standard decoding against γ (bars: the range over the repetitions)",
                          xaxis_title="γ", yaxis_title="speedup (×)",
                          height=380, margin=dict(t=40, b=8), legend=dict(orientation="h", y=-0.3), xaxis=dict(dtick=1))
        st.plotly_chart(fig, key="race_sweep_chart")
        widest = max(sweep["rows"], key=lambda row: row["measured"].spread)
        demo.spread_note(widest["measured"], f"Speedup at γ = {widest['gamma']}, the widest spread of the sweep")
        best = max(sweep["rows"], key=lambda row: row["speedup"])
        st.markdown(f"{layout.measured_badge()} Best measured γ here: **{best['gamma']}** ({best['measured'].text()}); the "
                    f"formula with these runs' costs (c = {costs.c:.3f}) predicts γ = "
                    f"{theory.optimal_gamma(a, costs.c, costs.v, SWEEP_GAMMAS[-1])}, ideal hardware γ = "
                    f"{theory.optimal_gamma(a, costs.c, 1.0, SWEEP_GAMMAS[-1])}.")
        tables.show([{"γ": row["gamma"], "speedup (measured, median)": round(row["speedup"], 2),
                       "range over the runs": f"{row['measured'].low:.2f}–{row['measured'].high:.2f}",
                       "speedup (formula, this machine)": round(theory.speedup(a, row["gamma"], costs.c, costs.v), 2),
                       "tokens per target pass": round(row["tokens_per_pass"], 2), "α (this run)": round(row["alpha"], 2),
                       "ms per token": round(row["s_per_token"] * 1e3, 2)} for row in sweep["rows"]],
                    key="race_sweep_table")
    else:
        st.caption("Press the sweep button to measure.")
