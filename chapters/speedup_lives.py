"""Chapter: Where the Speedup Lives. The lesson: a wide target pass computes many distributions, and
speculation uses the ones plain decoding never asks for. From real traces, a grid of target passes ×
output positions shows which were used. Folded beneath: lossless speculation measured against the
compression methods that change the model (ui/sections/speedup_lives_lossless.py)."""
import plotly.graph_objects as go
import streamlit as st

from specdec_core import NgramDrafter, autoregressive_generate, speculative_generate
from specdec_core.analysis.usage import pass_usage, usage_summary
from specdec_core.request import GenerationRequest
from ui.sections import speedup_lives_lossless
from ui.server import admission, models
from ui.state import settings
from ui.widgets import chips, layout

MAX_GRID_TOKENS = 48  # more columns than this stop being readable
NGRAM = f"{NgramDrafter().name} (no model)"
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
st.markdown("A target pass over k positions computes k next-token distributions. Plain decoding asks for one per "
            "pass; speculative decoding asks for γ + 1 and **uses every one up to and including the first "
            "rejection** (all γ + 1 if none is rejected). Each square is one distribution: its pass (row), the "
            "position it predicts (column).")
lesson = st.container(key="lesson-demo")


@admission.cached(max_entries=32, what="both traces")
def traces(pair_id: str, drafter: str, request: GenerationRequest, gamma: int, _pair):
    """Plain and speculative generations of the same request (frozen: the cache's key), with per-pass usage."""
    d = NgramDrafter() if drafter == NGRAM else _pair.drafts[drafter]
    plain = autoregressive_generate(_pair.target, request, on_token=admission.on_token)
    spec = speculative_generate(_pair.target, d, request, gamma=gamma, trace=False, on_round=admission.on_round)
    return {"plain": pass_usage(plain), "spec": pass_usage(spec), "plain_tokens": plain.tokens, "spec_tokens": spec.tokens}


options = list(pair.drafts) + [NGRAM]
drafter = lesson.radio("Drafter", options, horizontal=True, key="sl_drafter",
                       help="The n-gram lookup is a drafter with no model: it finds the last few tokens earlier in "
                            "the text and proposes what followed them there (prompt lookup).")
n_tokens = min(s.max_new_tokens, MAX_GRID_TOKENS)
if s.max_new_tokens > MAX_GRID_TOKENS:
    lesson.caption(f"The grid shows the first {MAX_GRID_TOKENS} tokens (the sidebar asks for {s.max_new_tokens}).")
with st.spinner("Generating both traces…"):
    t = traces(models.pair_key(pair), drafter, s.request(ids, n_tokens), s.gamma, pair)


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
m = lesson.columns(4)
m[0].metric("Target passes", f"{plain_sum['passes']} → {spec_sum['passes']}", help="Standard → speculative.")
m[1].metric("Distributions computed", f"{plain_sum['computed']} → {spec_sum['computed']}")
m[2].metric("Distributions used", f"{plain_sum['used']} → {spec_sum['used']}", help="One per output token, in both.")
m[3].metric("Used per pass", f"{plain_sum['tokens_per_pass']:.2f} → {spec_sum['tokens_per_pass']:.2f}")
left, right = lesson.columns(2)
with left:
    grid(t["plain"], t["plain_tokens"], "Standard: one distribution per pass, always used", "sl_grid_plain")
with right:
    grid(t["spec"], t["spec_tokens"], f"Speculative: {drafter}, γ = {s.gamma}", "sl_grid_spec")
lesson.markdown(f"{layout.measured_badge()} Both decoders use exactly one distribution per output token "
                f"({spec_sum['used']} here). Speculative decoding computed {spec_sum['computed'] - spec_sum['used']} "
                "more and discarded them (crosses): the price of guessing wrong, paid in arithmetic that would "
                "otherwise have sat idle.")
lesson.info("**Try this:** switch to the n-gram lookup (no model: it copies what followed the last few tokens "
            "earlier in the text) and set temperature to 0 in the sidebar: rows get longer where the text repeats.",
            icon=":material/lightbulb:")
with st.expander("Reading the grid"):
    st.markdown(
        "The accounting of *which* distributions decide the text is the same in both decoders; the difference is "
        "how many of them one pass delivers. The first discarded square of a row is always followed, one row down, "
        "by a used square at the same position: the next pass starts there, and its first distribution is always "
        "used. Squares further right may be discarded again, when the next round also rejects early.")
    st.caption("A used square's distribution is the target's own p at that position, after the sampling transform. "
               "An accepted draft is the drafter's token, but the drafter never changes which distribution a token "
               "is drawn from: it only decides how many positions one pass can settle.")

st.subheader("Go deeper")
with st.expander("Lossless vs compression, measured: quantised, truncated and distilled copies of the target"):
    speedup_lives_lossless.show(pair, s)
with st.expander("The acceleration marketplace"):
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
                    "- The drafter proposes; it never changes the distribution a token comes from. Agreement or "
                    "rollback, nothing in between")
    st.markdown("The general lesson: look for work the hardware could already do for free that your protocol never "
                "requests.")
st.success(
    "**Verdict: latency arbitrage.** In one-token decoding an accelerator mostly waits for weights to arrive from "
    "memory, so checking several positions costs about as much as checking one; speculative decoding asks for "
    "those positions, and the answer stays exact.",
    icon=":material/balance:")
