"""Class mode (/class): a teacher asks the room a question, students vote from their phones, the projector
shows how many answered and, once revealed, the counts; after a discussion the room votes again and both
votes stand side by side (Mazur's peer instruction). The votes live in the class store (classroom/).

Three views, chosen by the URL:
    /class                            the teacher: start a class, open, close, reveal, revote, next question
    /class?join=CODE[&student=ID]     a student: join (no name), tap an answer, change it while the vote is open
    /class?code=CODE&view=projector   the room's screen: code, QR code, question, count, histogram; no controls

The teacher key lives only in the starting browser's session (and in a key file the teacher may save to
resume after a reload); it is never in a URL and never drawn. Students and the projector poll the store
(st.fragment(run_every=POLL_S)), so nobody reloads by hand.
"""
import json
import re
import urllib.parse

import streamlit as st

import classroom
from classroom import codes
from ui.server import admission, class_demos, demo, models
from ui.state import settings
from ui.widgets import class_views, layout

POLL_S = 1.5  # how often a student's page, the projector and the teacher's count ask the store
PARAM_MAX = 64  # longest query value looked at; anything longer is refused unread
KEY_FILE_MAX = 2048  # bytes of a teacher-key file
PARAMS = ("join", "code", "view", "student")
FALLBACK_URL = "http://localhost:8501/class"
MARKDOWN_SIGNS = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>&$:])")
# The room's views poll every POLL_S: Streamlit fades an element while its fragment reruns, which on a
# busy server made a phone's buttons and messages flash to 2:1 contrast every poll. They stay as they are.
ROOM_STYLE = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"],
[data-testid="stSidebarNav"] { display: none !important; }
[data-testid="stMainBlockContainer"] { padding-top: 4rem; }
[data-stale="true"] { opacity: 1 !important; transition: none !important; }
[class*="st-key-cm_opt_"] button { min-height: 3.6rem; justify-content: flex-start; text-align: left; }
[class*="st-key-cm_opt_"] button p { font-size: 1.15rem; }
.st-key-cm_join button { min-height: 3.6rem; }
.st-key-cm_join button p { font-size: 1.3rem; }
</style>"""


# --- the store and its refusals ------------------------------------------------------------------------

@st.cache_resource(show_spinner=False)
def _store(url: str):
    return classroom.open_store(url, bank=class_demos.bank())


def store():
    """This process's class store (one per database URL), or a message and a stop."""
    try:
        return _store(classroom.default_url())
    except Exception as err:  # a bad SPECDEC_CLASS_DB, an unreadable question file, a database that is down
        st.info(f"Class mode is not available on this server: {sentence(err)} (the operator sets the class "
                f"database with {classroom.ENV_VAR}).", icon=":material/database:")
        st.stop()


def plain(text: str) -> str:
    """Text shown as it is inside a markdown element: every markdown, HTML and LaTeX sign escaped, so
    a hostile value can neither format, link nor inject."""
    return MARKDOWN_SIGNS.sub(r"\\\1", "".join(ch if ch.isprintable() else "?" for ch in str(text)))


def sentence(err: BaseException) -> str:
    """A refusal as a sentence for the page (the store's messages are plain words already; they may
    quote what a visitor typed, so they are escaped)."""
    text = (str(err).strip() or type(err).__name__)[:300]
    return plain(text[:1].upper() + text[1:] + ("" if text.endswith((".", "!", "?")) else "."))


def attempt(call, *args, **kwargs):
    """(result, None) or (None, what to tell the visitor): every refusal of the store becomes a sentence."""
    try:
        return call(*args, **kwargs), None
    except PermissionError:
        return None, ("This browser does not hold this class's teacher key, so it cannot run the class. "
                      "Resume with the key file saved when the class started.")
    except classroom.ClassError as err:
        return None, sentence(err)

