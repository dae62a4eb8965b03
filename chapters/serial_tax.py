"""Chapter: The Serial Tax. Plain decoding pays one full target pass per token; one pass over many
positions costs far less than that many passes (on a GPU nearly the same as one)."""
import time

import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from specdec_core import autoregressive_generate
from ui.server import admission, measure, models
from ui.state import demo, settings
from ui.widgets import charts, chips, layout

SLOW_MOTION_S = 0.08  # pause after each token when slow motion is on (not counted in any timing)
# Slow motion replays tokens already decoded at full speed, after the generation slot is given back:
# the pauses hold up no other student.

s = settings.current()
pair = models.require_pair()
ids = models.require_prompt_ids(pair)

st.header("The Serial Tax")
layout.intro(
    "Below, the target model writes alone: each token needs one complete forward pass, and the next pass "
    "cannot start before the previous token exists. Further down, the same model is timed on a single pass "
    "over k positions at once, which is the work speculative decoding asks it to do.",
    "press **Decode** and watch the pass counter match the token counter; then compare the first chart's "
    f"slope with the time of one pass over {measure.SWEEP_KS[-1]} positions in the second.")

# --- live plain decoding ---------------------------------------------------------------------------
st.subheader("One model, one token, one pass")
left, right = st.columns([1, 3], vertical_alignment="center")
slow = left.toggle("Slow motion", value=True, key="st_slow",
                   help=f"Waits {SLOW_MOTION_S * 1000:.0f} ms after each token so you can watch; the "
                        "pauses are not in any time shown.")
right.caption(f"Target **{pair.target_name}**, {s.describe_sampling()}, seed {s.seed}. "
              "Chips: " + "muted = your prompt, blue ● = a token from one target pass.")

counters = st.empty()
text_box = st.empty()
signature = (models.pair_key(pair), s.signature())


def show_progress(tokens: list[int], pass_s: list[float]) -> None:
    with counters.container():
        c = st.columns(3)
        c[0].metric("Target passes", len(pass_s))
        c[1].metric("Tokens generated", len(tokens))
        c[2].metric("Last pass", f"{pass_s[-1] * 1e3:.2f} ms" if pass_s else "—")
    text_box.html(chips.provenance_html(pair.tokenizer, ids, tokens, ["target"] * len(tokens)))


def decode(_progress) -> dict:
    """Plain decoding in the slot, redrawn about ten times a second unless slow motion replays it after."""
    tokens, pass_s = [], []
    redraw = admission.Throttle()

    def on_token(token: int, seconds: float) -> None:
        tokens.append(token)
        pass_s.append(seconds)
        if not slow and redraw():
            show_progress(tokens, pass_s)
        else:
            admission.checkpoint()

    result = autoregressive_generate(pair.target, ids, s.max_new_tokens, s.sampling, seed=s.seed, on_token=on_token)
    return {"tokens": result.tokens, "pass_s": result.target_pass_s, "passes": result.target_passes}


ran = demo.run(f"Decode {s.max_new_tokens} tokens", key="st_run", where=left, state="st_result", signature=signature,
               work=decode, what="your decoding", failure="Could not decode", progress=False, type="primary",
               icon=":material/play_arrow:")
if ran and slow:
    for n in range(1, len(ran["tokens"]) + 1):
        show_progress(ran["tokens"][:n], ran["pass_s"][:n])
        time.sleep(SLOW_MOTION_S)

