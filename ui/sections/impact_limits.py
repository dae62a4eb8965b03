"""Impact's folded section: what speculation did not solve (the first token, large batches, pairs that
do not fit), with the batch regime measured live (ui/sections/impact_batch.py)."""
import streamlit as st

from specdec_core.pairs import ModelPair
from ui.sections import impact_batch

# The first token in peers: vLLM V1 samples the first token from the target's prefill and only then asks the
# drafter for proposals (vllm/v1/worker/gpu_model_runner.py: sample, then propose_draft_token_ids); SGLang's EAGLE
# worker runs the target's prefill (forward_target_extend, python/sglang/srt/speculative/eagle_worker.py), takes
# its token, then prefills the drafter. This app's core (specdec_core/bookkeeping.py, batch.py) prefills all but the
# last prompt token and lets the first round read that token with the drafts: one round before the first token.
FIRST_TOKEN = (
    "**The first token**\n\nTime to first token is the target's pass over the whole prompt (its *prefill*). vLLM "
    "and SGLang take the first token from that pass and speculate from the second on; a drafter that is a model "
    "also reads the prompt. This app does one more thing first: its first round reads the last prompt token "
    "together with γ drafts, so its first token waits for a whole round. Either way, speculation does not bring "
    "the first token sooner.")
LIMITS = [
    FIRST_TOKEN,
    "**Throughput at large batch sizes**\n\nA server batching many requests already keeps the arithmetic busy. "
    "Verifying extra positions is then no longer free, and every rejected draft is real wasted work: the gain "
    "shrinks and can turn into a loss.",
    "**Pairs that do not fit**\n\nThe drafter must track the target. Sharing its tokenizer makes that simplest, "
    "but it is not required (Timor et al. 2025 verify losslessly across vocabularies). For multimodal or "
    "mixture-of-experts targets (where verifying many positions touches many experts) good drafters take real "
    "engineering.",
]


def show(pair: ModelPair) -> None:
    c = st.columns(3)
    for col, text in zip(c, LIMITS):
        with col.container(border=True):
            st.markdown(text)
    impact_batch.show(pair)  # the second limit, measured live
