"""Chapter: The Serial Tax. Plain decoding pays one full target pass per token; one pass over many
positions costs far less than that many passes (on a GPU nearly the same as one)."""
import time

import plotly.graph_objects as go
import streamlit as st

from specdec_core import autoregressive_generate
from ui.sections import serial_sweep, serial_verify_factor
from ui.server import admission, demo, models
from ui.state import settings
from ui.widgets import chips, layout

SLOW_MOTION_S = 0.08  # pause after each token when slow motion is on (not counted in any timing)
# Slow motion replays tokens already decoded at full speed, after the generation slot is given back:
# the pauses hold up no other student.

s = settings.current()
pair = models.require_pair()
ids = models.require_prompt_ids(pair)

st.header("The Serial Tax")
layout.idea("plain decoding pays one full pass of the target model for every token, and no pass can "
            "start before the token of the one before it exists.")

# --- the demo: the target alone, one token per pass ----------------------------------------------------
with layout.demo():
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

        result = autoregressive_generate(pair.target, s.request(ids, eos_token_id="model"), on_token=on_token)
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
layout.try_this("press **Decode** and watch the pass counter match the token counter: K tokens, K passes.")

# --- go deeper -----------------------------------------------------------------------------------------
with layout.deeper("what one pass over k positions costs, measured here (and why a GPU keeps it flat)"):
    serial_sweep.show(pair)
with layout.deeper("“free” is a fact about GPUs — the verify factor v(γ)"):
    serial_verify_factor.show(pair)
