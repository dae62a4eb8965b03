"""Wall-Clock Race → Go deeper: the α Dial's cost model, raced: ideal hardware (v = 1) against this machine's
measured c and v(γ). A fragment, so its sliders and Play rerun only this section."""
import time

import plotly.graph_objects as go
import streamlit as st

from specdec_core import theory
from ui.state import dial
from ui.widgets import layout

REPLAY_S = 4.0  # a replay lasts about this long
REPLAY_FRAMES = 48


def show(pair, s, profile, lane_colors) -> None:
    st.markdown(
        "The α Dial's cost model, raced: every draft is accepted independently with probability α; a round costs "
        "γ·c for the drafts plus v for the one target pass over γ + 1 positions. On ideal hardware v = 1. On this "
        f"machine v(γ) and c are measured: c = {profile.c:.3f} and v({s.gamma}) = {profile.v(s.gamma):.2f} for "
        f"the drafter *{next(iter(pair.drafts))}*. Time is counted in target passes of one position.")
    dial.set_defaults(s, profile)  # α, γ and c are the α Dial's controls (one set for the app)
    st.session_state.setdefault("race_tokens", 40)
    simulated_race(pair, s, profile, lane_colors)


def use_measured_alpha() -> None:
    st.session_state["ad_alpha"] = st.session_state["race_alpha_measured"]


@st.fragment
def simulated_race(pair, s, profile, lane_colors) -> None:
    """The simulated race: a fragment, so its sliders and Play rerun only this section."""
    layout.run_marker()  # the test drivers wait on it (tests/serve.py)
    alpha, gamma, c = (st.session_state[k] for k in ("ad_alpha", "ad_gamma", "ad_c"))
    cols = st.columns([6, 3, 2], vertical_alignment="bottom")
    with cols[0]:
        st.markdown(f"α = **{alpha:.2f}**, γ = **{gamma}**, c on ideal hardware = **{c:.3f}**")
        st.page_link("chapters/alpha_dial.py", label="Set α, γ and c on The α Dial", icon=":material/tune:")
    n_tokens = cols[1].slider("Tokens", 10, 200, step=10, key="race_tokens")
    cols[2].button("Use the live α", key="race_use_alpha", on_click=use_measured_alpha,
                   disabled=not st.session_state.get("race_alpha_measured"),
                   help="The α measured in the live race above (run it first).")

    v_here = profile.v(gamma)
    lanes = {
        "standard": theory.simulated_plain(n_tokens),
        "ideal": theory.simulated_speculative(alpha, gamma, c, n_tokens, v=1.0, seed=s.seed, name="speculative, ideal hardware"),
        "machine": theory.simulated_speculative(alpha, gamma, profile.c, n_tokens, v=v_here, seed=s.seed,
                                              name="speculative, this machine"),
    }
    expected = {"standard": float(n_tokens), "ideal": theory.expected_finish(alpha, gamma, c, n_tokens, 1.0),
                "machine": theory.expected_finish(alpha, gamma, profile.c, n_tokens, v_here)}
    labels = {"standard": "standard decoding", "ideal": f"speculative, ideal hardware (v = 1, c = {c:.3f})",
              "machine": f"speculative, this machine (v = {v_here:.2f}, c = {profile.c:.3f})"}

    m = st.columns(3)
    m[0].metric("Ideal hardware: expected speedup", f"{theory.speedup(alpha, gamma, c, 1.0):.2f}×",
                help="E(α, γ) / (γc + 1), the paper's Theorem 3.8.")
    m[1].metric("This machine: expected speedup", f"{theory.speedup(alpha, gamma, profile.c, v_here):.2f}×",
                help="E(α, γ) / (γc + v(γ)) with this machine's measured c and v(γ).")
    m[2].metric("Target passes (this run)", f"{lanes['standard'].passes} → {lanes['ideal'].passes}",
                help="Standard lane against the speculative lanes (both speculative lanes share the same random acceptances).")

    fig = go.Figure()
    for key, lane in lanes.items():
        fig.add_scatter(x=[0.0] + lane.times, y=list(range(len(lane.times) + 1)), mode="lines", line_shape="hv",
                        name=labels[key], line=dict(color=lane_colors["standard" if key == "standard" else key], width=3))
        fig.add_vline(x=expected[key], line_dash="dot", line_color=lane_colors["standard" if key == "standard" else key])
    fig.update_layout(title=f"{n_tokens} tokens at α = {alpha:.2f}, γ = {gamma} (dotted: expected finish from the formula)",
                      xaxis_title="time (target passes of one position)", yaxis_title="tokens", height=380,
                      margin=dict(t=40, b=8), legend=dict(orientation="h", y=-0.25))
    st.plotly_chart(fig, key="race_sim_chart")

    play = st.button("Play the simulated race", key="race_sim_play", icon=":material/play_arrow:")
    bars = {key: st.empty() for key in lanes}
    end = max(lane.finish for lane in lanes.values())

    def draw_bars(t: float) -> None:
        for key, lane in lanes.items():
            done = sum(1 for x in lane.times if x <= t)
            bars[key].progress(done / n_tokens, text=f"{labels[key]}: {done}/{n_tokens} tokens at t = {min(t, end):.1f}")

    if play:
        for i in range(REPLAY_FRAMES + 1):
            draw_bars(end * i / REPLAY_FRAMES)
            time.sleep(REPLAY_S / REPLAY_FRAMES)
    else:
        draw_bars(end)
    st.caption("Both speculative lanes use the same random acceptances (seed from the sidebar), so they differ only "
               "in what a round costs. The live race above is the measured version of the *this machine* lane.")

