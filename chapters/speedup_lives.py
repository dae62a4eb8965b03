"""Chapter: Where the Speedup Lives. From real traces, a grid of target passes × output positions: which
of the distributions each pass computed were used. Then lossless speculation against the accelerations
that change the model."""
import plotly.graph_objects as go
import streamlit as st

from specdec_core import NgramDrafter, autoregressive_generate, speculative_generate, theory
from specdec_core.analysis import fidelity
from specdec_core.analysis.usage import pass_usage, usage_summary
from specdec_core.sampling import SamplingConfig
from specdec_core.variants import build_variants
from ui.server import admission, models
from ui.state import demo, settings
from ui.widgets import charts, chips, layout, tables

EXAMPLE_ALPHA, EXAMPLE_GAMMA = 0.8, 4  # the worked example of accepted ÷ drafted against α
MAX_GRID_TOKENS = 48  # more columns than this stop being readable
NGRAM = "n-gram lookup (no model)"
FID_PROMPTS, FID_TOKENS, FID_REPEATS = 3, 64, 3  # the lossless-vs-lossy measurement: a minute or two here
QUANTISED = ("int8 weights", "4-bit weights")
MAX_COPY_PARAMS = 50_000_000  # five copies of a bigger target would take gigabytes of a shared server's memory
FID_SYMBOLS = {"lower precision": "diamond", "fewer layers": "triangle-up", "distilled": "square",
               "speculative": "star"}
FID_COLORS = {"lower precision": chips.KINDS["corrective"].color, "fewer layers": chips.KINDS["rejected"].color,
              "distilled": chips.KINDS["drafted"].color, "speculative": chips.KINDS["accepted"].color}
FID_TEXT_AT = {"speculative": "middle right", "lower precision": "bottom right"}  # labels clear of the lines near 0
STATUS_STYLE = {  # status -> (chip kind for the colour, marker symbol, legend text)
    "target": ("target", "square", "used: the one distribution of a plain pass"),
    "accepted": ("accepted", "square", "used: confirmed a draft"),
    "corrective": ("corrective", "square", "used: drew the corrective token"),
    "bonus": ("bonus", "square", "used: drew the bonus token"),
    "discarded": ("unchecked", "x-thin-open", "computed, then discarded"),
}

s = settings.current()
pair = models.require_pair()
ids = models.require_prompt_ids(pair)

st.header("Where the Speedup Lives")
layout.intro(
    "A target pass over k positions computes k next-token distributions. Plain decoding asks for one and uses "
    "it; speculative decoding asks for γ + 1 and uses every one up to the first rejection. Each square below "
    "is one computed distribution, placed at the pass that computed it and the position it predicts.",
    "switch the drafter to the n-gram lookup, then set temperature to 0 in the sidebar: watch the rows get "
    "longer where the text starts repeating itself.")


@admission.cached(max_entries=32, what="both traces")
def traces(pair_id: str, drafter: str, prompt_ids: tuple[int, ...], gamma: int, max_new: int, temperature: float,
           top_k: int, top_p: float, seed: int, _pair):
    """Plain and speculative generations of the same request, with per-pass usage."""
    sampling = SamplingConfig.from_controls(temperature, top_k, top_p)
    d = NgramDrafter() if drafter == NGRAM else _pair.drafts[drafter]
    plain = autoregressive_generate(_pair.target, list(prompt_ids), max_new, sampling, seed=seed, eos_token_id=None,
                                    on_token=admission.on_token)
    spec = speculative_generate(_pair.target, d, list(prompt_ids), gamma=gamma, max_new_tokens=max_new,
                                sampling=sampling, seed=seed, eos_token_id=None, trace=False, on_round=admission.on_round)
    return {"plain": pass_usage(plain), "spec": pass_usage(spec), "plain_tokens": plain.tokens, "spec_tokens": spec.tokens}


options = list(pair.drafts) + [NGRAM]
drafter = st.radio("Drafter", options, horizontal=True, key="sl_drafter")
n_tokens = min(s.max_new_tokens, MAX_GRID_TOKENS)
if s.max_new_tokens > MAX_GRID_TOKENS:
    st.caption(f"The grid shows the first {MAX_GRID_TOKENS} tokens (the sidebar asks for {s.max_new_tokens}).")
with st.spinner("Generating both traces…"):
    t = traces(models.pair_key(pair), drafter, tuple(ids), s.gamma, n_tokens, s.temperature, s.top_k, s.top_p,
               s.effective_seed, pair)


