"""Class mode, the teacher's view (/class): start or resume a class, show the room the join code, QR
code and link, open, close and reveal each vote, a second vote after discussion, the next question, the
right answer, and a predict-the-demo question's demo run live. Every move is a store call, so the room
(phones on classroom/web, the projector) sees it from the store, whichever server process serves them.

The teacher key lives only in the starting browser's session (and in a key file the teacher may save to
resume after a reload); it is never in a URL and never drawn.
"""
import json
import urllib.parse

import streamlit as st

from classroom import codes
from classroom.web.view import results
from ui.content.class_text import plain, sentence
from ui.sections import class_join
from ui.server import admission, class_demos, demo, models
from ui.server.class_store import attempt, store
from ui.state import settings
from ui.widgets import class_views, layout

POLL_S = 1.5  # how often the teacher's count asks the store
KEY_FILE_MAX = 2048  # bytes of a teacher-key file


def show() -> None:
    """The teacher's view: the start and resume panels, or the class this session runs."""
    st.header("Class mode")
    code, key = st.session_state.get("cm_code"), st.session_state.get("cm_key")
    if not code or not key:
        st.markdown("Ask the room a question: students vote from their phones, the screen shows how many "
                    "answered and then the counts. After a discussion, a second vote; both stand side by side.")
        start_panel()
        resume_panel()
        return
    _, error = attempt(store().check_teacher, code, key)
    if error:
        st.error(error, icon=":material/key_off:")
        forget_button()
        return
    class_panel(code, key)


def start_panel() -> None:
    bank = store().bank
    concept = [q for q in bank.questions if q.demo is None]
    demos = [q for q in bank.questions if q.demo is not None]
    kinds = {"quiz": f"The class quiz ({len(concept)} questions, in the chapters' order)"}
    if demos:
        kinds["demo"] = "A predict-the-demo question (the room votes, then a live demo decides)"
    kind = st.radio("What the room answers", list(kinds), format_func=kinds.get, key="cm_kind")
    if kind == "demo":
        picked = [st.selectbox("Question", [q.id for q in demos], key="cm_demo_pick",
                               format_func=lambda qid: bank.get(qid).prompt)]
    else:
        picked = st.multiselect("Questions, in this order", [q.id for q in concept], default=[q.id for q in concept],
                                key="cm_pick", format_func=lambda qid: bank.get(qid).prompt[:90])
    if st.button("Start a class", key="cm_start", type="primary", icon=":material/play_arrow:", disabled=not picked):
        info, error = attempt(store().create_class, list(picked))
        if error:
            st.error(error)
            return
        st.session_state["cm_code"], st.session_state["cm_key"] = info.code, info.teacher_key
        st.session_state.pop("cm_q", None)
        st.rerun()


def resume_panel() -> None:
    with st.expander("Resume a class after a reload"):
        st.caption("Upload the key file saved when the class started, or type the class code and paste the key. "
                   "The key stays in this browser's session; it is never shown.")
        upload = st.file_uploader("Teacher key file", type=["json"], key="cm_keyfile")
        code_in = st.text_input("Class code", key="cm_resume_code", max_chars=12)
        key_in = st.text_input("Teacher key", key="cm_resume_key", type="password", max_chars=codes.TOKEN_MAX)
        if not st.button("Resume the class", key="cm_resume"):
            return
        code, key = code_in, key_in
        if upload is not None:
            try:
                data = json.loads(upload.getvalue()[:KEY_FILE_MAX].decode("utf-8"))
                code, key = str(data["code"]), str(data["teacher_key"])
            except (ValueError, KeyError, TypeError):
                st.error("That file is not a class key file (it should be the .json saved when the class started).")
                return
        normal = codes.normalize_code(code or "")
        if normal is None:
            st.error("Type the class code (its letters and digits) or upload the key file.")
            return
        _, error = attempt(store().check_teacher, normal, key or "")
        if error:
            st.error(f"That key does not open class {normal}." if "teacher key" in error else error)
            return
        st.session_state["cm_code"], st.session_state["cm_key"] = normal, key
        st.session_state.pop("cm_q", None)
        st.rerun()


