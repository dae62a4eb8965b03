"""The phone's routes (classroom/web) on a real HTTP server over the class store, on SQLite and
PostgreSQL: a phone joins once per device, votes, changes its vote, reloads; an unchanged class answers
304; the right answer never reaches a phone before the room may see it; every refusal is a sentence with
a 4xx status and writes nothing; the page builds no HTML from text."""
import re
import time
from pathlib import Path

import pytest

from classroom import web
from classroom.web import phone as phone_routes
from tests.classroom.phone_client import Phone, PhoneServer
from tests.classroom.support import snapshot

STATIC = Path(web.__file__).resolve().parent / "static"


def moved() -> None:
    """After a teacher's move: polls within VERSION_FRESH_S of the last read of the class's version share
    that read, so the move reaches a phone's next poll after that long."""
    time.sleep(phone_routes.VERSION_FRESH_S)


@pytest.fixture
def served(store):
    with PhoneServer(lambda: store) as server:
        yield store, server


@pytest.fixture
def room(served):
    """A class on q-four then q-two, q-four's first vote open."""
    store, server = served
    info = store.create_class(["q-four", "q-two"])
    store.open_vote(info.code, info.teacher_key, "q-four")
    return store, server, info


def test_a_device_joins_once_votes_changes_its_vote_and_a_reload_is_the_same_student(room):
    store, server, info = room
    phone = Phone(server.url, info.code)
    assert [a.status for a in phone.open_page()] == [200, 200, 200]
    assert phone.state().json()["joined"] is False
    state = phone.join().json()
    assert state["joined"] and state["question"]["id"] == "q-four" and state["open"] and state["mine"] is None
    for _ in range(5):  # the same device again and again: still one student
        assert phone.join().status == 200
    assert store.state(info.code).students == 1
    other = Phone(server.url, info.code)
    other.join()
    assert store.state(info.code).students == 2  # another device is another student

    assert phone.vote("q-four", 2).json()["mine"] == 2
    assert store.tally(info.code, "q-four") == {0: 0, 1: 0, 2: 1, 3: 0}
    assert phone.vote("q-four", 0).json()["mine"] == 0  # changed while open: replaces, never adds
    assert store.tally(info.code, "q-four") == {0: 1, 1: 0, 2: 0, 3: 0}
    reloaded = phone.state(fresh=True).json()  # a reload: the cookie keeps the student and its vote
    assert reloaded["joined"] and reloaded["mine"] == 0
    assert other.state(fresh=True).json()["mine"] is None


def test_an_unchanged_class_answers_304_and_a_teacher_move_reaches_the_phone(room):
    store, server, info = room
    phone = Phone(server.url, info.code)
    phone.join()
    for _ in range(3):
        answer = phone.state()
        assert answer.status == 304 and answer.body == b""
    phone.vote("q-four", 1)  # a vote (the phone's own or anyone's) is no change the room sees
    Phone(server.url, info.code).join()
    assert phone.state().status == 304
    store.close_vote(info.code, info.teacher_key)
    moved()
    state = phone.state().json()
    assert state["open"] is False and state["mine"] == 1
    assert phone.state().status == 304
    store.open_vote(info.code, info.teacher_key, "q-two")
    moved()
    state = phone.state().json()
    assert state["question"]["id"] == "q-two" and state["question"]["position"] == 2 and state["mine"] is None


def test_the_right_answer_reaches_a_phone_only_when_the_room_may_see_it(room):
    store, server, info = room
    q = store.bank.get("q-four")
    phone = Phone(server.url, info.code)
    phone.open_page()
    phone.join()
    phone.vote("q-four", 3)
    phone.state()
    store.close_vote(info.code, info.teacher_key)
    moved()
    phone.state()
    store.reveal(info.code, info.teacher_key)
    moved()
    revealed = phone.state().json()
    assert revealed["results"]["rounds"] == [{"round": 1, "counts": [0, 0, 0, 1]}]
    assert revealed["results"]["right"] is None and revealed["results"]["why"] is None
    assert set(revealed["question"]) == {"id", "prompt", "options", "position", "total"}  # no answer field
    everything = b"".join(phone.received).decode()
    assert q.explanation not in everything and '"right":1' not in everything
    assert not re.search(r'"answer"', everything)

    store.show_answer(info.code, info.teacher_key, "q-four")  # the teacher's "Show the right answer"
    moved()
    shown = phone.state().json()["results"]
    assert shown["right"] == q.answer == 1 and shown["why"] == q.explanation


