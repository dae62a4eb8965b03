"""Chapter: The α Dial. The paper's expected tokens per pass and speedup against α and γ (the explainer's
demo: two sliders, two curves); folded beneath, the cost model, the paper's tables recomputed, the live
pair measured drafter by drafter, α by kind of text, and fixed against adaptive γ."""
import plotly.graph_objects as go
import streamlit as st

from specdec_core import theory
from ui.sections import alpha_by_kind, alpha_cost_model, alpha_measured, alpha_paper, alpha_policies
from ui.server import measure, models
from ui.state import dial, settings
from ui.widgets import charts, layout, palette

GAMMA_AXIS = list(range(1, 21))
TRY_ALPHA = (0.6, 0.95)  # the suggestion: drag α across this range
ALPHAS = (0.5, 0.6, 0.7, 0.8, 0.9)  # the reference curves drawn in grey

s = settings.current()
pair = models.require_pair()

st.header("The α Dial")
layout.idea("how much a round yields depends on α, the chance that the target accepts a draft (its "
            "average over the text), and on γ, the drafts per round; each draft also costs c, a draft pass as a "
            "fraction of a target pass, so the best γ grows with α.")

profile = measure.cost_profile(pair)
c_default = dial.measured_c(profile)
dial.set_defaults(s, profile)  # the app's one set of α / γ / c controls: the race reads them too
st.session_state.setdefault("ad_hw", False)