def polled_state(code: str, quiet: bool = False):
    """One poll of a fragment: count the run (the test drivers wait on it, tests/serve.py), then read
    the class's state; a refusal is shown as its sentence (unless `quiet`) and gives None."""
    layout.run_marker()
    s, error = attempt(store().state, code)
    if error and not quiet:
        st.error(error)
    return s



# --- the URL -------------------------------------------------------------------------------------------

def read_params() -> dict[str, str]:
    """The class's query values, refused with a message (and a stop) when a value cannot be one of ours."""
    values = {}
    for name in PARAMS:
        raw = st.query_params.get(name)
        if raw is None:
            continue
        if len(raw) > PARAM_MAX:
            st.error(f"This link's **{name}** value is {len(raw)} characters long; a class link's values are at most "
                     f"{PARAM_MAX}. Ask for the link again or type the class code.", icon=":material/link_off:")
            st.stop()
        values[name] = raw
    return values


def checked_code(raw: str) -> str:
    code = codes.normalize_code(raw)
    if code is None:
        st.error(f"“{plain(raw[:PARAM_MAX])}” is not a class code: a code is 6 letters and digits, as on the "
                 "screen at the front of the room.", icon=":material/pin:")
        st.stop()
    return code


def page_url() -> str:
    """This page's address as a browser reached it (for the join link), without any query."""
    url = st.context.url or FALLBACK_URL
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return FALLBACK_URL
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path or "/class", "", ""))


def join_link(code: str) -> str:
    return f"{page_url()}?join={code}"


def projector_link(code: str) -> str:
    return f"{page_url()}?code={code}&view=projector"


# --- what every view shows ---------------------------------------------------------------------------------

def rounds_of(s, up_to: int | None = None) -> dict[int, dict[int, int]]:
    """The current question's tallies, round 1 to its current round (or `up_to`)."""
    last = up_to or s.round or 1
    out = {}
    for r in range(1, last + 1):
        counts, error = attempt(store().tally, s.code, s.question_id, r)
        if counts is not None and (r == last or sum(counts.values())):
            out[r] = counts
    return out


def room(code: str) -> dict:
    """What the room sees beyond the store's state, for this server process: whether the teacher showed the
    right answer, and the predict-the-demo verdicts (question id -> (option, sentence))."""
    rooms = _rooms()
    return rooms.setdefault(code, {"answer_shown": set(), "verdicts": {}})


@st.cache_resource(show_spinner=False)
def _rooms() -> dict:
    return {}


def right_option(q, code: str) -> int | None:
    """The right option as the room may see it: the question's, or the demo's verdict once it has run."""
    if q.demo is not None:
        verdict = room(code)["verdicts"].get(q.id)
        return verdict[0] if verdict else None
    return q.answer


def show_results(q, s, *, big: bool, key: str, height: int = 380) -> None:
    """The histogram of the current question (both rounds side by side after a revote), and the right
    answer once the room may see it."""
    rounds = rounds_of(s)
    shown = q.id in room(s.code)["answer_shown"] or (s.round or 1) >= 2
    right = right_option(q, s.code) if shown else None
    summary = "; ".join(f"{class_views.round_name(r)}: " + ", ".join(
        f"{class_views.letter(i)} {n}" for i, n in counts.items()) for r, counts in rounds.items())
    fig = class_views.histogram(q.options, rounds, right=right, height=height, big=big)
    st.plotly_chart(fig, key=key, config={"displayModeBar": False}, width="stretch",
                    alt=f"Votes per option. {summary}.")
    st.caption("Counts per option, never names" + ("; ✓ marks the right answer." if right is not None else ".") +
               f" {summary}.")
    verdict = room(s.code)["verdicts"].get(q.id)
    if verdict:
        st.success(f"**The demo decided: {class_views.letter(verdict[0])}.** {plain(verdict[1])}",
                   icon=":material/science:")
    elif right is not None:
        st.success(f"**Right answer: {class_views.letter(right)}.** {plain(q.explanation)}",
                   icon=":material/check_circle:")