def forget() -> None:
    for name in ("cm_code", "cm_key", "cm_q"):
        st.session_state.pop(name, None)


def forget_button() -> None:
    st.button("Leave this class on this screen", key="cm_forget", on_click=forget,
              help="Forgets the class in this browser (its votes stay in the store); start or resume another.")


def act(call, *args) -> None:
    """A teacher control's callback: the store call, or its refusal kept for the next draw."""
    _, error = attempt(call, *args)
    st.session_state["cm_error"] = error


def projector_url(code: str) -> str:
    """The room's screen for class `code`, opened by the teacher on the teacher's own machine: this page's
    address as the teacher's browser reached it."""
    parts = urllib.parse.urlsplit(st.context.url or "")
    base = f"{parts.scheme}://{parts.netloc}{parts.path or '/class'}" if parts.scheme in ("http", "https") \
        and parts.netloc else "/class"
    return f"{base}?code={code}&view=projector"


def next_question(code: str, key: str, qid: str) -> None:
    st.session_state["cm_q"] = qid
    act(store().open_vote, code, key, qid, 1)


def class_panel(code: str, key: str) -> None:
    s, error = attempt(store().state, code)
    if error:
        st.error(error)
        forget_button()
        return
    bank = store().bank
    left, right = st.columns([3, 2], vertical_alignment="top")
    with left:
        class_join.show(code)
    with right:
        st.link_button("Open the projector view", projector_url(code), icon=":material/cast:",
                       help="A read-only page for the room's screen: code, QR code, question, count and results.")
        st.download_button("Save the teacher key (to resume after a reload)", key="cm_key_download",
                           data=json.dumps({"code": code, "teacher_key": key}), file_name=f"class-{code}-key.json",
                           mime="application/json", on_click="ignore", icon=":material/key:",
                           help="The key that runs this class. Keep the file; never project or share it.")
        csv, _ = attempt(store().export_csv, code, key)
        st.download_button("Download the counts (CSV)", key="cm_csv", data=csv or "", file_name=f"class-{code}-counts.csv",
                           mime="text/csv", on_click="ignore", icon=":material/download:", disabled=csv is None)
        forget_button()

    ids = list(s.question_ids)
    if st.session_state.get("cm_q") not in ids:
        st.session_state["cm_q"] = s.question_id if s.question_id in ids else ids[0]
    st.divider()
    qid = st.selectbox("Question", ids, key="cm_q",
                       format_func=lambda i: f"{ids.index(i) + 1}. {bank.get(i).prompt[:110]}")
    q = bank.get(qid)
    current = s.question_id == qid
    st.html(class_views.question_html(q.prompt, q.options, big=False))
    facts, _ = attempt(store().facts, code)
    controls(code, key, s, q, ids, current, facts)
    if error := st.session_state.pop("cm_error", None):
        st.error(error)
    teacher_count(code, key)
    if current and s.revealed and facts is not None:
        class_views.show_results(q, results(store(), s, q, facts), big=True, key="cm_teacher_hist")
    if q.demo is not None:
        demo_panel(code, key, q)
    with st.expander("The right answer and why (this screen only)"):
        if q.demo is not None:
            st.markdown("The demo decides: run it live after the vote. " + plain(q.explanation))
        else:
            st.markdown(f"**{class_views.letter(q.answer)}**: {plain(q.options[q.answer])}\n\n{plain(q.explanation)}")


