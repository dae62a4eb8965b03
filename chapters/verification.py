"""Chapter: Why Verification Is Free. The cost of a round, the hardware fact behind "free", the γ+1
distributions of one real target pass, and the exact acceptance rules."""
import math

import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from specdec_core import speculative_generate, theory
from specdec_core.sampling import SamplingConfig
from ui import admission, charts, chips, layout, measure, models, settings

TOP_SHOWN = 5  # entries of p shown per position
GAMMAS = list(range(1, 17))

s = settings.current()
pair = models.require_pair()

st.header("Why Verification Is Free")
layout.intro(
    "A round costs γ cheap draft passes plus one target pass over γ+1 positions, and yields on average "
    "more than one token; the sliders below drive the paper's formulas, next to the same formulas fed with "
    "what a pass over γ+1 positions really costs on this machine. Further down is one real round: all "
    "γ+1 target distributions came out of a single forward pass.",
    "set α to 0.8 and move c from 0 to 0.3: the best γ shrinks and the speedup falls fast, because every "
    "extra draft costs c whether it is accepted or not.")

profile = measure.cost_profile(pair)
c_measured = profile.c
draft_label = next(iter(pair.drafts))

# --- the cost model ------------------------------------------------------------------------------
st.subheader("The cost of a round")
st.latex(r"\text{round cost} = \underbrace{\gamma\,c}_{\gamma\ \text{draft passes}} + "
         r"\underbrace{v(\gamma)}_{\text{one target pass over } \gamma+1 \text{ positions}}"
         r"\qquad E[\text{tokens per target pass}] = \frac{1-\alpha^{\gamma+1}}{1-\alpha}")
st.latex(r"\text{speedup} = \frac{E[\text{tokens}]}{\gamma c + v(\gamma)}\qquad"
         r"\text{the paper: } v(\gamma) = 1 \;\Rightarrow\; \frac{1-\alpha^{\gamma+1}}{(1-\alpha)(\gamma c + 1)}")
st.caption("Costs are in units of one single-position target pass. c = draft pass / target pass. "
           "α = probability a draft is accepted, assumed the same at every position. This machine's c and v(γ) "
           f"come {measure.pass_times(pair).describe()} (measured once per server process).")

st.session_state.setdefault("vf_gamma", s.gamma)
st.session_state.setdefault("vf_alpha", 0.8)
st.session_state.setdefault("vf_c", round(min(max(c_measured, 0.0), 1.0), 3))


def use_measured_c() -> None:
    st.session_state["vf_c"] = round(min(max(c_measured, 0.0), 1.0), 3)


