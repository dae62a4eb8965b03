"""Impact's folded section: the family tree of the idea, from the two papers to the serving stacks."""
import streamlit as st

# Claims about peers, checked against their sources:
# - transformers shipped the method as "assisted generation" in v4.29 (May 2023; huggingface/transformers
#   PR #22211, generation/candidate_generator.py today), and across tokenizers as universal assisted generation
#   (`assistant_tokenizer=`; AssistedCandidateGeneratorDifferentTokenizers in the same file).
# - vLLM's speculative decoding landed in pieces from 2024: e.g. vllm-project/vllm PR #2424 (draft-model worker,
#   merged January 2024).
# - DistillSpec: Zhou et al. 2023, arXiv 2310.08461 (on-policy data from the drafter, a divergence chosen per
#   decoding strategy). Lossless across vocabularies: Timor et al. 2025, arXiv 2502.05202.
# - Leviathan et al. is arXiv 2211.17192 (30 Nov 2022), Chen et al. arXiv 2302.01318 (2 Feb 2023): about nine weeks.
# - llama.cpp has no paged KV cache: its PagedAttention pull requests ggml-org/llama.cpp #14070 and #17579 were
#   closed unmerged (#22569, a draft, is open); its server batches requests continuously over one unified KV cache.
#   Its server's speculative mode (`--model-draft`): ggml-org/llama.cpp PR #10455, merged Nov 2024. Paged KV caches:
#   vLLM (vllm/v1/core/kv_cache_manager.py), TensorRT-LLM (docs/source/gpt_attention.md, "Paged KV cache") and
#   SGLang (PagedTokenToKVPoolAllocator, python/sglang/srt/mem_cache/allocator.py).
ASSISTED_RELEASE = "v4.29"  # transformers' first release with assisted generation
LINEAGE = [
    ("2022–23", "Two groups, one idea",
     "Leviathan, Kalman & Matias (Google) and Chen et al. (DeepMind, *speculative sampling*, shown on Chinchilla "
     "70B) published the draft-then-verify scheme with the same exact rejection rule independently, about two "
     "months apart (Nov 2022 and Feb 2023). "
     f"Hugging Face's transformers shipped it as *assisted generation* in May 2023 ({ASSISTED_RELEASE})."),
    ("2023–24", "Self-drafting: Medusa and EAGLE",
     "Why keep a second model? Medusa adds extra prediction heads to the target, each guessing a token further "
     "ahead, and checks a tree of candidates in one pass (its typical-acceptance mode relaxes exactness for "
     "speed). EAGLE drafts from the target's own last hidden states with a one-layer head, which raises α at tiny "
     "cost (chapter *Drafters That Read the Target*)."),
    ("2023 →", "Drafts without a model",
     "Prompt lookup (an *n-gram* drafter) finds the last few tokens earlier in the text and proposes what followed "
     "them there; retrieval drafters look continuations up in a datastore. No draft passes at all: ideal for "
     "editing, quoting and summarising, where outputs reuse inputs."),
    ("2023 →", "Drafters trained for agreement",
     "α became an optimisation target: DistillSpec (Zhou et al. 2023) distils the drafter on text the drafter "
     "itself generates (on-policy data) and picks the divergence it minimises to suit the decoding strategy, "
     "greedy or sampling. This app's two bundled drafters have the same size and differ only in their training: "
     "compare their measured α on *The α Dial*."),
    ("2024 →", "Drafters with another vocabulary",
     "The drafter need not share the target's tokenizer: Timor et al. (2025) give lossless verification across "
     "vocabularies, and transformers' *universal assisted generation* re-tokenises the drafts for the target."),
    ("2024 →", "Serving stacks",
     "vLLM, TensorRT-LLM and SGLang ship speculative modes, now a standard feature, next to paged KV caches "
     "(memory managed in blocks, as in PagedAttention) and continuous batching (requests join and leave the batch "
     "every step); llama.cpp's server ships one next to continuous batching over a single unified cache. The three "
     "compose: one saves memory, one keeps the accelerator full, one cuts serial steps."),
]


def show() -> None:
    for when, what, detail in LINEAGE:
        st.markdown(f"**{when} · {what}** — {detail}")
