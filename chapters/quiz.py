"""Chapter: Quiz. The full practice bank (assets/quiz.json) or the class quiz's concept questions
(assets/class_quiz.json), chosen at the top; in an order shuffled by the seed, one at a time with
immediate feedback, an explanation and a link to the chapter; then the score, a review and a retry.
State lives in this user's session only."""
import streamlit as st

from ui.content import chapters, quiz, reading
from ui.state import settings
from ui.widgets import layout

TITLES = {c.path: c.title for c in chapters.CHAPTERS}


PRACTICE, CLASS = "Full practice bank", "Class quiz"


@st.cache_data(show_spinner=False)
def questions(which: str) -> list[quiz.Question]:
    return quiz.class_quiz(chapters=TITLES) if which == CLASS else quiz.load(chapters=TITLES)


s = settings.current()
st.header("Quiz")
layout.intro(
    "The **full practice bank** has every question on every chapter; the **class quiz** is the short one a class "
    "takes together (in class mode it follows the chapters). Here both come in an order set by the seed, and each "
    "answer is checked at once, with an explanation and a link to the chapter that covers it.",
    "answer one question wrong on purpose and follow the link: the chapter shows the idea live.")
# A radio, not a segmented control: the dark theme writes a selected segment in its red, under 4.5:1.
which = st.radio("Which quiz", [PRACTICE, CLASS], key="qz_which", horizontal=True)

try:
    bank = questions(which)
except ValueError as err:
    st.error(f"The quiz file cannot be used: {err}")
    st.stop()
by_id = {q.id: q for q in bank}


def shuffle_seed(seed: int, attempt: int) -> int:
    return seed * 1009 + attempt


def start(attempt: int) -> None:
    order = [q.id for q in quiz.shuffled(bank, seed=shuffle_seed(s.seed, attempt))]
    st.session_state["qz"] = {"order": order, "index": 0, "answers": {}, "attempt": attempt, "seed": s.seed}


state = st.session_state.get("qz")
if state is None or set(state["order"]) != set(by_id) or state["seed"] != s.seed:
    start(0)
    state = st.session_state["qz"]


def check(qid: str, widget_key: str) -> None:
    value = st.session_state.get(widget_key)
    st.session_state["qz"]["answers"][qid] = value


def advance() -> None:
    st.session_state["qz"]["index"] += 1


def retry() -> None:
    start(st.session_state["qz"]["attempt"] + 1)


order, answers = state["order"], state["answers"]
right, total = quiz.score([by_id[i] for i in order], answers)
st.progress(len(answers) / total,
            text=f"Question {min(state['index'] + 1, total)} of {total} · score so far {right}/{len(answers)}")

if state["index"] < total:
    q = by_id[order[state["index"]]]
    key = f"qz_{q.id}_{state['attempt']}"
    with st.container(border=True, key="lesson-demo"):
        st.markdown(f"**Question {state['index'] + 1}.** {q.prompt}")
        answered = q.id in answers
        if q.kind == "choice":
            # The radio's values are the options' indices in the file, shown in a shuffled order.
            shown = quiz.option_order(q, shuffle_seed(state["seed"], state["attempt"]))
            st.radio("Your answer", shown, format_func=lambda i: q.options[i], index=None,
                     key=key, disabled=answered, label_visibility="collapsed")
        else:
            st.number_input(f"Your answer{' (' + q.unit + ')' if q.unit else ''}", value=None, step=0.01,
                            format="%.2f", key=key, disabled=answered, placeholder="a number")
        if not answered:
            st.button("Check", key="qz_check", type="primary", on_click=check, args=(q.id, key),
                      disabled=st.session_state.get(key) is None)
        else:
            if q.is_correct(answers[q.id]):
                st.success(f"**Right.** {q.explanation}", icon=":material/check_circle:")
            else:
                st.error(f"**Not quite.** The answer is **{q.answer_text()}**. {q.explanation}", icon=":material/cancel:")
            st.page_link(q.chapter, label=f"Go to the chapter: {TITLES[q.chapter]}", icon=":material/menu_book:")
            last = state["index"] + 1 == total
            st.button("See the score" if last else "Next question", key="qz_next", type="primary", on_click=advance)
else:
    st.subheader(f"Score: {right} / {total}")
    st.markdown("Every one right." if right == total else
                f"{total - right} to review: the links below take you to the chapters that cover them.")
    review = []
    for n, qid in enumerate(order, start=1):
        q = by_id[qid]
        given = answers.get(qid)
        shown = (q.options[given] if q.kind == "choice" and given is not None else
                 (f"{given:g}" if given is not None else "—"))
        review.append({"#": n, "question": q.prompt, "your answer": shown, "right answer": q.answer_text(),
                       "result": "✓" if q.is_correct(given) else "✗", "chapter": TITLES[q.chapter]})
    st.dataframe(review, hide_index=True, key="qz_review",
                 column_config={"question": st.column_config.TextColumn(width="large")})
    for chapter_path in dict.fromkeys(by_id[r].chapter for r in order if not by_id[r].is_correct(answers.get(r))):
        st.page_link(chapter_path, label=f"Review: {TITLES[chapter_path]}", icon=":material/menu_book:")
    st.button("Retry (new order)", key="qz_retry", type="primary", icon=":material/restart_alt:", on_click=retry)
    reading.show()
