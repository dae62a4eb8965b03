"""A Round, Token by Token → Go deeper: the acceptance rule in full (greedy and sampling) and the proof that
it samples exactly from p (Leviathan et al. 2022, §2.3 and Appendix A.1; Chen et al. 2023, Theorem 1)."""
import streamlit as st


def show() -> None:
    st.markdown("A round: the *drafter* (the small model) draws γ tokens x₁…x_γ one after another, each from its own "
                "next-token distribution q; the *target* then scores them all in one pass, which gives its own "
                "distribution p at each of the γ + 1 positions. The rule decides, left to right, which drafts to keep.")
    g, smp = st.columns(2)
    with g:
        st.markdown("**Greedy (temperature 0).** Both p and q put all their mass on one token.")
        st.latex(r"\text{accept } x_i \iff x_i = \arg\max p_i")
        st.markdown("At the first draft that is not the target's argmax, emit the target's argmax instead; if all "
                    "pass, emit the argmax of p at position γ+1. Every token is the one plain greedy decoding would "
                    "pick, so the text is identical token for token.")
    with smp:
        st.markdown("**Sampling.** Draw a uniform u for each draft, left to right:")
        st.latex(r"\text{accept } x_i \text{ while } u_i < \frac{p_i(x_i)}{q_i(x_i)}\quad (u_i \sim U(0,1))")
        st.markdown("At the first rejection, draw the corrective token from the residual at that position:")
        st.latex(r"x \sim \operatorname{norm}\big(\max(0,\ p - q)\big)")
        st.markdown("If every draft passes, draw a bonus token from p itself at position γ+1 (no residual: there "
                    "is no draft there to correct).")
    st.markdown("**Why the combination samples exactly from p.** A token y comes out of the accept branch with "
                "probability q(y) · min(1, p(y)/q(y)) = min(p(y), q(y)). A rejection happens with the probability "
                "that is left over, 1 − Σ min(p, q) = Σ max(0, p − q), and then y is drawn with probability "
                "max(0, p(y) − q(y)) / Σ max(0, p − q). Adding the two routes:")
    st.latex(r"P(y) = \min\big(p(y), q(y)\big) + \max\big(0,\ p(y) - q(y)\big) = p(y)")
    st.markdown("So whatever the drafter proposes, each emitted token has exactly the target's distribution; a "
                "good drafter only makes the first route more likely, which is where the speed comes from. "
                "That first route's probability, β = Σ min(p, q) = 1 − TV(p, q), is the most two distributions can "
                "share: no rule that must output exactly p can accept a draft from q more often.")