def status_line(s) -> str:
    if s.question_id is None:
        return "Waiting for the first question."
    vote = "Second vote" if (s.round or 1) == 2 else class_views.round_name(s.round or 1)
    if s.open:
        return f"{vote}: open."
    return f"{vote}: closed" + ("; the counts are on the screen." if s.revealed else ".")


# --- the teacher ----------------------------------------------------------------------------------------

def teacher_view() -> None:
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
            st.error("Type the class code (6 letters and digits) or upload the key file.")
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
        st.html(class_views.join_panel_html(code, join_link(code)))
    with right:
        st.link_button("Open the projector view", projector_link(code), icon=":material/cast:",
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
    controls(code, key, s, q, ids, current)
    if error := st.session_state.pop("cm_error", None):
        st.error(error)
    teacher_count(code)
    if current and s.revealed:
        show_results(q, s, big=True, key="cm_teacher_hist")
    if q.demo is not None:
        demo_panel(code, q)
    with st.expander("The right answer and why (this screen only)"):
        if q.demo is not None:
            st.markdown("The demo decides: run it live after the vote. " + plain(q.explanation))
        else:
            st.markdown(f"**{class_views.letter(q.answer)}**: {plain(q.options[q.answer])}\n\n{plain(q.explanation)}")


def controls(code, key, s, q, ids, current) -> None:
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
        shown = room(code)["answer_shown"]
        if q.id not in shown and n < 2 and right_option(q, code) is not None:
            buttons[2] = ("Show the right answer", "cm_show_answer", shown.add, (q.id,), False, "check_circle")
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
def teacher_count(code: str) -> None:
    """The count of answers arriving, polled."""
    s = polled_state(code)
    if s is None:
        return
    c = st.columns(3)
    c[0].metric("Students joined", s.students)
    c[1].metric("Answers in this vote", s.answers if s.question_id else "—")
    c[2].markdown(f"**{status_line(s)}**")


def demo_panel(code: str, q) -> None:
    """A predict-the-demo question: run its demo live (a generation slot, as the chapters take) and put
    the verdict on the room's screen."""
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
    room(code)["verdicts"][q.id] = class_demos.verdict(spec, stored["result"])
    st.rerun()


# --- a student ------------------------------------------------------------------------------------------

def student_view(code: str, student_param: str | None) -> None:
    st.html(ROOM_STYLE)
    s, error = attempt(store().state, code)
    if error:
        st.error(error, icon=":material/pin:")
        return
    slot = f"cm_sid_{code}"
    if student_param is not None and slot not in st.session_state:
        if codes.is_token(student_param):
            st.session_state[slot] = student_param  # a reload of this student's own page: the same student
        else:
            st.warning("This link's student id is not valid; join again below.")
    sid = st.session_state.get(slot)
    if sid is None:
        st.subheader(f"Join class {code[:3]} {code[3:]}")
        st.markdown("No name, no account: you get an anonymous place in the vote.")
        if st.button("Join", key="cm_join", type="primary", width="stretch", icon=":material/login:"):
            sid, error = attempt(store().join, code)
            if error:
                st.error(error)
                return
            st.session_state[slot] = sid
            st.query_params["student"] = sid  # a reload keeps this student
            st.rerun()
        return
    if st.query_params.get("student") != sid:
        st.query_params["student"] = sid
    st.caption(f"Class {code[:3]} {code[3:]} · anonymous: the screen shows counts, never names.")
    student_live(code, sid)


def cast(code: str, sid: str, qid: str, round_: int, option: int) -> None:
    _, error = attempt(store().vote, code, sid, qid, option, round_)
    if error is None:
        st.session_state[f"cm_mine_{code}_{qid}_{round_}"] = option
    st.session_state["cm_vote_error"] = error


@st.fragment(run_every=POLL_S)
def student_live(code: str, sid: str) -> None:
    s = polled_state(code)
    if s is None:
        return
    if s.question_id is None:
        st.info("You're in. The question appears here when the teacher opens the vote.", icon=":material/hourglass_top:")
        return
    q = store().bank.get(s.question_id)
    n = s.round or 1
    # While the vote is open the buttons are the options; afterwards the list explains the histogram's letters.
    st.html(class_views.question_html(q.prompt, () if s.open else q.options, big=False))
    mine = st.session_state.get(f"cm_mine_{code}_{q.id}_{n}")
    if n >= 2 and s.open:
        st.markdown("**Second vote, after discussion:** answer again, even if you keep your first answer.")
    if s.open:
        for i, option in enumerate(q.options):
            chosen = mine == i
            st.button(f"**{class_views.letter(i)}** · {plain(option)}" + ("  ✓ your answer" if chosen else ""),
                      key=f"cm_opt_{q.id}_{n}_{i}", type="primary" if chosen else "secondary",
                      width="stretch", on_click=cast, args=(code, sid, q.id, n, i))
    if error := st.session_state.pop("cm_vote_error", None):
        st.error(error)
    if mine is not None:
        state = "You can change it until the vote closes." if s.open else "The vote is closed."
        st.success(f"**Your answer is in: {class_views.letter(mine)}.** {state}", icon=":material/check:")
    elif s.open:
        st.caption("Tap an answer. If you answered before reloading the page, it still counts; tapping again "
                   "replaces it.")
    if not s.open:
        if s.revealed:
            show_results(q, s, big=False, key="cm_student_hist", height=320)
        else:
            st.info("The vote is closed. Look at the screen at the front.", icon=":material/lock:")


# --- the projector -------------------------------------------------------------------------------------

PROJECTOR_STYLE = """<style>
[data-testid="stHeader"] { display: none; }
[data-testid="stMainBlockContainer"] { padding-top: 1.5rem !important; }
</style>"""


def projector_view(code: str) -> None:
    st.html(ROOM_STYLE + PROJECTOR_STYLE)  # no sidebar, no menu: the room sees no controls, and room for the counts
    s, error = attempt(store().state, code)
    if error:
        st.error(error, icon=":material/pin:")
        return
    left, right = st.columns([2, 3], vertical_alignment="top", gap="large")
    with left:
        st.html(class_views.join_panel_html(code, join_link(code), big=False))
        projector_joined(code)
    with right:
        projector_live(code)


@st.fragment(run_every=POLL_S)
def projector_joined(code: str) -> None:
    s = polled_state(code, quiet=True)
    if s is not None and s.question_id is not None:
        st.metric("Students joined", s.students)


@st.fragment(run_every=POLL_S)
def projector_live(code: str) -> None:
    s = polled_state(code)
    if s is None:
        return
    if s.question_id is None:
        st.metric("Students joined", s.students)
        st.markdown("### Join now: the first question comes up here.")
        return
    q = store().bank.get(s.question_id)
    position = s.question_ids.index(q.id) + 1 if q.id in s.question_ids else 1
    st.markdown(f"**Question {position} of {len(s.question_ids)}** · {status_line(s)}")
    st.html(class_views.question_html(q.prompt, q.options, big=not s.revealed))
    if s.revealed:  # the counts must fit the first screen of a 1280×720 projector, beside the QR code
        show_results(q, s, big=True, key="cm_projector_hist", height=330)
    else:
        st.markdown(f"## {s.answers} answer{'s' * (s.answers != 1)} in")


# --- the page ---------------------------------------------------------------------------------------------

params = read_params()
if "join" in params:
    student_view(checked_code(params["join"]), params.get("student"))
elif "code" in params:
    if params.get("view", "projector") != "projector":
        st.error(f"“{plain(params['view'])}” is not a view of a class: the room's screen is view=projector.",
                 icon=":material/link_off:")
        st.stop()
    projector_view(checked_code(params["code"]))
else:
    teacher_view()
