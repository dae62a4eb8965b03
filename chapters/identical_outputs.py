"""Chapter: Identical Outputs. The lesson: speculative decoding changes the speed and nothing else.
Greedy shows it at once: both decoders' tokens side by side and an empty diff. Folded beneath
(ui/sections/identical_outputs_lab.py): with sampling, the same distribution tested by chi-square, the
broken samplers, the lossy rules peers ship and the tree rules failing or passing the same test."""
import streamlit as st

from specdec_core import GenerationRequest, NgramDrafter, autoregressive_generate, model, speculative_generate
from specdec_core.analysis import lab
from specdec_core.sampling_config import GREEDY
from ui.content import mismatch
from ui.sections import identical_outputs_lab
from ui.server import admission, models
from ui.state import settings
from ui.widgets import chips, layout

NGRAM = f"{NgramDrafter().name} (no model)"


@admission.cached(max_entries=32, what="the greedy comparison")
def greedy_pair(pair_id: str, drafter: str, request: GenerationRequest, gamma: int, _pair) -> dict:
    """Plain and speculative decoding of the same (greedy, fixed-length) request, speculating with `drafter`
    (a key of the pair's drafts, or NGRAM)."""
    d = NgramDrafter() if drafter == NGRAM else _pair.drafts[drafter]
    plain = autoregressive_generate(_pair.target, request, on_token=admission.on_token)
    spec = speculative_generate(_pair.target, d, request, gamma=gamma, trace=False, on_round=admission.on_round)
    return {"plain": plain.tokens, "spec": spec.tokens, "plain_passes": plain.target_passes,
            "spec_passes": spec.target_passes, "kinds": spec.token_kinds}


s = settings.current()
pair = models.require_pair()
ids = models.require_prompt_ids(pair)

st.header("Identical Outputs")
st.markdown("Speculative decoding changes the speed and **nothing else**. With greedy decoding that means the very "
            "same tokens: here are both decoders on the sidebar prompt.")

with layout.demo():
    drafter = st.radio("Drafter", [*pair.drafts, NGRAM], horizontal=True, key="io_drafter",
                       help="The n-gram lookup has no model: it proposes what followed the last few tokens where "
                            "they appeared before in the text.")
    with st.spinner("Decoding greedily, twice…"):
        g = greedy_pair(models.pair_key(pair), drafter,
                        GenerationRequest(ids, s.max_new_tokens, GREEDY, 0).fixed_length(), s.gamma, pair)
    diff = lab.token_diff(g["plain"], g["spec"])
    left, right = st.columns(2)
    for col, title, tokens, kinds, passes in (
            (left, "Standard greedy decoding", g["plain"], ["target"] * len(g["plain"]), g["plain_passes"]),
            (right, "Speculative greedy decoding", g["spec"], g["kinds"], g["spec_passes"])):
        with col.container(border=True):
            st.markdown(f"**{title}** · {passes} target passes")
            st.html(chips.provenance_html(pair.tokenizer, [], tokens, kinds))
    chips.show_legend(("target", "accepted", "corrective", "bonus"))
    if not diff:
        st.success(f"Identical: {len(g['plain'])} of {len(g['plain'])} token ids agree, with "
                   f"{g['plain_passes'] - g['spec_passes']} fewer target passes for the speculative decoder.",
                   icon=":material/check_circle:")
    else:
        st.error(f"The outputs differ from token {lab.first_difference(g['plain'], g['spec'])}. "
                 + mismatch.greedy_mismatch_reason(model.batch_invariant(pair.target)))
    with st.expander("The token ids, and their diff"):
        for title, tokens in (("Standard", g["plain"]), ("Speculative", g["spec"])):
            st.markdown(f"**{title}**")
            st.code(" ".join(str(t) for t in tokens), language=None, wrap_lines=True)
        st.markdown(f"`diff` of the two token-id lists ({len(g['plain'])} and {len(g['spec'])} ids, γ = {s.gamma}, "
                    "temperature 0 whatever the sidebar says):")
        st.code("\n".join(diff) if diff else "(empty: no line differs)", language="diff")
layout.try_this("switch the drafter: the number of target passes follows how well it guesses; the tokens stay the "
                "same.")

st.markdown("With sampling the texts differ draw by draw, so *the same* has to mean the same **distribution**: "
            "a statistical test can check that, and catch the bugs people really write.")
st.subheader("Go deeper")
identical_outputs_lab.show(pair, ids, s)
