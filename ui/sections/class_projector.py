"""Class mode, the room's screen (/class?code=CODE&view=projector): the join code, QR code and link, the
current question, how many answered and, once the teacher reveals them, the counts (both votes side by
side after a revote) with the right answer or the demo's verdict when the room may see it. No control,
no sidebar, never the teacher key. It polls the store (st.fragment(run_every=POLL_S)), so it follows the
teacher from any server process.
"""
import streamlit as st

from classroom.web.view import results
from ui.sections import class_join
from ui.server.class_store import attempt, store
from ui.widgets import class_views, layout

POLL_S = 1.5  # how often the projector asks the store
# The projector polls every POLL_S: Streamlit fades an element while its fragment reruns, which on a busy
# server made the screen flash to 2:1 contrast every poll. It stays as it is. No sidebar, no menu, no header.
STYLE = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"],
[data-testid="stSidebarNav"] { display: none !important; }
[data-stale="true"] { opacity: 1 !important; transition: none !important; }
[data-testid="stHeader"] { display: none; }
[data-testid="stMainBlockContainer"] { padding-top: 1.5rem !important; }
</style>"""


def show(code: str) -> None:
    """The room's screen for class `code`."""
    st.html(STYLE)
    _, error = attempt(store().state, code)
    if error:
        st.error(error, icon=":material/pin:")
        return
    left, right = st.columns([2, 3], vertical_alignment="top", gap="large")
    with left:
        class_join.show(code, big=False)
        joined(code)
    with right:
        live(code)


def polled(code: str, quiet: bool = False):
    """One poll: count the run (the test drivers wait on it, tests/serve.py), then read the class's
    state; a refusal is shown as its sentence (unless `quiet`) and gives None."""
    layout.run_marker()
    s, error = attempt(store().state, code)
    if error and not quiet:
        st.error(error)
    return s


@st.fragment(run_every=POLL_S)
def joined(code: str) -> None:
    s = polled(code, quiet=True)
    if s is not None and s.question_id is not None:
        st.metric("Students joined", s.students)


@st.fragment(run_every=POLL_S)
def live(code: str) -> None:
    s = polled(code)
    if s is None:
        return
    if s.question_id is None:
        st.metric("Students joined", s.students)
        st.markdown("### Join now: the first question comes up here.")
        return
    q = store().bank.get(s.question_id)
    position = s.question_ids.index(q.id) + 1 if q.id in s.question_ids else 1
    st.markdown(f"**Question {position} of {len(s.question_ids)}** · {class_views.status_line(s)}")
    st.html(class_views.question_html(q.prompt, q.options, big=not s.revealed))
    if s.revealed:  # the counts must fit the first screen of a 1280×720 projector, beside the QR code
        facts, error = attempt(store().facts, code)
        if facts is not None:
            class_views.show_results(q, results(store(), s, q, facts), big=True, key="cm_projector_hist", height=330)
    else:
        st.markdown(f"## {s.answers} answer{'s' * (s.answers != 1)} in")