def controls(code, key, s, q, ids, current, facts) -> None:
    """The buttons that move the class on, for the selected question's state, in four fixed places. A
    click reruns the page, and until the new buttons are drawn the old ones still take clicks: so the
    place of a button just pressed holds the next step or a harmless one (Close and reveal → Reveal →
    Hide), never "Reopen the vote" or "Second vote" (a second click there would undo the first)."""
    n = s.round or 1
    buttons = [None] * 4  # by column: (label, key, callback, args, primary, icon), or None for an empty place
    if not current or s.round is None:
        buttons[0] = ("Open the vote", "cm_open", act, (store().open_vote, code, key, q.id, 1), True, "how_to_vote")
    elif s.open:
        buttons[0] = ("Close and reveal", "cm_reveal", act, (store().reveal, code, key), True, "bar_chart")
        buttons[1] = ("Close the vote", "cm_close", act, (store().close_vote, code, key), False, "lock")
    elif not s.revealed:
        buttons[0] = ("Reveal the answers", "cm_reveal", act, (store().reveal, code, key), True, "bar_chart")
        buttons[2] = ("Reopen the vote", "cm_reopen", act, (store().open_vote, code, key, q.id, n), False, "lock_open")
    else:
        buttons[0] = ("Hide the answers", "cm_hide", act, (store().hide, code, key), False, "visibility_off")
        if n == 1:
            buttons[1] = ("Second vote, after discussion", "cm_revote", act, (store().open_vote, code, key, q.id, 2),
                          True, "forum")
        # A demo question's answer is its verdict, which the room sees as soon as the demo has run.
        if q.demo is None and n < 2 and facts is not None and q.id not in facts.answer_shown:
            buttons[2] = ("Show the right answer", "cm_show_answer", act, (store().show_answer, code, key, q.id),
                          False, "check_circle")
    position = ids.index(q.id)
    if current and position + 1 < len(ids) and s.round is not None and not s.open:
        buttons[3] = ("Next question", "cm_next", next_question, (code, key, ids[position + 1]), False, "arrow_forward")
    for column, button in zip(st.columns(4), buttons):
        if button is None:
            continue
        label, widget_key, callback, args, primary, icon = button
        column.button(label, key=widget_key, on_click=callback, args=args, type="primary" if primary else "secondary",
                      icon=f":material/{icon}:", width="stretch")


@st.fragment(run_every=POLL_S)
def teacher_count(code: str, key: str) -> None:
    """The count of phones joined and of answers arriving, polled; the room's lock."""
    layout.run_marker()
    s, error = attempt(store().state, code)
    if error:
        st.error(error)
        return
    c = st.columns([2, 2, 3, 2], vertical_alignment="center")
    c[0].metric("Students joined", s.students)
    c[1].metric("Answers in this vote", s.answers if s.question_id else "—")
    c[2].markdown(f"**{class_views.status_line(s)}**")
    if s.locked:
        c[3].button("Unlock room", key="cm_unlock", icon=":material/lock_open:", width="stretch",
                    on_click=act, args=(store().lock, code, key, False),
                    help="Phones may join again (each network address a few seats a minute).")
        c[3].caption("Room locked: no new phones can join; the joined keep voting.")
    else:
        c[3].button("Lock room", key="cm_lock", icon=":material/lock:", width="stretch",
                    on_click=act, args=(store().lock, code, key, True),
                    help="No new phones can join (the joined keep voting): lock it once the room is in.")


def demo_panel(code: str, key: str, q) -> None:
    """A predict-the-demo question: run its demo live (a generation slot, as the chapters take) and put
    the verdict in the store, where the room's screen and the phones read it."""
    try:
        spec = class_demos.spec(q.demo)
    except ValueError as err:
        st.warning(f"This question's demo cannot run: {sentence(err)}")
        return
    st.subheader("Run the demo live")
    st.caption(f"Uses the sidebar's prompt, sampling and seed: it {class_demos.describe(spec)}.")
    if not st.button("Run the demo", key="cm_demo_run", type="primary", icon=":material/science:"):
        return
    pair = models.require_pair()
    ids = models.require_prompt_ids(pair)
    s = settings.current()
    stored = demo.execute(f"cm_demo_{code}_{q.id}", (models.pair_key(pair), s.signature(), q.id),
                          lambda progress: {"result": class_demos.run(spec, pair, ids, s,
                                                                      admission.pacing("the class demo", progress))},
                          what="the class demo", failure="Could not run the demo", slot=False,
                          progress_text="Running the demo…")
    option, why = class_demos.verdict(spec, stored["result"])
    _, error = attempt(store().record_verdict, code, key, q.id, option, why)
    if error:
        st.error(error)
        return
    st.rerun()
