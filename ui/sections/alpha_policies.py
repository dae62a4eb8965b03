"""The α Dial → Go deeper: fixed against adaptive γ (behind a button), and the drafter's calibration."""
import plotly.graph_objects as go
import streamlit as st

from specdec_core import theory
from specdec_core.analysis.policy_compare import PLAIN, calibration_rounds, compare_policies, summary
from specdec_core.analysis.round_stats import calibration, measured_alpha
from specdec_core.policies import ADAPTIVE, POLICIES, Costs, describe, with_costs
from ui.server import admission, demo, models
from ui.state import settings
from ui.widgets import charts, layout, tables

GAMMA_AXIS = list(range(1, 13))
CALIBRATION_GAMMA = 8  # the calibration chart's rounds draft this many, so every confidence gets judged


def show(pair, s, profile) -> None:
    # Who sets γ, checked against the peers' code:
    # - vLLM: `num_speculative_tokens` in the speculative config; its dynamic speculative decoding
    #   (`num_speculative_tokens_per_batch_size`, a batch-size -> γ table; vllm-project/vllm PR #32374, merged).
    #   The acceptance/goodput-driven length of RFC #4565 was closed unmerged. vllm/v1/spec_decode/draft_length_policy.py
    #   (ConfidenceThresholdPolicy, `draft_confidence_threshold`, DISCO-style early exit) has since appeared in the
    #   repository; which release ships it was not checked, hence "mainly" below.
    # - TensorRT-LLM: `max_draft_len` in the decoding config, and `draft_len_schedule` (batch-size thresholds -> draft
    #   length) read by the Drafter base class (NVIDIA/TensorRT-LLM tensorrt_llm/_torch/speculative/drafter.py).
    # - transformers: AssistedCandidateGenerator.update_candidate_strategy, `num_assistant_tokens_schedule="heuristic"`
    #   (+2 after a fully accepted round, -1 otherwise) and `assistant_confidence_threshold`
    #   (huggingface/transformers src/transformers/generation/candidate_generator.py).
    # - llama.cpp: `--draft-max` and `--draft-p-min`: drafting stops when the drafter's top probability falls under
    #   p-min (ggml-org/llama.cpp common/speculative.cpp).
    st.markdown(
        "The best γ of the curves at the top assumes one α for the whole text, but β changes from position to "
        "position: a stage direction or a repeated refrain is easy to guess, a fresh line of verse is not. So some "
        "decoders adapt γ to the text as they go: transformers' assisted generation and llama.cpp do. The big "
        "serving stacks, vLLM and TensorRT-LLM, set γ mainly by configuration, optionally from a table keyed by "
        "the *batch size* (how many requests the server decodes together in one pass), shrinking γ as the batch "
        "grows, because a busy accelerator has less idle arithmetic left for drafts. Here the fixed γ values race "
        "five adaptive policies on the same prompts, with the same exact rule (so every one of them still produces "
        "the target's distribution):\n"
        "- **heuristic schedule** (an option of transformers' assisted generation, whose default today is a fixed "
        "γ with a confidence stop): γ + 2 after a round that accepted every draft, γ − 1 after any other;\n"
        "- **confidence stop** (transformers' `assistant_confidence_threshold`, llama.cpp's `--draft-p-min`): keep "
        "drafting while the drafter is confident in its next token. Both peers read the drafter's *top "
        "probability*; this app's default signal is the *margin*, top-1 minus top-2 probability (the sidebar "
        "switches it to the top probability), so its default stop is a variant, not the peers' rule;\n"
        "- **acceptance-driven** (proposed for vLLM but not merged there): from the acceptance measured so far at "
        "each draft position, pick the γ that maximises E / (γc + v(γ));\n"
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
        request = s.request(max_new_tokens=policy_tokens)
        results = compare_policies(pair.target, pair.draft, prompts, contestants, request, repeats=repeats,
                                   pacing=admission.pacing("the policy race", lambda f, text: progress(0.95 * f, text)))
        progress(0.95, "Tracing the drafter's confidence for the calibration chart…")
        with admission.slot("the calibration chart"):
            traced = calibration_rounds(pair.target, pair.draft, prompts, CALIBRATION_GAMMA, request)
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
                       "drafts per round": round(r["mean_drafted"], 2), "measured α": round(r["alpha"], 3),
                       "accepted ÷ drafted, by position": " ".join(f"{x:.2f}" for x in r["per_position_acceptance_rate"][:8]),
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