def grid(frame_, tokens, title: str, key: str) -> None:
    fig = go.Figure()
    labels = chips.token_strings(pair.tokenizer, tokens)
    for status, (kind, symbol, text) in STATUS_STYLE.items():
        part = frame_[frame_["status"] == status]
        if part.empty:
            continue
        hover = [f"pass {r.pass_}, position {r.position + 1}: {text}" +
                 (f" ({labels[r.position]!r})" if status != "discarded" and r.position < len(labels) else "")
                 for r in part.rename(columns={"pass": "pass_"}).itertuples()]
        fig.add_scatter(x=(part["position"] + 1).tolist(), y=part["pass"].tolist(), mode="markers", name=text, hovertext=hover,
                        hoverinfo="text", marker=dict(symbol=symbol, size=13, color=chips.KINDS[kind].color,
                                                      line=dict(width=1.5, color=chips.KINDS[kind].color)))
    passes = int(frame_["pass"].max()) if len(frame_) else 1
    fig.update_layout(title=title, height=max(300, 160 + 17 * passes), margin=dict(t=40, b=8),
                      xaxis=dict(title="output position (token 1, 2, …)", range=[0.3, n_tokens + 0.7], dtick=4),
                      yaxis=dict(title="target pass", autorange="reversed", dtick=max(2, passes // 8)),
                      legend=dict(orientation="h", y=-0.2 - 4 / max(passes, 8)))
    st.plotly_chart(fig, key=key)


plain_sum, spec_sum = usage_summary(t["plain"]), usage_summary(t["spec"])
m = st.columns(4)
m[0].metric("Target passes", f"{plain_sum['passes']} → {spec_sum['passes']}", help="Standard → speculative.")
m[1].metric("Distributions computed", f"{plain_sum['computed']} → {spec_sum['computed']}")
m[2].metric("Distributions used", f"{plain_sum['used']} → {spec_sum['used']}", help="One per output token, in both.")
m[3].metric("Used per pass", f"{plain_sum['tokens_per_pass']:.2f} → {spec_sum['tokens_per_pass']:.2f}")
left, right = st.columns(2)
with left:
    grid(t["plain"], t["plain_tokens"], "Standard: one distribution per pass, always used", "sl_grid_plain")
with right:
    grid(t["spec"], t["spec_tokens"], f"Speculative: {drafter}, γ = {s.gamma}", "sl_grid_spec")
st.markdown(
    f"{layout.measured_badge()} Both decoders use exactly one distribution per output token ({spec_sum['used']} here): "
    "the accounting of *which* distributions decide the text is the same. The difference is how many of them "
    f"one pass delivers. Speculative decoding computed {spec_sum['computed']} and discarded "
    f"{spec_sum['computed'] - spec_sum['used']} (crosses): the price of guessing wrong, paid in arithmetic that "
    "would otherwise have sat idle. The first discarded square of a row is always followed, one row down, by a "
    "used square at the same position: the next pass starts there, and its first distribution is always used. "
    "Squares further right may be discarded again, when the next round also rejects early.")
st.caption("A used square's distribution is the target's own p at that position, after the sampling transform; "
           "the drafter never decides a token, it only decides how many positions one pass can settle.")

# --- lossless vs everything else ---------------------------------------------------------------------
st.subheader("Lossless vs everything else")
st.markdown("Many accelerations are exact too: a KV cache, FlashAttention, PagedAttention and batching compute "
            "the same arithmetic faster or for more requests at once. The *compression* methods are different: "
            "they change *what* is computed (rounder weights, fewer layers, a smaller student). Speculative "
            "decoding keeps the target's arithmetic and changes only *when* its distributions are computed. Here "
            "both kinds are measured on the same held-out prompts: lossy copies of the target made in this app "
            "(the cached models are never touched), against the fp32 target they came from.")


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
                                   n_tokens=FID_TOKENS, gamma=s.gamma, repeats=FID_REPEATS,
                                   hold=demo.hold("the lossless-vs-lossy measurement"),
                                   progress=lambda f, text: progress(f, f"Measuring: {text}"))
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
                marker=dict(symbol=symbol, size=13, color=FID_COLORS[kind], line=dict(width=1, color=charts.INK)),
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
                "decoding, as LayerSkip does.")
    tables.show([{
        "drafter": b["drafter"] + (" (the bundled drafter)" if b["bundled"] else ""),
        "acceptance rate per draft (accepted ÷ drafted)": (f"{b['accepted_per_drafted']:.2f}"
                                                            if b["accepted_per_drafted"] is not None else "–"),
        "tokens per target pass": f"{b['tokens_per_pass']:.2f}",
        "c (draft pass / target pass)": "not measured (simulated)" if b["c"] is None else f"{b['c']:.3f}",
        "speedup vs fp32 target": speed_text(b["speed"]),
        "output = the target's": f"{b['identical_prompts']} of {b['prompts']} prompts identical",
    } for b in stored_fid["bridge"]], key="sl_bridge_table")
    st.caption(f"Greedy, γ = {stored_fid['gamma']}, the same prompts and interleaved repetitions. The acceptance "
               "rate per draft counts every draft made, including those after a rejection that the target never "
               f"judged, so it sits below α, the expected acceptance chance of a judged draft (at α = {EXAMPLE_ALPHA:g} and "
               f"γ = {EXAMPLE_GAMMA} the formula α(1 − α^γ) / (γ(1 − α)) gives "
               f"{theory.accepted_per_drafted(EXAMPLE_ALPHA, EXAMPLE_GAMMA):.2f}). A drafter close "
               "to the target accepts more but costs nearly a target pass (c near 1), so it cannot pay for itself; "
               "the distilled drafter is far from the target and cheap, and that is the trade that wins.")

c1, c2 = st.columns(2)
with c1.container(border=True):
    st.markdown("**The acceleration marketplace**\n\n"
                "- Cheaper arithmetic (quantisation) or a cheaper model (distillation, pruning)\n"
                "- Speed is bought by approximating the target\n"
                "- The price is paid in outputs, and must be measured task by task")
with c2.container(border=True):
    st.markdown("**The speculative exception**\n\n"
                "- The target still computes the distribution of every token it emits\n"
                "- The accept/resample rule makes the emitted stream exactly target-distributed\n"
                "- The drafter proposes; it never decides. Agreement or rollback, nothing in between")
st.success(
    "**Verdict: latency arbitrage.** During one-token decoding an accelerator spends most of a pass waiting for "
    "weights to arrive from memory, so checking several positions costs almost the same as checking one. Plain "
    "decoding never asks for more. Speculative decoding asks, with bookkeeping exact enough that the answer is "
    "unchanged, and turns idle arithmetic into fewer serial steps. The general lesson: look for work the hardware "
    "could already do for free that your protocol never requests.", icon=":material/balance:")
