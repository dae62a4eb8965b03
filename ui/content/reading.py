"""Further reading: the papers the app teaches from, with their arXiv ids (one list, shown at the end
of the quiz and under Key Takeaways on Home)."""
from dataclasses import dataclass

import streamlit as st


@dataclass(frozen=True)
class Paper:
    authors: str
    year: int
    title: str
    arxiv: str  # the arXiv id
    why: str  # one line: what to read it for


PAPERS = (
    Paper("Leviathan, Kalman & Matias", 2022, "Fast Inference from Transformers via Speculative Decoding",
          "2211.17192", "the method, its proof, α, the cost model and Tables 1–2"),
    Paper("Chen et al.", 2023, "Accelerating Large Language Model Decoding with Speculative Sampling",
          "2302.01318", "the same rule found independently, on Chinchilla 70B"),
    Paper("Stern, Shazeer & Uszkoreit", 2018, "Blockwise Parallel Decoding for Deep Autoregressive Models",
          "1811.03115", "draft-then-verify for greedy decoding, before the name"),
    Paper("Xia et al.", 2022, "Speculative Decoding: Exploiting Speculative Execution for Accelerating Seq2seq "
          "Generation", "2203.16487", "the first use of the name"),
    Paper("Sun et al.", 2023, "SpecTr: Fast Speculative Decoding via Optimal Transport", "2310.15141",
          "why α = 1 − TV(p, q) is the best one draft can do, and what several drafts can"),
    Paper("Miao et al.", 2023, "SpecInfer: Accelerating Large Language Model Serving with Tree-based Speculative "
          "Inference and Verification", "2305.09781", "token trees verified in one pass"),
    Paper("Cai et al.", 2024, "Medusa: Simple LLM Inference Acceleration Framework with Multiple Decoding Heads",
          "2401.10774", "drafting heads on the target, and typical acceptance"),
    Paper("Li et al.", 2024, "EAGLE: Speculative Sampling Requires Rethinking Feature Uncertainty", "2401.15077",
          "drafting from the target's own hidden states"),
    Paper("Zhou et al.", 2023, "DistillSpec: Improving Speculative Decoding via Knowledge Distillation",
          "2310.08461", "training the drafter to agree with the target"),
    Paper("Mamou et al.", 2024, "Dynamic Speculation Lookahead Accelerates Speculative Decoding of Large "
          "Language Models", "2405.04304", "choosing γ as you go (DISCO)"),
)


def markdown() -> str:
    """The list as markdown bullets with arXiv links."""
    return "\n".join(f"- {p.authors} ({p.year}), *{p.title}*, [arXiv {p.arxiv}](https://arxiv.org/abs/{p.arxiv}): "
                     f"{p.why}." for p in PAPERS)


def show(heading: str = "Further reading") -> None:
    st.subheader(heading)
    st.markdown(markdown())