@st.fragment
def cost_model() -> None:
    a, b, cc = st.columns(3)
    gamma = a.slider("γ (draft length)", 1, 16, key="vf_gamma")
    alpha = b.slider("α (acceptance rate)", 0.0, 0.99, step=0.01, key="vf_alpha")
    c = cc.slider("c (draft pass / target pass)", 0.0, 1.0, step=0.005, key="vf_c", format="%.3f")
    cc.caption(f"{layout.measured_badge()} this pair's c = **{c_measured:.3f}** ({draft_label})")
    cc.button("Use the measured c", key="vf_use_c", on_click=use_measured_c)

    expected = theory.expected_tokens(alpha, gamma)
    v = profile.v(gamma)
    paper = theory.walltime_improvement(alpha, gamma, c)
    here = theory.speedup(alpha, gamma, c, profile.v)
    m = st.columns(4)
    m[0].metric("Expected tokens per target pass", f"{expected:.2f}")
    m[1].metric("v(γ) measured here", f"{v:.2f}", help=f"One pass over {gamma + 1} positions / one pass over 1, "
                                                           "measured on this machine. The paper assumes 1.")
    m[2].metric("Speedup, paper's model (v = 1)", f"{paper:.2f}×")
    m[3].metric("Speedup with this machine's v(γ)", f"{here:.2f}×", delta=f"{here - paper:+.2f}× vs paper",
                delta_color="off")

    left, right = st.columns(2)
    fig = go.Figure()
    fig.add_scatter(x=GAMMAS, y=[theory.walltime_improvement(alpha, g, c) for g in GAMMAS], name="paper (v = 1)",
                    mode="lines+markers", line_color=charts.P_COLOR)
    fig.add_scatter(x=GAMMAS, y=[theory.speedup(alpha, g, c, profile.v) for g in GAMMAS],
                    name="this machine's v(γ)", mode="lines+markers", line_color=charts.RESIDUAL_COLOR)
    fig.add_vline(x=gamma, line_dash="dot", line_color=charts.MUTED)
    fig.add_hline(y=1, line_dash="dash", line_color=charts.MUTED, annotation_text="no gain")
    fig.update_layout(title=f"Speedup against γ (α = {alpha:.2f}, c = {c:.3f})", xaxis_title="γ",
                      yaxis_title="speedup (×)", height=340, margin=dict(t=40, b=8), legend=dict(orientation="h", y=-0.3))
    left.plotly_chart(fig, key="vf_speedup_gamma")

    cs = [i / 100 for i in range(0, 101)]
    fig = go.Figure()
    fig.add_scatter(x=cs, y=[theory.walltime_improvement(alpha, gamma, x) for x in cs], name="paper (v = 1)",
                    line_color=charts.P_COLOR)
    fig.add_scatter(x=cs, y=[theory.speedup(alpha, gamma, x, profile.v) for x in cs], name="this machine's v(γ)",
                    line_color=charts.RESIDUAL_COLOR)
    fig.add_vline(x=min(c_measured, 1.0), line_dash="dot", line_color=chips.KINDS["accepted"].color,
                  annotation_text=f"measured c = {c_measured:.3f}")
    fig.add_hline(y=1, line_dash="dash", line_color=charts.MUTED)
    fig.update_layout(title=f"Speedup against c (α = {alpha:.2f}, γ = {gamma})", xaxis_title="c",
                      yaxis_title="speedup (×)", height=340, margin=dict(t=40, b=8), legend=dict(orientation="h", y=-0.3))
    right.plotly_chart(fig, key="vf_speedup_c")


cost_model()

# --- "free" is a GPU fact ------------------------------------------------------------------------
st.subheader("“Free” is a fact about GPUs")
st.markdown(
    "The paper's formula charges the verification pass as **one** pass, however many positions it covers: "
    "on an accelerator that is waiting on memory, the extra positions ride along on arithmetic that would "
    "otherwise sit idle. On this machine the factor v(γ) is measured instead. When v(γ) grows with γ, "
    "every round costs more than the paper's model says, and the speedup a laptop shows is smaller; the "
    "algorithm and its exactness are unchanged.")
fig = go.Figure()
fig.add_scatter(x=GAMMAS, y=[profile.v(g) for g in GAMMAS], name=f"measured here ({pair.device})",
                mode="lines+markers", line_color=charts.RESIDUAL_COLOR)
fig.add_scatter(x=GAMMAS, y=[1] * len(GAMMAS), name="the paper's assumption, v = 1", mode="lines",
                line_dash="dash", line_color=charts.P_COLOR)
fig.add_scatter(x=GAMMAS, y=[g + 1 for g in GAMMAS], name="no parallelism at all, v = γ + 1", mode="lines",
                line_dash="dot", line_color=charts.MUTED)
fig.update_layout(title="v(γ): one target pass over γ+1 positions, in single-position passes", xaxis_title="γ",
                  yaxis_title="v(γ)", height=320, margin=dict(t=40, b=8), legend=dict(orientation="h", y=-0.3))
st.plotly_chart(fig, key="vf_v")


# --- one real round ------------------------------------------------------------------------------
@admission.cached(max_entries=64, what="this round")
def one_round(pair_id: str, prompt_ids: tuple[int, ...], gamma: int, temperature: float, top_k: int,
              top_p: float, seed: int, _pair):
    """The trace of the first round of a speculative generation (the core's data, nothing re-derived)."""
    window = _pair.context_length - len(prompt_ids)
    result = speculative_generate(_pair.target, _pair.draft, list(prompt_ids), gamma=gamma,
                                  max_new_tokens=max(1, min(gamma + 1, window)),
                                  sampling=SamplingConfig.from_controls(temperature, top_k, top_p),
                                  seed=seed, max_rounds=1, trace=True)
    return result.rounds[0]


st.subheader("One target pass, γ+1 distributions")
ids, problem = models.prompt_problem(pair, s)
if problem:
    st.warning(problem, icon=":material/edit_note:")
