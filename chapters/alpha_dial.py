"""Chapter: The α Dial. The paper's formulas for expected tokens and speedup against γ and α (checked
against its Table 1), then the live pair: measured α, tokens per pass and speedup, per drafter, and
acceptance by draft position."""
import plotly.graph_objects as go
import streamlit as st

from specdec_core import theory
from specdec_core.analysis import drafter_rounds
from specdec_core.analysis.policy_compare import PLAIN, calibration_rounds, compare_policies, summary
from specdec_core.analysis.round_stats import calibration, measured_alpha
from specdec_core.analysis.task_kinds import KINDS, alpha_by_kind
from specdec_core.policies import ADAPTIVE, POLICIES, Costs, describe, with_costs
from ui.content import paper
from ui.server import admission, measure, models, operator
from ui.state import demo, settings
from ui.widgets import charts, chips, layout, tables

GAMMA_AXIS = list(range(1, 21))
TRY_ALPHA = (0.6, 0.95)  # the intro's suggestion: drag α across this range
CALIBRATION_GAMMA = 8  # the calibration chart's rounds draft this many, so every confidence gets judged
ALPHAS = (0.5, 0.6, 0.7, 0.8, 0.9)
TOKENS_PER_GENERATION = 96  # the measured run strings rounds together from generations of this length
TIMED_TOKENS, TIMING_REPEATS = 64, 3  # the wall-clock comparison: tokens per run, interleaved repetitions
PAPER_TABLE_1, PAPER_TABLE_2 = paper.TABLE_1, paper.TABLE_2
DRAFTER_COLORS = [chips.KINDS["accepted"].color, chips.KINDS["rejected"].color, chips.KINDS["bonus"].color]

s = settings.current()
pair = models.require_pair()

st.header("The α Dial")
layout.intro(
    "Everything in the paper's analysis comes down to α, the chance that the target accepts a draft, and "
    "γ, how many drafts a round proposes: the curves below are its formulas, with the best γ for each α "
    "marked. Then the live pair is run for real, once per drafter, and its measured α, tokens per pass and "
    "speedup are laid over the theory.",
    f"drag α from {TRY_ALPHA[0]} to {TRY_ALPHA[1]} and watch the starred optimal γ move right; then press **Run** below and "
    "compare the distilled drafter's α with the corpus-only one's.")

profile = measure.cost_profile(pair)
c_default = round(min(max(profile.c, 0.0), 1.0), 3)
st.session_state.setdefault("ad_alpha", 0.8)
st.session_state.setdefault("ad_gamma", s.gamma)
st.session_state.setdefault("ad_c", c_default)
st.session_state.setdefault("ad_hw", False)

# --- the cost model (these α / γ / c controls are the app's one set: the race reads them too) -------------
st.subheader("The cost of a round")
st.markdown("A round costs γ draft passes, each c of a target pass (c = draft pass ÷ target pass), plus the one "
            "target pass over γ + 1 positions, v(γ) single passes (The Serial Tax measured v; the paper takes "
            "v = 1). If each draft is accepted with probability α, independently, a round yields on average:")
st.latex(r"E[\text{tokens per target pass}] = \frac{1-\alpha^{\gamma+1}}{1-\alpha}\qquad"
         r"\text{speedup} = \frac{E[\text{tokens}]}{\gamma c + v(\gamma)}\qquad"
         r"\text{the paper: } v = 1")
st.caption("Costs in units of one single-position target pass. α is assumed the same at every position; the "
           "measured runs further down show how far that holds. This machine's c and v(γ) come "
           f"{measure.pass_times(pair).describe()} (measured once per server process).")


def use_measured_c() -> None:
    st.session_state["ad_c"] = c_default


