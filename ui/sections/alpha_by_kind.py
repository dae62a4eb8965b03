"""The α Dial → Go deeper: α by kind of text (behind a button). Leviathan et al. observe that hard tasks
often contain easier subtasks; the live pair is measured on three kinds of passage."""
import streamlit as st

from specdec_core.analysis.task_kinds import KINDS, alpha_by_kind
from ui.server import admission, demo, models
from ui.widgets import layout, tables


def show(pair, s, profile) -> None:
    # Leviathan, Kalman & Matias (2022), §1: "hard language-modeling tasks often include easier subtasks that can
    # be approximated well by more efficient models".
    st.markdown(
        "The paper's starting observation: a hard task often contains easier subtasks, stretches of text a small "
        "model predicts as well as a big one. The drafter agrees more where the text is formulaic, so speculation "
        "pays most where the text is predictable. Below, the live pair is measured on three kinds of passage: "
        "*formulaic* (stage directions and stock replies), *self-repeating* (the same lines three times), and "
        "*free verse* (Whitman: no metre, no rhyme, no refrain).")
    st.markdown(
        "Each passage is measured *teacher-forced*: both models read the passage as written (nothing is drafted "
        "or sampled), so every position gets its p and q in one pass of each model. The α shown is the mean of "
        "β = Σ min(p, q) over every position of the passage, with the sidebar's sampling settings: an estimate "
        "of α for that kind of text.")
    kinds_signature = (models.pair_key(pair), s.sampling)
    demo.run("Measure α by kind of text", key="ad_kinds_run", state="ad_kinds", signature=kinds_signature,
             work=lambda progress: {"kinds": alpha_by_kind(pair.target, pair.draft, pair.tokenizer, s.sampling,
                                                           context_length=pair.context_length,
                                                           pacing=admission.pacing("the α by kind"))},
             what="the α by kind", slot=False, icon=":material/text_fields:")
    stored_kinds = demo.latest("ad_kinds", kinds_signature, stale="note", again="Measure α by kind of text")
    by_kind = stored_kinds["kinds"] if stored_kinds else None
    if not by_kind:
        st.caption("Press the button: one teacher-forced pass of each model over each passage (a second or two).")
    else:
        tables.show([{"kind of text": kind, "α (mean β over the passage)": round(res["alpha"], 3),
                      "greedy agreement": round(res["alpha_greedy"], 3), "positions": res["positions"]}
                     for kind, res in by_kind.items()], key="ad_kinds_table")
        ranked = sorted(by_kind, key=lambda k: by_kind[k]["alpha"], reverse=True)
        spread = by_kind[ranked[0]]["alpha"] - by_kind[ranked[-1]]["alpha"]
        st.markdown(f"{layout.measured_badge()} Highest α: *{ranked[0]}* ({by_kind[ranked[0]]['alpha']:.2f}); lowest: "
                    f"*{ranked[-1]}* ({by_kind[ranked[-1]]['alpha']:.2f}), a spread of {spread:.2f}. "
                    + ("The formulaic or repeated text leads, as the paper observed." if ranked[-1] == "free verse" else
                       "Here the free verse does not come last: a pair trained on plays finds its own genre's stock "
                       "phrases no easier than plain English, a reminder that 'easy' means easy for this drafter.")
                    + " Expand a passage to read it.")
        with st.expander("The three passages"):
            for kind, text in KINDS.items():
                st.markdown(f"**{kind}**")
                st.code(text, language=None)