else:
    with st.spinner("Running one round…"):
        r = one_round(models.pair_key(pair), tuple(ids), s.gamma, s.temperature, s.top_k, s.top_p, s.effective_seed, pair)
    n = len(r.draft_tokens)
    tok = chips.token_strings(pair.tokenizer, r.draft_tokens)
    kinds = ["accepted" if i < r.n_accepted else "rejected" if i == r.n_accepted else "unchecked" for i in range(n)]
    st.markdown(f"Sidebar prompt and settings (γ = {s.gamma}, {s.describe_sampling()}, seed {s.seed}). The drafter "
                f"proposed {n} tokens in {len(r.draft_pass_s)} passes ({sum(r.draft_pass_s) * 1e3:.2f} ms); "
                f"the target then produced all **{n + 1} distributions** below in **one** pass "
                f"({r.target_pass_s * 1e3:.2f} ms).")
    chips.show(chips.chips(tok + [pair.tokenizer.decode([r.next_token])], kinds + [r.next_kind]))
    cols = min(n + 1, 4)
    rows = math.ceil((n + 1) / cols)
    titles = [f"p at position {i + 1} · draft {charts.token_label(tok[i])}" if i < n else
              f"p at position {n + 1} (after the last draft)" for i in range(n + 1)]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.12, vertical_spacing=0.12)
    for i, top in enumerate(r.p_top):
        top = top[:TOP_SHOWN][::-1]
        draft = r.draft_tokens[i] if i < n else None
        color = [(chips.KINDS[kinds[i]].color if i < n and t == draft else charts.P_COLOR) for t, _ in top]
        fig.add_bar(x=[p for _, p in top], y=charts.labels_for(pair.tokenizer, [t for t, _ in top]), orientation="h",
                    marker_color=color, showlegend=False, hovertemplate="%{y}: %{x:.4f}<extra></extra>",
                    row=i // cols + 1, col=i % cols + 1)
    fig.update_xaxes(range=[0, 1])
    fig.update_yaxes(type="category")
    fig.update_annotations(font_size=11)
    fig.update_layout(height=220 * rows + 40, margin=dict(t=40, b=8, l=8, r=8))
    st.plotly_chart(fig, key="vf_dists")
    st.caption("Top entries of the target's p at each position. A bar in the draft's verdict colour marks the "
               "token the drafter proposed there (if it is among the top entries). Nothing here needed a second "
               "target pass.")

# --- the rules ----------------------------------------------------------------------------------
st.subheader("The acceptance rules, exactly")
g, smp = st.columns(2)
with g:
    st.markdown("**Greedy (temperature 0).** Both p and q put all their mass on one token.")
    st.latex(r"\text{accept } x_i \iff x_i = \arg\max p_i")
    st.markdown("At the first draft that is not the target's argmax, emit the target's argmax instead; if all "
                "pass, emit the argmax of p at position γ+1. Every token is the one plain greedy decoding would "
                "pick, so the text is identical token for token.")
with smp:
    st.markdown("**Sampling.** Draw a uniform u for each draft, left to right:")
    st.latex(r"\text{accept } x_i \text{ while } u_i < \frac{p_i(x_i)}{q_i(x_i)}\quad (u_i \sim U(0,1))")
    st.markdown("At the first rejection, draw the corrective token from the residual at that position:")
    st.latex(r"x \sim \operatorname{norm}\big(\max(0,\ p - q)\big)")
    st.markdown("If every draft passes, draw a bonus token from p itself at position γ+1 (no residual: there "
                "is no draft there to correct).")
st.markdown("**Why the combination samples exactly from p.** A token y comes out of the accept branch with "
            "probability q(y) · min(1, p(y)/q(y)) = min(p(y), q(y)). A rejection happens with the probability "
            "that is left over, 1 − Σ min(p, q) = Σ max(0, p − q), and then y is drawn with probability "
            "max(0, p(y) − q(y)) / Σ max(0, p − q). Adding the two routes:")
st.latex(r"P(y) = \min\big(p(y), q(y)\big) + \max\big(0,\ p(y) - q(y)\big) = p(y)")
st.markdown("So whatever the drafter proposes, each emitted token has exactly the target's distribution; a "
            "good drafter only makes the first route more likely, which is where the speed comes from.")
