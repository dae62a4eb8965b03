"""Beyond One Guess → Go deeper: a best-first tree (EAGLE-2's idea: Li et al., arXiv 2406.16858, 2024): a node
budget spent where the drafter's path probability is highest, instead of a fixed shape. The tree at the top
reads these controls (keys tr_dynamic, tr_budget; kept in the URL by the chapter)."""
import streamlit as st

from ui.state import tree_settings


def show() -> None:
    st.markdown("A fixed shape spends the same branching everywhere. EAGLE-2 (Li et al., 2024) grows the tree "
                "where the drafter is most confident instead: each new node goes below the path whose drafted "
                "probability is highest, until a node budget is spent. The shape then only sets the depth.")
    c2, c3 = st.columns(2, vertical_alignment="bottom")
    dynamic = c2.toggle("Best-first tree (a node budget)", key="tr_dynamic",
                        help="Grow the tree where the drafter is most confident, up to the budget.")
    # A slider only while the toggle is on: a disabled one draws its label and numbers in grey, under 3:1 on a
    # projector.
    if dynamic:
        c3.slider("Node budget", 1, tree_settings.MAX_NODES, key="tr_budget")
    else:
        c3.caption("**Node budget:** off, the shape alone sets the tree. Turn on *Best-first tree* to set one.")
