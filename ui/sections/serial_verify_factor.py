"""The Serial Tax → Go deeper: "free" is a fact about GPUs: the verify factor v(γ) measured here, against the
paper's v = 1. Drawn from the server's cost profile (measured once per server process)."""
import plotly.graph_objects as go
import streamlit as st

from ui.server import measure
from ui.widgets import charts, layout


def show(pair) -> None:
    st.markdown(
        "Speculative decoding will ask the target for one pass over **γ + 1** positions, where γ is the number of "
        "tokens a small *drafter* guesses ahead (the next chapter shows a round). The paper charges that pass as "
        "**one** pass, however many positions it covers: on an accelerator waiting on memory, the extra positions "
        "ride along on arithmetic that would otherwise sit idle. Here the factor is measured instead: "
        "**v(γ)** = one pass over γ + 1 positions ÷ one pass over 1. When v(γ) grows with γ, every round costs more "
        "than the paper's model says and the speedup is smaller; the algorithm and its exactness are unchanged.")
    # The server's cost profile is measured once per process, by short runs: the first chapter to need it pays.
    # This fold does not make a first paint pay for it.
    if not st.toggle("Show this machine's v(γ)", key="st_vf"):
        st.caption("Turn it on to draw v(γ) from this server's measured pass costs (measured once per server "
                   "process; the first time takes a few seconds).")
        return
    V_GAMMAS = list(range(1, 17))
    profile = measure.cost_profile(pair)
    fig = go.Figure()
    fig.add_scatter(x=V_GAMMAS, y=[profile.v(g) for g in V_GAMMAS], name=f"measured here ({pair.device})",
                    mode="lines+markers", line_color=charts.RESIDUAL_COLOR)
    fig.add_scatter(x=V_GAMMAS, y=[1] * len(V_GAMMAS), name="the paper's assumption, v = 1", mode="lines",
                    line_dash="dash", line_color=charts.P_COLOR)
    fig.add_scatter(x=V_GAMMAS, y=[g + 1 for g in V_GAMMAS], name="no parallelism at all, v = γ + 1", mode="lines",
                    line_dash="dot", line_color=charts.MUTED)
    fig.update_layout(title="v(γ): one target pass over γ+1 positions, in single-position passes", xaxis_title="γ",
                      yaxis_title="v(γ)", height=320, margin=dict(t=40, b=8), legend=dict(orientation="h", y=-0.3))
    st.plotly_chart(fig, key="vf_v")
    st.caption(f"{layout.measured_badge()} v(γ) {measure.pass_times(pair).describe()} (measured once per server "
               f"process, on this machine's {pair.device.upper()}).")
