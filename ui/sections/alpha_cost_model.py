"""The α Dial → Go deeper: the cost model behind the curves (its formulas, this machine's c and v(γ)), and
speedup against c. Drawn inside the α Dial's explorer fragment, so it follows the α and γ sliders."""
import plotly.graph_objects as go
import streamlit as st

from specdec_core import theory
from ui.server import measure
from ui.widgets import charts, chips


def use_measured_c(c_default: float) -> None:
    st.session_state["ad_c"] = c_default


def show(pair, profile, alpha: float, gamma: int, c_default: float) -> None:
    st.markdown("A round costs γ draft passes, each c of a target pass (c = draft pass ÷ target pass), plus the one "
                "target pass over γ + 1 positions, v(γ) single passes (The Serial Tax measured v; the paper takes "
                "v = 1). If each draft is accepted with probability α, independently, a round yields on average:")
    st.markdown("**Four names, one story.** At one position, a draft from q passes with probability β = Σ min(p, q) "
                "(A Round worked it by hand). The paper's α is β's expectation over the positions of a text: the α "
                "of these curves. A run estimates it as *measured α*, the mean of min(1, p/q) over the drafts the "
                "target judged. The *acceptance rate*, accepted ÷ drafted, is a different ratio: it also counts the "
                "drafts after a rejection, which were never judged, so it tends to sit below measured α.")
    st.latex(r"E[\text{tokens per target pass}] = \frac{1-\alpha^{\gamma+1}}{1-\alpha}\qquad"
             r"\text{speedup} = \frac{E[\text{tokens}]}{\gamma c + v(\gamma)}\qquad"
             r"\text{the paper: } v = 1")
    st.caption("Costs in units of one single-position target pass. α is assumed the same at every position; the "
               "measured runs (Go deeper: the live pair) show how far that holds. This machine's c and v(γ) come "
               f"{measure.pass_times(pair).describe()} (measured once per server process). With unlimited free "
               f"drafts a round would yield at most 1/(1 − α) = {1 / (1 - alpha):.2f} tokens per pass.")
    t, b = st.columns(2, vertical_alignment="bottom")
    t.toggle("This machine's v(γ)", key="ad_hw",
             help="Off: the paper's model, a pass over γ+1 positions costs one pass (v = 1). "
                  "On: the v(γ) measured here.")
    b.button(f"Use the measured c ({profile.c:.3f})", key="ad_use_c", on_click=use_measured_c, args=(c_default,))
    cs = [i / 100 for i in range(0, 101)]
    fig_c = go.Figure()
    fig_c.add_scatter(x=cs, y=[theory.speedup(alpha, gamma, x, 1.0) for x in cs], name="paper (v = 1)",
                      line_color=charts.P_COLOR)
    fig_c.add_scatter(x=cs, y=[theory.speedup(alpha, gamma, x, profile.v) for x in cs], name="this machine's v(γ)",
                      line_color=charts.RESIDUAL_COLOR)
    fig_c.add_vline(x=min(profile.c, 1.0), line_dash="dot", line_color=chips.KINDS["accepted"].color,
                    annotation_text=f"measured c = {profile.c:.3f}")
    fig_c.add_hline(y=1, line_dash="dash", line_color=charts.MUTED)
    fig_c.update_layout(title=f"Speedup against c (α = {alpha:.2f}, γ = {gamma}): every draft costs c, accepted "
                              "or not", xaxis_title="c", yaxis_title="speedup (×)", height=320, margin=dict(t=40, b=8),
                        legend=dict(orientation="h", y=-0.3))
    st.plotly_chart(fig_c, key="ad_speedup_c")
