"""Beyond One Guess → Go deeper: the rule that keeps a tree exact, named and cited. specdec_core/tree.py
implements it (EXACT_TREE) and proves it in its docstring; specdec_core/broken holds two rules that look right
and are not."""
import streamlit as st


def show(greedy: bool) -> None:
    # SpecInfer: Miao et al., "SpecInfer: Accelerating Large Language Model Serving with Tree-based Speculative
    # Inference and Verification" (arXiv 2305.09781, ASPLOS 2024): token trees verified in one pass (tree attention)
    # with multi-step speculative sampling. Drawing siblings without replacement: Yang et al., "Multi-Candidate
    # Speculative Decoding" (arXiv 2401.06706, 2024); Jeon et al., "Recursive Speculative Decoding" (arXiv
    # 2402.14160, 2024). EAGLE-2: Li et al. (arXiv 2406.16858, 2024).
    # Tree attention: SpecInfer's tree-based parallel decoding (a topology-aware causal mask, Miao et al. 2023) and
    # Medusa's "tree attention" (Cai et al. 2024, arXiv 2401.10774): each node attends to the kept text and its own
    # ancestors, at the position of its depth. specdec_core/lm.py builds that mask for the target's pass.
    st.markdown(
        "**How one pass checks a whole tree: tree attention.** The tree's nodes go into the target's pass side by "
        "side, and an attention mask lets each node see only the text already kept and its own ancestors, at the "
        "position of its depth. Each node therefore gets exactly the p its branch would get as a chain of its own, "
        "and the one pass gives p at every node.")
    st.markdown(
        "The rule is **recursive rejection sampling**, with each node's children drawn from the drafter's q "
        "*without replacement*. Tree verification in one pass and multi-step speculative sampling come from "
        "SpecInfer (Miao et al., 2023); drawing the siblings without replacement is the refinement of Yang et al. "
        "(2024, multi-candidate speculative decoding) and Jeon et al. (2024, recursive speculative decoding).")
    st.markdown(
        "From the root down, a node's children are tried in the order they were drawn (top to bottom in the "
        "picture). A child x is kept with chance min(1, p(x)/q(x)), exactly as in a chain. After a rejection the "
        "next sibling faces the residual p ← norm(max(0, p − q)), and q loses the rejected token (renormalised), "
        "because the sibling was drawn without it. If every child fails, the token comes from what is left of p "
        "(a corrective token); an accepted leaf earns a bonus token from p. Each hand-over is the chain's rule "
        "once more, so by induction every emitted token is distributed exactly as p.")
    st.caption("The winning path is the thick solid line and its nodes carry ★ / ✓; rejected nodes ✗, unchecked ·."
               + (" In greedy mode a child is kept exactly when it is the target's argmax." if greedy else ""))
