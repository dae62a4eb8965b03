"""Small layout conventions every chapter follows."""
import streamlit as st

TITLE = "Draft Fast, Verify Exact — speculative decoding, live"


def intro(seeing: str, try_this: str) -> None:
    """The two sentences that say what the page shows, and one thing to try."""
    st.markdown(seeing)
    st.info(f"**Try this:** {try_this}", icon=":material/lightbulb:")


def paper_badge() -> str:
    """Marks a figure as the paper's, not this app's."""
    return ":gray-badge[from the paper]"


def measured_badge() -> str:
    """Marks a figure as measured live here."""
    return ":green-badge[measured here, live]"