@st.fragment
def explorer() -> None:
    layout.run_marker()  # the test drivers wait on it (tests/serve.py)
    with layout.demo():
        a, g, cc = st.columns(3, vertical_alignment="bottom")
        alpha = a.slider("α (how often a draft is accepted)", 0.0, 0.99, step=0.01, key="ad_alpha")
        gamma = g.slider("γ (drafts per round)", 1, 16, key="ad_gamma")
        c = cc.slider("c (draft pass ÷ target pass)", 0.0, 1.0, step=0.005, key="ad_c", format="%.3f",
                      help=f"Measured for this pair: {profile.c:.3f}.")
        use_hw = st.session_state["ad_hw"]  # set under "Go deeper: the cost model"
        v = profile.v if use_hw else 1.0
        best = theory.optimal_gamma(alpha, c, v, max_gamma=GAMMA_AXIS[-1])

        measured = st.session_state.get("ad_measured")
        curves = sorted(set(ALPHAS) | {alpha})
        left, right = st.columns(2)
        fig_e, fig_s = go.Figure(), go.Figure()
        for x in curves:
            mine = abs(x - alpha) < 1e-9
            style = dict(width=4 if mine else 1.5, color=charts.RESIDUAL_COLOR if mine else charts.MUTED)
            name = f"α = {x:.2f}" + (" (yours)" if mine else "")
            fig_e.add_scatter(x=GAMMA_AXIS, y=[theory.expected_tokens(x, g_) for g_ in GAMMA_AXIS], mode="lines",
                              name=name, line=style, legendgroup=name)
            fig_s.add_scatter(x=GAMMA_AXIS, y=[theory.speedup(x, g_, c, v) for g_ in GAMMA_AXIS], mode="lines",
                              name=name, line=style, legendgroup=name, showlegend=False)
            opt = theory.optimal_gamma(x, c, v, max_gamma=GAMMA_AXIS[-1])
            fig_s.add_scatter(x=[opt], y=[theory.speedup(x, opt, c, v)], mode="markers", showlegend=False,
                              marker=dict(symbol="star", size=18 if mine else 10, color=style["color"]),
                              hovertemplate=f"optimal γ = {opt} for α = {x:.2f}<extra></extra>", legendgroup=name)
        fig_e.add_vline(x=gamma, line_dash="dot", line_color=charts.MUTED)
        fig_s.add_vline(x=gamma, line_dash="dot", line_color=charts.MUTED)
        if measured:
            for (label, res), color in zip(measured["results"].items(), palette.drafter_colors()):
                g_m = measured["gamma"]
                fig_e.add_scatter(x=[g_m], y=[res["tokens_per_pass"]], mode="markers", name=f"measured: {label}",
                                  marker=dict(symbol="diamond", size=14, color=color, line=dict(width=1, color=charts.INK)))
                fig_e.add_scatter(x=GAMMA_AXIS, y=[theory.expected_tokens(res["alpha"], g_) for g_ in GAMMA_AXIS],
                                  mode="lines", line=dict(dash="dash", color=color), showlegend=False,
                                  hovertemplate=f"theory at measured α = {res['alpha']:.2f}<extra></extra>")
                fig_s.add_scatter(x=[g_m], y=[res["speedup"]], mode="markers", showlegend=False,
                                  marker=dict(symbol="diamond", size=14, color=color, line=dict(width=1, color=charts.INK)),
                                  hovertemplate=f"measured wall-clock speedup, {label}: %{{y:.2f}}×<extra></extra>")
        fig_e.update_layout(title=f"Expected tokens per target pass: {theory.expected_tokens(alpha, gamma):.2f} at "
                                  f"γ = {gamma}", xaxis_title="γ", yaxis_title="tokens",
                            height=330, margin=dict(t=40, b=8), legend=dict(orientation="h", y=-0.3))
        fig_s.update_layout(title=f"Speedup: {theory.speedup(alpha, gamma, c, v):.2f}× at γ = {gamma}; "
                                  f"★ best γ = {best}", xaxis_title="γ", yaxis_title="speedup (×)", height=330,
                            margin=dict(t=40, b=8))
        fig_s.add_hline(y=1, line_dash="dash", line_color=charts.MUTED)
        left.plotly_chart(fig_e, key="ad_expected")
        right.plotly_chart(fig_s, key="ad_speedup")
        m = st.columns(3)
        m[0].metric("Optimal γ", best, help=f"The γ in 1…{GAMMA_AXIS[-1]} with the highest expected speedup.")
        m[1].metric(f"Expected tokens per pass at γ = {gamma}", f"{theory.expected_tokens(alpha, gamma):.2f}")
        m[2].metric(f"Speedup at γ = {gamma}", f"{theory.speedup(alpha, gamma, c, v):.2f}×",
                    help=f"Speedup at the optimum: {theory.speedup(alpha, best, c, v):.2f}×. "
                         + ("With this machine's v(γ): a pass over γ + 1 positions costs v(γ) one-token passes, "
                            "as measured here." if use_hw else
                            "With the paper's v = 1: a pass over γ + 1 positions costs one one-token pass."))
        if measured:
            st.caption("◆ measured on the live pair (at the γ it was run with); dashed: the formula at that drafter's "
                       "measured α. The speedup ◆ is wall-clock on this machine, so compare it with the curve when "
                       "*This machine's v(γ)* is on (under *Go deeper: the cost model*: the cost of one wide pass "
                       "measured here, in one-token passes) and c is the drafter's own.")
    layout.try_this(f"drag α from {TRY_ALPHA[0]} to {TRY_ALPHA[1]} and watch the starred best γ move right; "
                    "then drag c up: every draft costs c, accepted or not, so the best γ falls back.")
    with layout.deeper("the cost model behind the curves, and speedup against c"):
        alpha_cost_model.show(pair, profile, alpha, gamma, c_default)


explorer()

with layout.deeper("the paper's Table 1, recomputed (and its measured Table 2)"):
    alpha_paper.show(pair, s, profile)
with layout.deeper("the live pair, measured drafter by drafter"):
    alpha_measured.show(pair, s, profile)
with layout.deeper("hard tasks have easy stretches — α by kind of text"):
    alpha_by_kind.show(pair, s, profile)
with layout.deeper("fixed or adaptive γ — who picks the draft length?"):
    alpha_policies.show(pair, s, profile)
