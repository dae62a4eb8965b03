"""The α Dial → Go deeper: the live pair measured drafter by drafter (behind a button): measured α, tokens per
pass and wall-clock speedup against the formula, and acceptance by draft position."""
import plotly.graph_objects as go
import streamlit as st

from specdec_core import theory
from specdec_core.analysis import drafter_rounds
from ui.content import alpha_estimate
from ui.server import admission, demo, models, operator
from ui.widgets import layout, palette, tables

TOKENS_PER_GENERATION = 96  # the measured run strings rounds together from generations of this length
TIMED_TOKENS, TIMING_REPEATS = 64, 3  # the wall-clock comparison: tokens per run, interleaved repetitions


def show(pair, s, profile) -> None:
    ids = models.require_prompt_ids(pair)
    max_rounds = max(10, operator.rules().max_rounds // 10 * 10)  # the operator's bound on one request
    st.session_state["ad_rounds"] = min(st.session_state.get("ad_rounds", 60), max_rounds)
    n_rounds = st.slider("Rounds per drafter", 10, max_rounds, step=10, key="ad_rounds")
    gamma_run = st.session_state["ad_gamma"]
    st.caption(f"Runs {n_rounds} rounds with each of the pair's {len(pair.drafts)} drafters at γ = {gamma_run} (the "
               f"γ slider at the top), {s.describe_sampling()}, on the sidebar prompt, then times plain decoding of the "
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
                   "draft the target judged; at each position its expectation is β = Σ min(p, q), so over the text it "
                   "estimates the paper's α, the expectation of β, roughly and leaning high: "
                   f"{alpha_estimate.WHY_IT_LEANS_HIGH}. The wall-clock speedup "
                   f"comes from {TIMED_TOKENS}-token runs of plain decoding and each drafter, interleaved "
                   f"{TIMING_REPEATS} times over (median; prompt processing excluded), and c from those runs' draft passes.")
        widest = max(measured["results"].items(), key=lambda item: item[1]["measured"].spread)
        demo.spread_note(widest[1]["measured"], f"Wall-clock speedup with the {widest[0]}, the widest spread here")

        fig = go.Figure()
        for (label, res), color in zip(measured["results"].items(), palette.drafter_colors()):
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
