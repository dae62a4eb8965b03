"""Class mode's page (chapters/class_room.py, its teacher and projector sections) through AppTest, on a
class store of its own (a temporary SQLite file named by SPECDEC_CLASS_DB): the teacher's flow from start
to a second vote, the right answer and the demo's verdict kept in the store, the projector's read-only
view, a join link sent on to the phone page, hostile links, and every refusal of the store as a sentence
on the page. The phone itself: tests/classroom/test_phone_web.py."""
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import classroom
from specdec_core.analysis.stats import measured
from ui.server import class_demos

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
PAGE = "chapters/class_room.py"


@pytest.fixture
def db(tmp_path, monkeypatch):
    """A class store of this test's own: the page opens it through SPECDEC_CLASS_DB."""
    url = f"sqlite:///{tmp_path / 'class.sqlite3'}"
    monkeypatch.setenv(classroom.ENV_VAR, url)
    store = classroom.open_store(url, bank=class_demos.bank())
    yield store
    store.close()


def class_page(**query) -> AppTest:
    """The class page with these query parameters (set after the frame's first run, as a link would give them)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page(PAGE)
    at.query_params = {k: str(v) for k, v in query.items()}
    at.run()
    assert not at.exception, at.exception
    return at


def everything(at) -> str:
    """Every text the page shows: markdown, messages, metrics, captions, HTML, button labels, inputs."""
    parts = [e.value for kind in ("markdown", "caption", "error", "warning", "info", "success", "header",
                                  "subheader") for e in getattr(at, kind)]
    parts += [f"{m.label} {m.value}" for m in at.metric]
    parts += [b.label for b in at.button]
    parts += [e.proto.body for e in at.get("html")]
    parts += [str(e.proto) for e in at.get("download_button") + at.get("link_button")]
    return "\n".join(parts)


def main_controls(at) -> list:
    """The widgets in the page itself (the settings sidebar is the frame's, hidden on the room's views)."""
    kinds = ("button", "text_input", "selectbox", "multiselect", "radio", "toggle", "checkbox", "slider", "number_input")
    return [w for kind in kinds for w in getattr(at.main, kind)] + at.main.get("download_button") + \
        at.main.get("link_button") + at.main.get("file_uploader")


def click(at, key: str) -> AppTest:
    at.button(key=key).click().run()
    assert not at.exception, at.exception
    return at


def chart(at, key: str) -> dict:
    return json.loads(at.get_by_key(key).proto.spec)


def start(at, kind: str = "quiz", demo_question: str | None = None) -> tuple[str, str]:
    if kind == "demo":
        at.radio(key="cm_kind").set_value("demo").run()
        if demo_question:
            at.selectbox(key="cm_demo_pick").set_value(demo_question).run()
    click(at, "cm_start")
    return at.session_state["cm_code"], at.session_state["cm_key"]


# --- the teacher --------------------------------------------------------------------------------------------

def test_teacher_runs_a_question_from_first_vote_to_second(db):
    teacher = class_page()
    assert "Start a class" in [b.label for b in teacher.main.button]
    code, key = start(teacher)
    bank_ids = [q.id for q in db.bank.questions if q.demo is None]
    assert db.state(code).question_ids == tuple(bank_ids)  # the class quiz, in the file's order
    page = everything(teacher)
    assert code[:3] in page and f"?join={code}" in page and "data:image/svg+xml" in page  # code, link and QR code
    assert key not in page  # the key is never drawn, nor put in a link

    click(teacher, "cm_open")
    qid = bank_ids[0]
    students = [db.join(code) for _ in range(3)]
    for sid, option in zip(students, (1, 1, 2)):
        db.vote(code, sid, qid, option)
    teacher.run()  # the polling fragment's next run
    assert dict((m.label, m.value) for m in teacher.metric)["Answers in this vote"] == "3"

    click(teacher, "cm_close")
    assert db.state(code).open is False
    click(teacher, "cm_reveal")
    spec = chart(teacher, "cm_teacher_hist")
    assert [trace["y"] for trace in spec["data"]] == [[0, 2, 1, 0]]
    assert all(trace["text"] == [str(v) for v in trace["y"]] for trace in spec["data"])  # counts on the bars

    click(teacher, "cm_revote")
    assert db.state(code).round == 2 and db.state(code).open
    for sid in students:
        db.vote(code, sid, qid, 1, round=2)
    click(teacher, "cm_reveal")
    spec = chart(teacher, "cm_teacher_hist")
    assert [trace["y"] for trace in spec["data"]] == [[0, 2, 1, 0], [0, 3, 0, 0]]  # both votes side by side
    assert spec["data"][1]["marker"]["pattern"]["shape"] == "/"  # the second vote hatched, not only coloured
    assert any("✓" in label for label in spec["data"][0]["x"])  # after the second vote the right answer is marked
    csv = db.export_csv(code, key)
    assert f"{qid},2,1,3" in csv

    click(teacher, "cm_next")
    assert db.state(code).question_id == bank_ids[1] and db.state(code).open
    assert teacher.selectbox(key="cm_q").value == bank_ids[1]


def test_a_reload_forgets_the_key_and_the_key_file_resumes_the_class(db):
    teacher = class_page()
    code, key = start(teacher)
    fresh = class_page()  # a reload: a new session, no key
    assert "Start a class" in [b.label for b in fresh.main.button]
    fresh.text_input(key="cm_resume_code").set_value(code.lower()).run()
    fresh.text_input(key="cm_resume_key").set_value("not-the-key").run()
    click(fresh, "cm_resume")
    assert f"does not open class {code}" in " ".join(e.value for e in fresh.error)
    assert "cm_key" not in fresh.session_state
    fresh.text_input(key="cm_resume_key").set_value(key).run()
    click(fresh, "cm_resume")
    assert fresh.session_state["cm_code"] == code
    assert "Open the vote" in [b.label for b in fresh.main.button]
    assert key not in everything(fresh)


def test_a_wrong_key_in_the_session_runs_nothing(db):
    teacher = class_page()
    code, _ = start(teacher)
    teacher.session_state["cm_key"] = "x" * 32
    teacher.run()
    assert not teacher.exception
    assert "teacher key" in " ".join(e.value for e in teacher.error)
    assert "Open the vote" not in [b.label for b in teacher.main.button]
    with pytest.raises(PermissionError):
        db.open_vote(code, "x" * 32, db.state(code).question_ids[0])


def test_a_refused_control_is_a_sentence_not_a_traceback(db):
    from datetime import datetime, timedelta
    teacher = class_page()
    code, _ = start(teacher)
    db.expire(datetime.now() + classroom.RETENTION + timedelta(days=1))  # the class ends under the teacher's page
    teacher.button(key="cm_open").click().run()
    assert not teacher.exception
    assert "no class has this code" in " ".join(e.value for e in teacher.error).lower()


# --- a phone ----------------------------------------------------------------------------------------------------
# A phone votes on the phone page (classroom/web; tests/classroom/test_phone_web.py). A join link that reaches
# the Streamlit page anyway (the server redirects it first) gets the link to the phone page, and no control.

def test_a_join_link_on_the_class_page_leads_to_the_phone_page(db):
    info = db.create_class([q.id for q in db.bank.questions if q.demo is None][:2])
    student = class_page(join=info.code.lower())
    links = student.main.get("link_button")
    assert len(links) == 1 and links[0].proto.url.endswith(f"/phone?join={info.code}")
    assert not [b for b in student.main.button]
    assert db.state(info.code).students == 0  # opening a link joins nobody


# --- the projector ---------------------------------------------------------------------------------------------

def test_the_projector_shows_the_room_what_it_should_and_no_control_and_no_key(db):
    teacher = class_page()
    code, key = start(teacher)
    qid = db.state(code).question_ids[0]
    click(teacher, "cm_open")
    sid = db.join(code)
    db.vote(code, sid, qid, 2)
    projector = class_page(code=code, view="projector")
    assert not main_controls(projector)
    page = everything(projector)
    assert key not in page and key not in str(projector.query_params)
    assert "1 answer in" in page and db.bank.get(qid).prompt in page and "data:image/svg+xml" in page
    assert not projector.get("plotly_chart")  # no counts before the teacher reveals them
    db.reveal(code, key)
    projector.run()
    assert chart(projector, "cm_projector_hist")["data"][0]["y"] == [0, 0, 1, 0]
    assert not main_controls(projector)
    assert key not in everything(projector)


def test_the_right_answer_shown_by_the_teacher_is_a_fact_of_the_store(db):
    teacher = class_page()
    code, key = start(teacher)
    qid = db.state(code).question_ids[0]
    click(teacher, "cm_open")
    db.vote(code, db.join(code), qid, 0)
    click(teacher, "cm_reveal")
    assert db.facts(code).answer_shown == frozenset()
    click(teacher, "cm_show_answer")
    assert db.facts(code).answer_shown == {qid}  # in the database: every process and a restart see it
    projector = class_page(code=code, view="projector")
    right = db.bank.get(qid).answer
    assert f"Right answer: {'ABCD'[right]}" in " ".join(e.value for e in projector.success)
    assert any("✓" in label for label in chart(projector, "cm_projector_hist")["data"][0]["x"])


# --- hostile links --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("query", [
    {"join": "A" * 5000},
    {"join": "ΑΒΓΔΕΖ"},
    {"join": "'; DROP TABLE votes; --"},
    {"code": "[x](http://evil.example)", "view": "projector"},
    {"code": "ABC234", "view": "teacher<script>"},
    {"join": "ABCDEF", "student": "../../etc/passwd"},
    {"join": "ABCDEF"},  # a well-formed code no class has
    {"code": "%00%0a", "view": "projector"},
])
def test_a_hostile_link_gets_a_clear_message(db, query):
    at = class_page(**query)
    shown = " ".join(e.value for e in [*at.error, *at.warning])
    assert shown, "no message for a hostile link"
    assert "](http" not in " ".join(e.value for e in at.markdown)
    assert db.state  # the store still answers
    assert not [b for b in at.main.button if b.key in ("cm_open", "cm_close", "cm_reveal")]


# --- predict the demo --------------------------------------------------------------------------------------------

def test_a_predict_the_demo_question_is_decided_by_the_demo_run_live(db):
    teacher = class_page(max_new=6)
    code, key = start(teacher, "demo", "demo-temperature")
    assert db.state(code).question_ids == ("demo-temperature",)
    click(teacher, "cm_open")
    db.vote(code, db.join(code), "demo-temperature", 0)
    click(teacher, "cm_reveal")
    click(teacher, "cm_demo_run")
    decided = " ".join(e.value for e in teacher.success)
    assert "The demo decided" in decided and "temperature 0" in decided
    assert db.facts(code).verdicts["demo-temperature"][0] in (0, 1, 2)  # the verdict is a fact of the store
    projector = class_page(code=code, view="projector")
    assert "The demo decided" in " ".join(e.value for e in projector.success)


def test_the_demo_verdicts_follow_the_rules_the_options_state():
    pair = class_demos.spec({"run": "gamma_pair", "gammas": [4, 8]})
    fast, slow, mid = measured([1.1, 1.2, 1.3]), measured([0.7, 0.8, 0.9]), measured([1.0, 1.15, 1.25])
    assert class_demos.verdict(pair, {"rows": {4: slow, 8: fast}})[0] == class_demos.FIRST
    assert class_demos.verdict(pair, {"rows": {4: fast, 8: slow}})[0] == class_demos.SECOND
    assert class_demos.verdict(pair, {"rows": {4: fast, 8: mid}})[0] == class_demos.CLOSE
    race = class_demos.spec({"run": "race", "gamma": 4})
    assert class_demos.verdict(race, {"speedups": fast})[0] == class_demos.FIRST
    assert class_demos.verdict(race, {"speedups": slow})[0] == class_demos.SECOND
    assert class_demos.verdict(race, {"speedups": measured([0.95, 1.1])})[0] == class_demos.CLOSE
    temp = class_demos.spec({"run": "alpha_by_temperature", "temperatures": [0, 1]})
    assert class_demos.verdict(temp, {"alphas": {0.0: 0.8, 1.0: 0.6}})[0] == class_demos.FIRST
    assert class_demos.verdict(temp, {"alphas": {0.0: 0.5, 1.0: 0.6}})[0] == class_demos.SECOND
    assert class_demos.verdict(temp, {"alphas": {0.0: 0.62, 1.0: 0.6}})[0] == class_demos.CLOSE
    for bad in ({"run": "rm -rf"}, {"run": "race", "gamma": 99}, {"run": "gamma_pair", "gammas": [4]}, None):
        with pytest.raises(ValueError):
            class_demos.spec(bad)


# --- the question file ------------------------------------------------------------------------------------------

def test_the_class_quiz_is_in_story_order_and_its_answers_are_not_given_away():
    from ui.content import chapters
    bank = class_demos.bank()
    concept = [q for q in bank.questions if q.demo is None]
    order = [c.path for c in chapters.CHAPTERS]
    assert len(concept) >= 12 and all(q.chapter in order for q in bank.questions)
    assert [order.index(q.chapter) for q in concept] == sorted(order.index(q.chapter) for q in concept)
    longest = [q.id for q in concept
               if all(len(q.options[q.answer]) > len(o) for i, o in enumerate(q.options) if i != q.answer)]
    assert len(longest) <= len(concept) / 3, longest
    positions = [q.answer for q in concept]
    assert max(positions.count(i) for i in set(positions)) <= len(concept) / 2  # the right answer moves around
    demos = [q for q in bank.questions if q.demo is not None]
    assert len(demos) >= 2 and all(q.answer is None for q in demos)