def test_a_demo_question_is_decided_by_its_verdict_only(served):
    store, server = served
    info = store.create_class(["q-demo"])
    store.open_vote(info.code, info.teacher_key, "q-demo")
    phone = Phone(server.url, info.code)
    phone.join()
    phone.vote("q-demo", 0)
    store.reveal(info.code, info.teacher_key)
    moved()
    assert phone.state().json()["results"]["right"] is None  # the file's answer is not the demo's
    store.record_verdict(info.code, info.teacher_key, "q-demo", 1, "The demo ran: y.")
    moved()
    results = phone.state().json()["results"]
    assert (results["right"], results["why"], results["by_demo"]) == (1, "The demo ran: y.", True)


@pytest.mark.parametrize("body, status, words", [
    ({"question": "q-four", "round": 1, "option": 9}, 400, "options 0 to 3"),
    ({"question": "q-four", "round": 1, "option": "1"}, 400, "whole number"),
    ({"question": "q-four", "round": 1, "option": True}, 400, "whole number"),
    ({"question": "q-four", "round": 2, "option": 1}, 409, "not open"),
    ({"question": "q-two", "round": 1, "option": 1}, 409, "not open"),
    ({"question": "no-such-q", "round": 1, "option": 1}, 400, "not in this class"),
    ({"question": "<script>alert(1)</script>", "round": 1, "option": 1}, 400, "question id is 1-64"),
    ({"question": "q-four", "round": 10**100, "option": 1}, 400, "round must be between"),
    ({"question": "q-four", "round": None, "option": 1}, 400, "whole number"),
])
def test_a_bad_vote_is_refused_with_a_sentence_and_writes_nothing(room, body, status, words):
    store, server, info = room
    phone = Phone(server.url, info.code)
    phone.join()
    before = snapshot(store)
    answer = phone.request("POST", f"{web.PATH}/api/vote", {"code": info.code, **body})
    assert answer.status == status and words in answer.json()["error"], answer.body
    assert answer.json()["error"][0].isupper() and answer.json()["error"].endswith(".")
    assert snapshot(store) == before


@pytest.mark.parametrize("raw, content_type, origin, status, words", [
    (b"x" * 5000, "application/json", None, 400, "longer than 1024 bytes"),
    (b"not json", "application/json", None, 400, "not JSON"),
    (b"[1, 2]", "application/json", None, 400, "not a JSON object"),
    (b'{"code": "ABC"}', "application/json", None, 404, "not a class code"),
    (b'{"code": "\'; DROP TABLE votes; --"}', "application/json", None, 404, "not a class code"),
    (b'{"code": ["ABCDEF"]}', "application/json", None, 404, "not a class code"),
    (b'{"code": "ZZZZZZ"}', "application/json", None, 404, "No class has this code"),
    (b"code=ABCDEF", "application/x-www-form-urlencoded", None, 403, "did not come from the class page"),
    (b'{"code": "ABCDEF"}', "application/json", "https://evil.example", 403, "did not come from the class page"),
])
def test_a_hostile_join_is_refused_with_a_sentence_and_writes_nothing(room, raw, content_type, origin, status, words):
    store, server, info = room
    phone = Phone(server.url, info.code)
    before = snapshot(store)
    headers = {"Content-Type": content_type, **({"Origin": origin} if origin else {})}
    answer = phone.request("POST", f"{web.PATH}/api/join", raw=raw, headers=headers)
    assert answer.status == status and words in answer.json()["error"], answer.body
    assert snapshot(store) == before
    assert not any(c.name.startswith("cm_") for c in phone.jar)


