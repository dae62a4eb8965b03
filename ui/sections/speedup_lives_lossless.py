"""Where the Speedup Lives, folded: lossless speculation against the compression methods that change the
model (quantised, truncated, distilled copies of the target made here), measured on held-out prompts behind a
button, with the speed-against-distance chart, one prompt's two continuations, and the bridge back (a lossy
copy as the drafter)."""
import plotly.graph_objects as go
import streamlit as st

from specdec_core import GREEDY, GenerationRequest, theory
from specdec_core.analysis import fidelity
from specdec_core.variants import build_variants
from ui.server import admission, demo, models
from ui.widgets import charts, chips, layout, tables

EXAMPLE_ALPHA, EXAMPLE_GAMMA = 0.8, 4  # the worked example of accepted ÷ drafted against α
FID_PROMPTS, FID_TOKENS, FID_REPEATS = 3, 64, 3  # the lossless-vs-lossy measurement: a minute or two here
QUANTISED = ("int8 weights", "4-bit weights")
MAX_COPY_PARAMS = 50_000_000  # five copies of a bigger target would take gigabytes of a shared server's memory
FID_SYMBOLS = {"lower precision": "diamond", "fewer layers": "triangle-up", "distilled": "square",
               "speculative": "star"}


def fid_colors() -> dict:
    """The markers' colours in the viewer's theme, read on each run (not frozen at import)."""
    return {"lower precision": chips.KINDS["corrective"].color, "fewer layers": chips.KINDS["rejected"].color,
            "distilled": chips.KINDS["drafted"].color, "speculative": chips.KINDS["accepted"].color}


FID_TEXT_AT = {"speculative": "middle right", "lower precision": "bottom right"}  # labels clear of the lines near 0


@st.cache_resource(show_spinner=False, max_entries=2)
def lossy_variants(pair_id: str, _pair) -> dict:
    """The lossy variants of the pair's target (copies), built once per server process."""
    return build_variants(_pair.target, _pair.draft)


def fidelity_summary(rep: fidelity.FidelityReport, names: list[str]) -> dict:
    """What the page draws, without the models: rows, bridge, and the tokens of the worked example."""
    keep = (fidelity.TARGET, *QUANTISED)
    return {"rows": rep.rows, "bridge": rep.bridge, "names": names, "prompts": rep.prompts, "gamma": rep.gamma,
            "repeats": rep.repeats, "n_tokens": rep.n_tokens,
            "tokens": {name: dict(rep.runs[name].tokens) for name in keep if name in rep.runs}}


def speed_text(speed) -> str:
    return "not measured (simulated)" if speed is None else speed.text()


