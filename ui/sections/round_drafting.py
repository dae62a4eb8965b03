"""A Round, Token by Token → Go deeper: who chose this round's γ (the draft-length policy), and the other
drafters the bundled pair carries. The stepper reads the drafter chosen here (key rr_drafter)."""
import streamlit as st


def show(pair) -> None:
    st.markdown("Each round's γ comes from the sidebar's *draft-length policy* (under **Advanced settings**): the "
                "paper's fixed γ, or an *adaptive* policy, one that picks each round's γ from what earlier rounds "
                "showed, or stops drafting early when the drafter is unsure of its next token. No policy can look at "
                "the coming verdicts, so every one of them keeps the output exact; The α Dial races them. Above each "
                "round's chips, the stepper says why its drafting stopped.")
    if pair.self_drafters:  # the bundled pair also has drafters that read the target (a later chapter)
        labels = {"draft": next(iter(pair.drafts)), **{k: d.name for k, d in pair.self_drafters.items()}}
        st.radio("Drafter (the chapter *Drafters That Read the Target* explains the last three: small heads or a "
                 "small network that draft from the target's own features)", list(labels), format_func=labels.get,
                 horizontal=True, key="rr_drafter")