@st.fragment
def explorer() -> None:
    a, g, cc, hw = st.columns([3, 3, 3, 2], vertical_alignment="bottom")
    alpha = a.slider("α (acceptance rate)", 0.0, 0.99, step=0.01, key="ad_alpha")
    gamma = g.slider("γ (draft length)", 1, 16, key="ad_gamma")
    c = cc.slider("c (draft pass / target pass)", 0.0, 1.0, step=0.005, key="ad_c", format="%.3f",
                  help=f"Measured for this pair: {profile.c:.3f}.")
    cc.button("Use the measured c", key="ad_use_c", on_click=use_measured_c)
    use_hw = hw.toggle("This machine's v(γ)", key="ad_hw",
                       help="Off: the paper's model, a pass over γ+1 positions costs one pass (v = 1). "
                            "On: the v(γ) measured here.")
    v = profile.v if use_hw else 1.0
    best = theory.optimal_gamma(alpha, c, v, max_gamma=GAMMA_AXIS[-1])

    m = st.columns(5)
    m[0].metric("Optimal γ", best, help=f"The γ in 1…{GAMMA_AXIS[-1]} with the highest expected speedup.")
    m[1].metric("Speedup at the optimum", f"{theory.speedup(alpha, best, c, v):.2f}×")
    m[2].metric(f"Expected tokens per pass at γ = {gamma}", f"{theory.expected_tokens(alpha, gamma):.2f}")
    m[3].metric(f"Speedup at γ = {gamma}", f"{theory.speedup(alpha, gamma, c, v):.2f}×")
    m[4].metric("Ceiling 1/(1−α)", f"{1 / (1 - alpha):.2f}", help="Tokens per pass with unlimited free drafts.")

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
        for (label, res), color in zip(measured["results"].items(), DRAFTER_COLORS):
            g_m = measured["gamma"]
            fig_e.add_scatter(x=[g_m], y=[res["tokens_per_pass"]], mode="markers", name=f"measured: {label}",
                              marker=dict(symbol="diamond", size=14, color=color, line=dict(width=1, color=charts.INK)))
            fig_e.add_scatter(x=GAMMA_AXIS, y=[theory.expected_tokens(res["alpha"], g_) for g_ in GAMMA_AXIS],
                              mode="lines", line=dict(dash="dash", color=color), showlegend=False,
                              hovertemplate=f"theory at measured α = {res['alpha']:.2f}<extra></extra>")
            fig_s.add_scatter(x=[g_m], y=[res["speedup"]], mode="markers", showlegend=False,
                              marker=dict(symbol="diamond", size=14, color=color, line=dict(width=1, color=charts.INK)),
                              hovertemplate=f"measured wall-clock speedup, {label}: %{{y:.2f}}×<extra></extra>")
    fig_e.update_layout(title="Expected tokens per target pass", xaxis_title="γ", yaxis_title="tokens",
                        height=380, margin=dict(t=40, b=8), legend=dict(orientation="h", y=-0.25))
    fig_s.update_layout(title=f"Speedup (c = {c:.3f}, {'this machine' if use_hw else 'paper'}'s v); ★ = optimal γ",
                        xaxis_title="γ", yaxis_title="speedup (×)", height=380, margin=dict(t=40, b=8))
    fig_s.add_hline(y=1, line_dash="dash", line_color=charts.MUTED)
    left.plotly_chart(fig_e, key="ad_expected")
    right.plotly_chart(fig_s, key="ad_speedup")
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
    if measured:
        st.caption("◆ measured on the live pair (at the γ it was run with); dashed: the formula at that drafter's "
                   "measured α. The speedup ◆ is wall-clock on this machine, so compare it with the curve when "
                   "*This machine's v(γ)* is on and c is the drafter's own.")


explorer()

# --- the paper's Table 1, recomputed -------------------------------------------------------------
st.subheader("A check you can see: the paper's Table 1, recomputed")
rows = []
for alpha, gamma, ops, speed in PAPER_TABLE_1:
    ours_ops = theory.expected_operations_increase(alpha, gamma, 0.0)
    ours_speed = theory.walltime_improvement(alpha, gamma, 0.0)
    rows.append({"α": alpha, "γ": gamma, "operations (paper)": ops, "operations (this app)": round(ours_ops, 4),
                 "speed (paper)": speed, "speed (this app)": round(ours_speed, 4),
                 "match": "✓" if (round(ours_ops, 2), round(ours_speed, 2)) == (ops, speed) else "✗"})