stored = demo.latest("st_result", signature)
if stored:
    if not (ran and slow):  # the last tokens may have come between redraws
        show_progress(stored["tokens"], stored["pass_s"])
    pass_ms = [x * 1e3 for x in stored["pass_s"]]
    cumulative = [sum(pass_ms[:i + 1]) for i in range(len(pass_ms))]
    k = list(range(1, len(pass_ms) + 1))
    fig = go.Figure()
    fig.add_scatter(x=k, y=cumulative, mode="lines+markers", name="measured, cumulative",
                    line_color=chips.KINDS["target"].color, line_shape="hv",
                    customdata=pass_ms, hovertemplate="token %{x}: %{y:.1f} ms so far (this pass %{customdata:.2f} ms)"
                                                      "<extra></extra>")
    mean = cumulative[-1] / len(k)
    fig.add_scatter(x=k, y=[mean * i for i in k], mode="lines", name="K × mean pass", line_dash="dot",
                    line_color=chips.KINDS["prompt"].color)
    fig.update_layout(title=f"K tokens = K passes: {len(k)} tokens took {stored['passes']} target passes",
                      xaxis_title="tokens generated (K)", yaxis_title="decoding time so far (ms)", height=340,
                      margin=dict(t=48, b=8), legend=dict(orientation="h", y=-0.25))
    st.plotly_chart(fig, key="st_cumulative")
    st.caption("Each step of the staircase is one forward pass of the whole target model. No amount of "
               "parallel hardware inside a pass can remove a step: the next pass needs the token this one made.")
else:
    text_box.html(chips.provenance_html(pair.tokenizer, ids, [], []))
    st.caption("Press **Decode** to generate with the target alone.")

# --- one pass over k positions -------------------------------------------------------------------
st.subheader("Measured here: one target pass over k new positions")
st.caption(f"Times one pass of the target over k = 1…{measure.SWEEP_KS[-1]} new positions, {measure.CONTEXT} tokens "
           "already in the KV cache (the *KV cache* keeps the attention keys and values of every token the model "
           "has read, so a pass computes only the new positions): every k once per repetition, "
           f"{measure.SWEEP_REPEATS} repetitions taking turns "
           "in opposite orders, so a busy moment of the machine hits every k alike.")
# The latest sweep is kept for everyone on this server (`shared`): it is about this machine, not a session.
demo.run(f"Time one pass over k = 1…{measure.SWEEP_KS[-1]}", key="st_sweep_run", state="st_sweep",
         signature=models.pair_key(pair), shared=True, slot=False, what="timing one pass over k positions",
         progress_text="Timing passes…", icon=":material/timer:",
         work=lambda progress: {"sweep": measure.pass_sweep(pair, lambda f, text: progress(f, f"Timing passes: k = {text}"))})
stored_sweep = demo.latest("st_sweep", models.pair_key(pair), shared=True)
sweep = stored_sweep["sweep"] if stored_sweep else None
if sweep is None:
    st.caption("Press the button to time the passes (a few seconds; the result is kept for everyone on this server).")