def test_a_vote_after_the_close_is_refused_with_a_sentence(room):
    store, server, info = room
    phone = Phone(server.url, info.code)
    phone.join()
    store.close_vote(info.code, info.teacher_key)
    answer = phone.vote("q-four", 1)  # the button the phone still showed
    assert answer.status == 409 and "not open" in answer.json()["error"]
    assert sum(store.tally(info.code, "q-four").values()) == 0


def test_a_phone_that_did_not_join_or_forged_an_id_cannot_vote(room):
    store, server, info = room
    stranger = Phone(server.url, info.code)
    answer = stranger.vote("q-four", 1)
    assert answer.status == 403 and "has not joined this class" in answer.json()["error"]
    forged = Phone(server.url, info.code)
    answer = forged.request("POST", f"{web.PATH}/api/vote", {"code": info.code, "question": "q-four", "round": 1,
                                                            "option": 1}, headers={"Cookie": f"cm_{info.code}={'A' * 22}"})
    assert answer.status == 403 and "has not joined this class" in answer.json()["error"]
    assert sum(store.tally(info.code, "q-four").values()) == 0 and store.state(info.code).students == 0


def test_a_flood_of_votes_is_refused_politely(room):
    store, server, info = room
    phone = Phone(server.url, info.code)
    phone.join()
    statuses = [phone.vote("q-four", i % 4).status for i in range(12)]
    assert statuses[:10] == [200] * 10 and statuses[10:] == [429, 429]
    assert "Too many votes" in phone.vote("q-four", 0).json()["error"]


def test_state_of_unknown_or_hostile_codes(served):
    _, server = served
    for code, words in (("ZZZZZZ", "No class has this code"), ("A" * 5000, "not a class code"),
                        ("%3Cscript%3E", "not a class code")):
        answer = Phone(server.url, code).request("GET", f"{web.PATH}/api/state?code={code}")
        assert answer.status == 404 and words in answer.json()["error"]


def test_old_join_links_go_to_the_phone_page(served):
    _, server = served
    answer = Phone(server.url, "ABCDEF").request("GET", "/class?join=ABCDEF")
    assert answer.status == 307 and answer.headers["location"] == f"{web.PATH}?join=ABCDEF"


def test_the_page_builds_no_html_from_text_and_forbids_inline_script(served):
    _, server = served
    page, script, _ = Phone(server.url, "ABCDEF").open_page()
    csp = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "default-src 'none'" in csp
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert not re.search(r"<script>[^<]", page.body.decode())  # no inline script: the CSP would block it anyway
    source = script.body.decode()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in source, sink


def test_a_phone_marks_its_own_choice_with_a_sign_that_is_not_the_reveals_check():
    source = (STATIC / "phone.js").read_text(encoding="utf-8")
    sign = re.search(r'const MINE_SIGN = "(.+?)"', source).group(1)
    assert sign and "✓" not in sign and "your answer" in source


def test_a_store_that_cannot_open_is_a_503_sentence(tmp_path):
    def broken():
        raise OSError("disk on fire")
    with PhoneServer(broken) as server:
        answer = Phone(server.url, "ABCDEF").request("GET", f"{web.PATH}/api/state?code=ABCDEF")
    assert answer.status == 503 and "not available on this server" in answer.json()["error"]
    assert "disk on fire" not in answer.body.decode()  # the operator reads the log, the room a sentence


def test_the_class_package_never_imports_streamlit_the_app_or_test_machinery():
    from tests.core.test_layers import files, imported_modules
    for path in files("classroom"):
        bad = {m for m in imported_modules(path) if m.split(".")[0] in ("streamlit", "ui", "chapters", "tests", "scripts")}
        assert not bad, f"{path}: {bad}"


@pytest.mark.parametrize("page, link", [
    ("http://192.168.1.20:8501/class", "http://192.168.1.20:8501/phone?join=ABC234"),
    ("https://school.example/specdec/class/", "https://school.example/specdec/phone?join=ABC234"),
    ("http://[fe80::1]:8501/class", "http://[fe80::1]:8501/phone?join=ABC234"),
])
def test_the_join_link_is_the_phone_page_beside_the_class_page(page, link):
    assert web.phone_url(page, "ABC234") == link
