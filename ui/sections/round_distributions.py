"""A Round, Token by Token → Go deeper: one real round's γ + 1 target distributions, all from ONE target pass.
Runs a round only when the reader turns it on (an expander's body runs even while it is closed)."""
import math

import streamlit as st
from plotly.subplots import make_subplots

from specdec_core import speculative_generate
from specdec_core.request import GenerationRequest
from ui.server import admission, models
from ui.widgets import charts, chips

TOP_SHOWN = 5  # entries of p shown per position


@admission.cached(max_entries=64, what="this round")
def one_round(pair_id: str, request: GenerationRequest, gamma: int, _pair):
    """The trace of the first round of a speculative generation (the core's data, nothing re-derived)."""
    result = speculative_generate(_pair.target, _pair.draft, request, gamma=gamma, max_rounds=1, trace=True)
    return result.rounds[0]


def show(pair, s) -> None:
    if not st.toggle("Run one round and draw its γ + 1 distributions", key="rr_dists"):
        st.caption("Turn it on to run one round on the sidebar prompt (a second or so).")
        return
    ids, problem = models.prompt_problem(pair, s)
    if problem:
        st.warning(problem, icon=":material/edit_note:")
        return
    with st.spinner("Running one round…"):
        window = pair.context_length - len(ids)
        r = one_round(models.pair_key(pair), s.request(ids, max(1, min(s.gamma + 1, window)), "model"), s.gamma, pair)
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