else:
    ks = sorted(sweep)
    per_pass = [sweep[k].median * 1e3 for k in ks]
    t1 = per_pass[0]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("time of ONE pass (ms)", "time per position (ms)"))
    fig.add_scatter(x=ks, y=per_pass, mode="lines+markers", name="measured (median; bars: range)",
                    line_color=chips.KINDS["bonus"].color, row=1, col=1,
                    error_y=dict(type="data", symmetric=False, array=[(sweep[k].high - sweep[k].median) * 1e3 for k in ks],
                                 arrayminus=[(sweep[k].median - sweep[k].low) * 1e3 for k in ks]))
    fig.add_scatter(x=ks, y=[t1] * len(ks), mode="lines", name="flat: k positions for the price of one", line_dash="dot",
                    line_color=chips.KINDS["accepted"].color, row=1, col=1)
    fig.add_scatter(x=ks, y=[t1 * k for k in ks], mode="lines", name="linear: k separate passes", line_dash="dash",
                    line_color=chips.KINDS["rejected"].color, row=1, col=1)
    fig.add_scatter(x=ks, y=[t / k for t, k in zip(per_pass, ks)], mode="lines+markers", showlegend=False,
                    line_color=chips.KINDS["bonus"].color, row=1, col=2)
    fig.add_scatter(x=ks, y=[t1 / k for k in ks], mode="lines", showlegend=False, line_dash="dot",
                    line_color=chips.KINDS["accepted"].color, row=1, col=2)
    fig.add_scatter(x=ks, y=[t1] * len(ks), mode="lines", showlegend=False, line_dash="dash",
                    line_color=chips.KINDS["rejected"].color, row=1, col=2)
    fig.update_xaxes(title_text="k (new positions in the pass)")
    fig.update_yaxes(rangemode="tozero")
    fig.update_yaxes(type="log", row=1, col=1,
                     tickvals=charts.log_ticks(min(sweep[k].low for k in ks) * 1e3,
                                               max(max(sweep[k].high for k in ks) * 1e3, t1 * ks[-1])))
    fig.update_layout(height=380, margin=dict(t=40, b=8), legend=dict(orientation="h", y=-0.3))
    st.plotly_chart(fig, key="st_sweep")

    ratio = sweep[ks[-1]].median / sweep[1].median
    c = st.columns(3)
    c[0].metric("One pass, 1 position", f"{t1:.2f} ms", help=sweep[1].text(" ms", 2, 1e3))
    c[1].metric(f"One pass, {ks[-1]} positions", f"{per_pass[-1]:.2f} ms", help=sweep[ks[-1]].text(" ms", 2, 1e3))
    c[2].metric(f"Cost of {ks[-1]} positions in one pass", f"{ratio:.1f}× one position",
                help=f"Decoding {ks[-1]} tokens one by one would cost {ks[-1]}× instead.")
    demo.spread_note(max(sweep.values(), key=lambda m: m.spread), "The least steady pass time", " ms", 2, 1e3)
    if ratio < 2:
        verdict = (f"On this machine the curve is nearly flat: {ks[-1]} positions cost {ratio:.1f}× one. "
                   "Most of a pass here is fixed cost, so plain decoding leaves almost all of it unused.")
    elif ratio < ks[-1] / 3:
        verdict = (f"On this machine {ks[-1]} positions cost {ratio:.1f}× one: far from free, but much cheaper "
                   "than as many separate passes.")
    else:
        verdict = (f"On this machine {ks[-1]} positions cost {ratio:.1f}× one, close to paying per position: "
                   "the arithmetic itself is the bottleneck here, so verification is not free.")
    st.markdown(f"{layout.measured_badge()} {verdict}")

st.markdown(
    "**Why a GPU keeps this flat and a CPU does not.** A pass for one new token multiplies one vector by "
    "every weight matrix of the model, so each weight is fetched from memory to be used in a single "
    "multiply-add. A GPU can do hundreds of operations in the time one weight takes to arrive, so at k = 1 "
    "its arithmetic units mostly wait on memory. Give the same pass k positions and every fetched weight is "
    "used k times: the arithmetic grows k-fold, the memory traffic hardly at all, and the time stays almost "
    "flat until the units are busy. That idle arithmetic is the *under-utilisation* speculative decoding "
    "puts to work. A CPU has a few cores whose arithmetic runs out after a few positions; beyond that each "
    "extra position adds its own share of time and the curve climbs. A tiny model is a third case: its "
    "pass is mostly fixed overhead (Python, launching each operation), so even a CPU draws a flat curve, "
    "for a less useful reason.")
st.caption(f"Each point: the median over {measure.SWEEP_REPEATS} repetitions of the median of {measure.SWEEP_PASSES} "
           f"timed passes (after one warm-up pass), {models.configure_torch()} torch thread(s). Other load on the "
           "machine shows up here too, in the spread.")

# --- "free" is a fact about GPUs: v(γ), the factor the cost model uses ---------------------------------
st.subheader("“Free” is a fact about GPUs: the verify factor v(γ)")
st.markdown(
    "Speculative decoding will ask the target for one pass over **γ + 1** positions, where γ is the number of "
    "tokens a small *drafter* guesses ahead (the next chapter shows a round). The paper charges that pass as "
    "**one** pass, however many positions it covers: on an accelerator waiting on memory, the extra positions "
    "ride along on arithmetic that would otherwise sit idle. Here the factor is measured instead: "
    "**v(γ)** = one pass over γ + 1 positions ÷ one pass over 1. When v(γ) grows with γ, every round costs more "
    "than the paper's model says and the speedup is smaller; the algorithm and its exactness are unchanged.")
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