def show(pair, s) -> None:
    """The measurement behind its button, and what it draws once measured (kept per server process)."""
    st.markdown("Many accelerations are exact too: a KV cache, FlashAttention, PagedAttention and batching compute "
                "the same arithmetic (up to floating-point rounding) faster or for more requests at once. The "
                "*compression* methods are different: "
                "they change *what* is computed (rounder weights, fewer layers, a smaller student). Speculative "
                "decoding keeps the target's arithmetic and changes only *when* its distributions are computed. Here "
                "both kinds are measured on the same held-out prompts: lossy copies of the target made in this app "
                "(the cached models are never touched), against the fp32 target they came from.")

    def measure_fidelity(progress) -> dict:
        """Every variant and speculative decoding on the held-out prompts (`fidelity.fidelity_report`); each
        run takes a generation slot of its own, so nobody waits the whole minute."""
        if pair.target_params > MAX_COPY_PARAMS:
            st.info(f"The comparison makes five copies of the target; this one has {pair.target_params / 1e6:.0f}M "
                    f"parameters, more than the {MAX_COPY_PARAMS / 1e6:.0f}M this server copies. Switch to the bundled "
                    "pair in the sidebar to run it.", icon=":material/memory:")
            st.stop()
        try:
            with st.spinner("Making the lossy copies of the target (once per server process)…", show_time=True):
                variants = lossy_variants(models.pair_key(pair), pair)
        except TypeError as err:
            st.info(f"The lossy copies are made of GPT-2 models only: {err}.", icon=":material/info:")
            st.stop()
        held_out = fidelity.held_out_prompts(pair.tokenizer, FID_PROMPTS)
        rep = fidelity.fidelity_report(pair.target, pair.draft, variants, [ids_ for _, ids_ in held_out],
                                       GenerationRequest(max_new_tokens=FID_TOKENS, sampling=GREEDY, seed=0),
                                       gamma=s.gamma, repeats=FID_REPEATS,
                                       pacing=admission.pacing("the lossless-vs-lossy measurement",
                                                               lambda f, text: progress(f, f"Measuring: {text}")))
        return fidelity_summary(rep, [name for name, _ in held_out])

    # Measured comparisons by (pair, gamma) are kept for the server process: the figures are about this
    # machine and these models, the same for every student, so one measurement serves the class.
    fid_key = (models.pair_key(pair), s.gamma)
    measured_before = demo.latest("sl_fidelity", fid_key, shared=True) is not None
    demo.run("Measure again" if measured_before else "Measure the comparison", key="sl_fidelity_run", state="sl_fidelity",
             signature=fid_key, work=measure_fidelity, what="the lossless-vs-lossy measurement", slot=False, shared=True,
             failure="Could not measure", icon=":material/balance:",
             help=f"{FID_PROMPTS} held-out prompts × {FID_TOKENS} tokens × {FID_REPEATS} interleaved repetitions; a "
                  "minute or two, once per server process.")
    stored_fid = demo.latest("sl_fidelity", fid_key, shared=True)

    if stored_fid is None:
        st.caption("Press **Measure the comparison** to run it: every variant and speculative decoding on the same "
                   "held-out prompts. Until then, the claim stands in words below.")
    else:
        rows = stored_fid["rows"]
        tables.show([{
            "method": r["name"], "what changes": r["how"], "speed vs fp32 target": speed_text(r["speed"]),
            "agreement, teacher-forced": f"{100 * r['teacher_forced_agreement']:.1f}%",
            f"agreement, free-running ({stored_fid['n_tokens']} tokens)": f"{100 * r['free_running_agreement']:.1f}%",
            "identical continuations": f"{r['identical_prompts']} of {r['prompts']}",
            "distance from the target (mean TV)": f"{r['distance']:.2g}" if r["distance"] > 0 else "0",
        } for r in rows], key="sl_fidelity_table")
        spec_row = rows[-1]
        st.markdown(
            f"{layout.measured_badge()} Greedy decoding of {len(stored_fid['prompts'])} held-out prompts "
            f"({', '.join(stored_fid['names'])}), {stored_fid['n_tokens']} tokens each, {stored_fid['repeats']} "
            "interleaved repetitions: speed is the median of the repetitions' ratios (fp32 target seconds per token "
            "over the method's, prefill left out), with their range in brackets. Teacher-forced agreement: the share of "
            "positions of the held-out text where the method's most likely token is the target's. Distance: the mean "
            "total variation distance between the two next-token distributions on the same positions. "
            "Speculative decoding's distance is computed, not assumed: at every position min(p, q) plus the rejection "
            f"mass times the residual gives back p (largest difference {spec_row['max_distance']:.1g}).")
        st.caption("int8 and 4-bit are simulated: the weights are rounded to the grid and computed in fp32, because no "
                   "int8 or int4 kernel runs on this path, so their speed is not measured rather than guessed. bf16 runs "
                   f"for real in bfloat16: on this machine's {pair.device.upper()} it may be a loss.")
        fig = go.Figure()
        for kind, symbol in FID_SYMBOLS.items():
            part = [r for r in rows if r["kind"] == kind and r["speed"] is not None]
            if part:
                fig.add_scatter(
                    x=[r["distance"] for r in part], y=[r["speed"].median for r in part], mode="markers+text",
                    name=kind, text=[r["name"] for r in part], textposition=FID_TEXT_AT.get(kind, "top center"),
                    hovertext=[f"{r['name']}: {r['speed'].text()}, distance {r['distance']:.3g}" for r in part],
                    hoverinfo="text",
                    marker=dict(symbol=symbol, size=13, color=fid_colors()[kind], line=dict(width=1, color=charts.INK)),
                    error_y=dict(type="data", symmetric=False, array=[r["speed"].high - r["speed"].median for r in part],
                                 arrayminus=[r["speed"].median - r["speed"].low for r in part]))
        for r in rows:
            if r["speed"] is None:
                fig.add_vline(x=r["distance"], line_dash="dot", line_color=charts.MUTED, annotation_position="top right",
                              annotation_text=f"{r['name']}: speed not measured", annotation_textangle=-90)
        far = max(r["distance"] for r in rows)
        timed = [r for r in rows if r["speed"] is not None]
        fig.add_hline(y=1.0, line_dash="dash", line_color=charts.INK)
        # On a log axis an annotation's y is log10 of the value (add_hline's own annotation lands at 10×).
        fig.add_annotation(x=1, xref="paper", y=0, yref="y", text="as fast as the fp32 target", showarrow=False,
                           xanchor="right", yanchor="top")
        fig.update_layout(title="Speed against distance from the target", height=460, margin=dict(t=40, b=8),
                          xaxis=dict(title="mean total variation distance from the target (0 = the target's outputs)",
                                     range=[-0.04 * far, 1.15 * far]),
                          yaxis=dict(title="speed vs fp32 target (×, log)", type="log", tickvals=charts.log_ticks(
                              min([1.0] + [r["speed"].low for r in timed]), max([1.0] + [r["speed"].high for r in timed]))),
                          legend=dict(orientation="h", y=-0.25))
        st.plotly_chart(fig, key="sl_fidelity_chart")

        st.markdown("**One prompt, two continuations.** The target's greedy continuation, and a quantised copy's, "
                    "from the same held-out prompt; the first token that differs is marked **[≠ …]**.")
        e1, e2 = st.columns(2)
        example_variant = e1.radio("Quantised copy", QUANTISED, index=1, horizontal=True, key="sl_example_variant")
        differs = [i for i, ids_ in stored_fid["tokens"][example_variant].items()
                   if ids_ != stored_fid["tokens"][fidelity.TARGET][i]]
        j = e2.selectbox("Prompt", range(len(stored_fid["names"])), format_func=lambda i: stored_fid["names"][i],
                         index=differs[0] if differs else 0, key="sl_example_prompt",
                         help="Opens on the first prompt where this copy's continuation differs, if one does.")
        base_tokens = stored_fid["tokens"][fidelity.TARGET][j]
        other = stored_fid["tokens"][example_variant][j]
        first = fidelity.free_running_agreement(base_tokens, other)["first_difference"]
        with st.container(border=True):
            st.html(chips.first_difference_html(pair.tokenizer, stored_fid["prompts"][j], None, "prompt"))
            st.html(chips.first_difference_html(pair.tokenizer, base_tokens, first, "fp32 target"))
            st.html(chips.first_difference_html(pair.tokenizer, other, first, example_variant))
        if first is None:
            st.markdown(f"Identical for all {len(base_tokens)} tokens on this prompt: rounding shifted the distributions "
                        "(see its distance) without changing any argmax along this path. Try the other copy or prompt.")
        else:
            labels = chips.token_strings(pair.tokenizer, [base_tokens[first], other[first]])
            st.markdown(f"They part at token {first + 1} of {len(base_tokens)}: the target says {labels[0]!r}, "
                        f"{example_variant} says {labels[1]!r}. From there on each continues its own text: one changed "
                        "argmax is enough.")

        st.markdown("**The bridge back: a lossy model as the drafter.** A lossy copy cannot be trusted to decide, but "
                    "it can be trusted to guess: as the drafter of the fp32 target its guesses are checked, so the "
                    "output is the target's again. The truncated target drafting for itself is self-speculative "
                    "decoding: LayerSkip (Elhoushi et al. 2024) trains a model so that its first layers can draft and "
                    "its remaining layers verify.")
        tables.show([{
            "drafter": b["drafter"] + (" (the bundled drafter)" if b["bundled"] else ""),
            "acceptance rate (accepted ÷ drafted)": (f"{b['accepted_per_drafted']:.2f}"
                                                                if b["accepted_per_drafted"] is not None else "–"),
            "tokens per target pass": f"{b['tokens_per_pass']:.2f}",
            "c (draft pass / target pass)": "not measured (simulated)" if b["c"] is None else f"{b['c']:.3f}",
            "speedup vs fp32 target": speed_text(b["speed"]),
            "output = the target's": f"{b['identical_prompts']} of {b['prompts']} prompts identical",
        } for b in stored_fid["bridge"]], key="sl_bridge_table")
        st.caption(f"Greedy, γ = {stored_fid['gamma']}, the same prompts and interleaved repetitions. The acceptance "
                   "rate counts every draft made, including those after a rejection that the target never "
                   f"judged, so it sits below α, the expectation of β = Σ min(p, q), the chance that a judged draft is "
                   f"accepted (at α = {EXAMPLE_ALPHA:g} and "
                   f"γ = {EXAMPLE_GAMMA} the formula α(1 − α^γ) / (γ(1 − α)) gives "
                   f"{theory.accepted_per_drafted(EXAMPLE_ALPHA, EXAMPLE_GAMMA):.2f}). A drafter close "
                   "to the target accepts more but costs nearly a target pass (c near 1), so it cannot pay for itself; "
                   "the distilled drafter is far from the target and cheap, and that is the trade that wins.")