tables.show(rows, key="ad_table1")
st.caption(f"{layout.paper_badge()} Leviathan, Kalman & Matias (2022), Table 1: total arithmetic and speed "
           "against plain decoding for several α and γ, with free drafts (c = ĉ = 0). *This app* columns come "
           "from `specdec_core.theory` (expected_operations_increase, walltime_improvement); ✓ means they agree "
           "to the paper's two decimals.")
with st.expander("The paper's measured T5-XXL results (Table 2), next to the formula with free drafts"):
    tables.show([{"task": t, "drafter": d, "temperature": temp, "γ": g_, "α": a_, "speed (paper, measured)": sp,
                   "E[tokens per pass] = speed if c = 0": round(theory.expected_tokens(a_, g_), 2)}
                  for t, d, temp, g_, a_, sp in PAPER_TABLE_2], key="ad_table2")
    st.caption(f"{layout.paper_badge()} T5-XXL (11B) target on a TPU-v4. The measured speed stays below the "
               "c = 0 ceiling because real drafters cost something: larger drafters agree more (higher α) but "
               "cost more (higher c), and T5-small wins.")

# --- measured on the live pair -------------------------------------------------------------------
st.subheader("Measured: the live pair, drafter by drafter")
ids = models.require_prompt_ids(pair)
max_rounds = max(10, operator.rules().max_rounds // 10 * 10)  # the operator's bound on one request
st.session_state["ad_rounds"] = min(st.session_state.get("ad_rounds", 60), max_rounds)
n_rounds = st.slider("Rounds per drafter", 10, max_rounds, step=10, key="ad_rounds")
gamma_run = st.session_state["ad_gamma"]
st.caption(f"Runs {n_rounds} rounds with each of the pair's {len(pair.drafts)} drafters at γ = {gamma_run} (the "
           f"γ slider above), {s.describe_sampling()}, on the sidebar prompt, then times plain decoding of the "
           "same prompt for the speedup.")
signature = (models.pair_key(pair), s.signature(), gamma_run, n_rounds)


def run_measurement(progress) -> dict:
    budget = max(1, min(pair.context_length - len(ids), TOKENS_PER_GENERATION))
    return {"gamma": gamma_run, "results": drafter_rounds.measure_drafters(
        pair.target, pair.drafts, s.request(ids, budget, "model"), gamma_run, n_rounds, min(budget, TIMED_TOKENS),
        TIMING_REPEATS, pacing=admission.pacing("the measurement", progress))}


if demo.run(f"Run {n_rounds} rounds per drafter", key="ad_run", state="ad_measured", signature=signature,
            work=run_measurement, what="the measurement", progress_text="Running rounds…", type="primary",
            icon=":material/play_arrow:", slot=False):
    st.rerun()  # redraw the theory charts with the measured points

measured = demo.latest("ad_measured", signature, stale="note", again="Run")
if not measured:
    st.caption("Press **Run** to measure; the results are laid over the charts above.")
else:
    g_m = measured["gamma"]
    table = []
    for label, res in measured["results"].items():
        c_label = res["c"]  # from this measurement's own draft passes
        table.append({"drafter": label, "measured α": round(res["alpha"], 3),
                      "tokens per target pass (measured)": round(res["tokens_per_pass"], 3),
                      "tokens per target pass (formula at measured α)": round(theory.expected_tokens(res["alpha"], g_m), 3),
                      "c (measured)": round(c_label, 3),
                      "speedup (measured, wall clock)": round(res["speedup"], 2),
                      "range over the runs": f"{res['measured'].low:.2f}–{res['measured'].high:.2f}",
                      "speedup (formula, paper's v = 1)": round(theory.walltime_improvement(res["alpha"], g_m, c_label), 2),
                      "speedup (formula, this machine's v)": round(theory.speedup(res["alpha"], g_m, c_label, profile.v), 2),
                      "rounds": res["rounds"]})
    tables.show(table, key="ad_measured_table")
    st.caption(f"{layout.measured_badge()} γ = {g_m}. Measured α is the mean of min(1, p(x)/q(x)) over every "
               "draft the target judged; its expectation is the paper's α = Σ min(p, q). The wall-clock speedup "
               f"comes from {TIMED_TOKENS}-token runs of plain decoding and each drafter, interleaved "
               f"{TIMING_REPEATS} times over (median; prompt processing excluded), and c from those runs' draft passes.")
    widest = max(measured["results"].items(), key=lambda item: item[1]["measured"].spread)
    demo.spread_note(widest[1]["measured"], f"Wall-clock speedup with the {widest[0]}, the widest spread here")

    fig = go.Figure()
    for (label, res), color in zip(measured["results"].items(), DRAFTER_COLORS):
        frame_ = res["by_position"]
        fig.add_scatter(x=frame_["position"].tolist(), y=frame_["rate"].tolist(), mode="lines+markers",
                        name=f"{label}: accepted / reached",
                        line_color=color, customdata=frame_[["reached", "accepted"]].to_numpy().tolist(),
                        hovertemplate="position %{x}: %{y:.2f} (%{customdata[1]} of %{customdata[0]} reached)<extra></extra>")
        fig.add_scatter(x=frame_["position"].tolist(), y=[res["alpha"]] * len(frame_), mode="lines",
                        line=dict(dash="dot", color=color),
                        name=f"{label}: i.i.d. model (flat at measured α)")
    fig.update_layout(title="Acceptance by draft position", xaxis_title="draft position i (1 … γ)",
                      yaxis_title="P(accept x_i | x_1…x_{i−1} accepted)", yaxis_range=[0, 1.02], height=430,
                      margin=dict(t=40, b=8), legend=dict(orientation="h", y=-0.42), xaxis=dict(dtick=1))
    st.plotly_chart(fig, key="ad_by_position")
    st.markdown(
        "The paper's formulas assume every draft is accepted independently with one probability α, which "
        "would make each line flat. Position 1 is reached in every round, so it is measured best. Later "
        "positions are reached only after the earlier drafts passed, which happens more in predictable "
        "stretches of text: there acceptance tends to run higher than α, and the i.i.d. model "
        "underestimates long accepted runs. Where the drafter's own guesses start to drift from the "
        "target, acceptance falls off instead. Few rounds reach the last positions, so read those points "
        "with their counts (hover).")
    ranked = sorted(((res["alpha"], label) for label, res in measured["results"].items()), reverse=True)
    if len(ranked) > 1:
        (best_alpha, best_label), (worst_alpha, worst_label) = ranked[0], ranked[-1]
        if best_alpha - worst_alpha >= 0.01:
            st.success(f"**γ is tunable, α is earned.** Same target, same γ, same prompt: the *{best_label}* "
                       f"reaches α = {best_alpha:.2f}, the *{worst_label}* {worst_alpha:.2f}. γ is one slider; α "
                       "comes from how closely the drafter was trained to imitate the target.", icon=":material/school:")
        else:
            st.info(f"**γ is tunable, α is earned.** Here the *{best_label}* and the *{worst_label}* measure almost "
                    f"the same α ({best_alpha:.2f} and {worst_alpha:.2f}): on this prompt and these settings, the "
                    "extra training did not buy agreement. Try more rounds or another prompt.", icon=":material/school:")

# --- hard tasks are easier -----------------------------------------------------------------------------
st.subheader("Hard tasks are easier: α by kind of text")
st.markdown(
    "The paper's observation: even a hard task has easy stretches, and the drafter agrees more where the "
    "text is formulaic, so speculation pays most where the text is predictable. Below, the live pair's α is "
    "measured on three kinds of passage: *formulaic* (stage directions and stock replies), *self-repeating* "
    "(the same lines three times), and *free verse* (Whitman: no metre, no rhyme, no refrain). α here is "
    "teacher-forced Σ min(p, q), averaged over every position of the passage, with the sidebar's sampling "
    "settings.")
kinds_signature = (models.pair_key(pair), s.sampling)
demo.run("Measure α by kind of text", key="ad_kinds_run", state="ad_kinds", signature=kinds_signature,
         work=lambda progress: {"kinds": alpha_by_kind(pair.target, pair.draft, pair.tokenizer, s.sampling,
                                                       context_length=pair.context_length,
                                                       hold=demo.hold("the α by kind"))},
         what="the α by kind", slot=False, icon=":material/text_fields:")
stored_kinds = demo.latest("ad_kinds", kinds_signature, stale="note", again="Measure α by kind of text")
by_kind = stored_kinds["kinds"] if stored_kinds else None
if not by_kind:
    st.caption("Press the button: one teacher-forced pass of each model over each passage (a second or two).")
else:
    tables.show([{"kind of text": kind, "measured α": round(res["alpha"], 3),
                  "greedy agreement": round(res["alpha_greedy"], 3), "positions": res["positions"]}
                 for kind, res in by_kind.items()], key="ad_kinds_table")
    ranked = sorted(by_kind, key=lambda k: by_kind[k]["alpha"], reverse=True)
    spread = by_kind[ranked[0]]["alpha"] - by_kind[ranked[-1]]["alpha"]
    st.markdown(f"{layout.measured_badge()} Highest α: *{ranked[0]}* ({by_kind[ranked[0]]['alpha']:.2f}); lowest: "
                f"*{ranked[-1]}* ({by_kind[ranked[-1]]['alpha']:.2f}), a spread of {spread:.2f}. "
                + ("The formulaic or repeated text leads, as the paper observed." if ranked[-1] == "free verse" else
                   "Here the free verse does not come last: a pair trained on plays finds its own genre's stock "
                   "phrases no easier than plain English, a reminder that 'easy' means easy for this drafter.")
                + " Expand a passage to read it.")
    with st.expander("The three passages"):
        for kind, text in KINDS.items():
            st.markdown(f"**{kind}**")
            st.code(text, language=None)

# --- fixed against adaptive γ ------------------------------------------------------------------------
st.subheader("Fixed or adaptive γ: who picks the draft length?")
# vLLM: dynamic speculative decoding = `num_speculative_tokens_per_batch_size`, a batch-size -> K table
# (vllm-project/vllm PR #32374, merged); the acceptance/goodput-driven length of RFC #4565 was closed unmerged.
st.markdown(
    "The optimal γ above assumes one α for the whole text, but α changes from token to token: a stage "
    "direction or a repeated refrain is easy to guess, a fresh line of verse is not. Serving stacks therefore "
    "choose γ as they go. Here the fixed γ values race five adaptive policies on the same prompts, with the "
    "same exact rule (so every one of them still produces the target's distribution):\n"
    "- **heuristic schedule** (transformers' assisted generation): γ + 2 after a round that accepted every draft, "
    "γ − 1 after any other;\n"
    "- **confidence stop** (transformers' `assistant_confidence_threshold`, llama.cpp's `--draft-p-min`): keep "
    "drafting while the drafter is confident in its next token;\n"
    "- **acceptance-driven** (proposed for vLLM but not merged there): from the acceptance measured so far at "
    "each draft position, pick the γ that maximises E / (γc + v(γ)). What vLLM did merge, its *dynamic "
    "speculative decoding*, reads γ from a table of batch sizes the operator writes, shrinking γ as the batch "
    "grows;\n"
    "- **hybrid**: the acceptance-driven γ, with the confidence stop ending a round early;\n"
    "- **calibrated stop**: learns, during the generation, how often drafts of each margin are accepted, and "
    "drafts on only while the next draft's predicted acceptance is worth its cost.")
pc = st.columns([3, 2, 2], vertical_alignment="bottom")
fixed = pc[0].multiselect("Fixed γ to compare", list(range(1, 11)), default=[2, 4, 6], key="ad_pol_fixed",
                          max_selections=5)
repeats = pc[1].slider("Repetitions (interleaved)", 1, 5, 3, key="ad_pol_repeats")
n_prompts = pc[2].slider("Prompts", 1, len(settings.PRESETS), 3, key="ad_pol_prompts",
                         help="The sidebar prompt first, then the presets.")
policy_tokens = min(s.max_new_tokens, 64)
prompt_texts = list(dict.fromkeys([s.prompt, *settings.PRESETS.values()]))[:n_prompts]
st.caption(f"Each contestant decodes {policy_tokens} tokens from each of {len(prompt_texts)} prompts, "
           f"{s.describe_sampling()}; the contestants run in alternating order ({repeats} repetitions) and each "
           "speedup is the median over repetitions, with the lowest and highest beside it.")
policy_signature = (models.pair_key(pair), s.signature(), tuple(fixed), repeats, n_prompts)


def run_policies(progress) -> dict:
    contestants = {f"fixed γ = {g_}": g_ for g_ in sorted(fixed)}
    planning = Costs.from_profile(profile)  # this machine's c and v, fixed while the server runs
    contestants.update({describe(POLICIES[name]()): with_costs(POLICIES[name](), planning) for name in ADAPTIVE})
    prompts = [pair.tokenizer.encode(t)[-(pair.context_length - policy_tokens):] or [0] for t in prompt_texts]
    results = compare_policies(pair.target, pair.draft, prompts, contestants, policy_tokens, s.sampling, s.seed,
                               repeats, hold=demo.hold("the policy race"),
                               progress=lambda f, text: progress(0.95 * f, text))
    progress(0.95, "Tracing the drafter's confidence for the calibration chart…")
    with admission.slot("the calibration chart"):
        traced = calibration_rounds(pair.target, pair.draft, prompts, CALIBRATION_GAMMA, policy_tokens, s.sampling, s.seed)
    return {"rows": summary(results, planning),
            "fixed": {f"fixed γ = {g_}": g_ for g_ in fixed}, "calibration": traced}


demo.run("Race fixed and adaptive γ", key="ad_pol_run", state="ad_policies", signature=policy_signature,
         work=run_policies, what="the policy race", progress_text="Racing the policies…", slot=False,
         type="primary", icon=":material/play_arrow:", disabled=not fixed)
raced = demo.latest("ad_policies", policy_signature, stale="note", again="Race fixed and adaptive γ")
if not raced:
    st.caption("Press **Race fixed and adaptive γ** to measure; it takes a few seconds per repetition.")
else:
    rows = [r for r in raced["rows"] if r["policy"] != PLAIN]
    fixed_rows = [r for r in rows if r["policy"] in raced["fixed"]]
    alpha_all = sum(r["alpha"] for r in fixed_rows) / len(fixed_rows) if fixed_rows else rows[0]["alpha"]
    fig = go.Figure()
    fig.add_scatter(x=GAMMA_AXIS[:12], y=[theory.speedup(alpha_all, g_, profile.c, profile.v) for g_ in GAMMA_AXIS[:12]],
                    mode="lines", name=f"theory at α = {alpha_all:.2f} (this machine's c and v)",
                    line=dict(color=charts.MUTED, dash="dash"))
    for r in rows:
        is_fixed = r["policy"] in raced["fixed"]
        x = raced["fixed"][r["policy"]] if is_fixed else r["mean_drafted"]
        fig.add_scatter(x=[x], y=[r["speedup"]], mode="markers", name=r["policy"],
                        error_y=dict(type="data", symmetric=False, array=[r["speedup_high"] - r["speedup"]],
                                     arrayminus=[r["speedup"] - r["speedup_low"]]),
                        marker=dict(symbol="circle" if is_fixed else "star", size=12 if is_fixed else 16,
                                    line=dict(width=1, color=charts.INK)),
                        hovertemplate=f"{r['policy']}: %{{y:.2f}}× (range {r['speedup_low']:.2f}–"
                                      f"{r['speedup_high']:.2f}), {r['mean_drafted']:.1f} drafts per round<extra></extra>")
    fig.add_hline(y=1, line_dash="dot", line_color=charts.MUTED)
    fig.update_layout(title="Measured speedup over plain decoding: fixed γ (●) and adaptive policies (★, at their "
                            "mean drafts per round)", xaxis_title="γ (drafts per round)", yaxis_title="speedup (×)",
                      height=420, margin=dict(t=40, b=8), legend=dict(orientation="h", y=-0.3), xaxis=dict(dtick=1))
    st.plotly_chart(fig, key="ad_pol_chart")
    tables.show([{"policy": r["policy"], "speedup (median)": round(r["speedup"], 2),
                   "lowest–highest": f"{r['speedup_low']:.2f}–{r['speedup_high']:.2f}",
                   "mean acceptance length": round(r["mean_acceptance_length"], 2),
                   "drafts per round": round(r["mean_drafted"], 2), "α": round(r["alpha"], 3),
                   "per-position acceptance": " ".join(f"{x:.2f}" for x in r["per_position_acceptance_rate"][:8]),
                   "oracle bound (cost model)": round(r["oracle_speedup"], 2)} for r in rows],
                key="ad_pol_table")
    best_fixed = max(fixed_rows, key=lambda r: r["speedup"]) if fixed_rows else None
    best_adaptive = max((r for r in rows if r not in fixed_rows), key=lambda r: r["speedup"])
    if best_fixed:
        verdict = "beat" if best_adaptive["speedup"] > best_fixed["speedup_high"] else (
            "lost to" if best_adaptive["speedup"] < best_fixed["speedup_low"] else "matched (within the spread)")
        st.caption(f"{layout.measured_badge()} The best adaptive policy here, *{best_adaptive['policy']}* "
                   f"({best_adaptive['speedup']:.2f}×), {verdict} the best fixed γ, *{best_fixed['policy']}* "
                   f"({best_fixed['speedup']:.2f}×). Mean acceptance length is tokens per target pass (the "
                   "accepted drafts plus the corrective or bonus token); the oracle bound is the cost model's "
                   "speedup had every round drafted exactly the drafts that were accepted, a ceiling no policy "
                   "that cannot see the verdict can reach. The machine is shared: a wide range is a finding "
                   "about the machine, not about the policy. The sidebar's *adaptive default* for this drafter "
                   f"is *{describe(POLICIES[pair.adaptive_policy()]())}*"
                   + (f", the adaptive policy that measured best against every fixed γ in the benchmark "
                      f"(`specdec bench-policies --record`, {pair.adaptive_choices['draft']['when']})."
                      if "draft" in pair.adaptive_choices else ", the built-in choice (not measured for this pair)."))

    st.markdown("**Why a confidence stop works, or does not, for this drafter.** A confidence stop pays off "
                "only if the drafter's confidence predicts the target's verdict: low confidence should mean "
                "likely rejection. The chart bins every draft the target judged by the drafter's own confidence "
                "in it (from its raw distribution, before any temperature) and shows how often the target "
                "accepted drafts in each bin.")
    signal = st.radio("Confidence signal", ["margin", "top"], horizontal=True, key="ad_pol_signal",
                      format_func={"margin": "top-1 − top-2 margin", "top": "top probability"}.get)
    cal = calibration(raced["calibration"], signal, bins=8)
    fig_c = go.Figure()
    fig_c.add_bar(x=[f"{lo:.3f}–{hi:.3f}" for lo, hi in zip(cal["bin_low"], cal["bin_high"])],
                  y=cal["acceptance"].tolist(), text=[f"{a:.2f} (n={n})" for a, n in zip(cal["acceptance"], cal["drafts"])],
                  textposition="outside", marker_color=charts.P_COLOR, name="target's acceptance")
    overall = measured_alpha(raced["calibration"])
    fig_c.add_hline(y=overall, line_dash="dash", line_color=charts.MUTED,
                    annotation_text=f"all drafts: {overall:.2f}", annotation_position="top left")
    fig_c.update_layout(title="Calibration: the target's acceptance against the drafter's confidence "
                              "(each bar: an eighth of the judged drafts)",
                        xaxis_title=f"drafter's confidence ({'margin' if signal == 'margin' else 'top probability'})",
                        yaxis_title="accepted (mean min(1, p/q))", yaxis_range=[0, 1.15], height=380,
                        margin=dict(t=40, b=8), xaxis=dict(type="category"))
    st.plotly_chart(fig_c, key="ad_pol_calibration")
    if len(cal):
        low = cal.iloc[0]
        st.caption(f"{layout.measured_badge()} {int(cal['drafts'].sum())} judged drafts at "
                   f"γ = {CALIBRATION_GAMMA} on the same prompts. "
                   f"The least confident eighth (confidence {low['bin_low']:.3f}–{low['bin_high']:.3f}) was accepted "
                   f"{low['acceptance']:.0%} of the time, against {overall:.0%} overall. The steeper the rise from "
                   "left to right, the more a confidence stop can save; where the bars are flat, stopping also throws "
                   "away the low-confidence drafts that would have been accepted.")
