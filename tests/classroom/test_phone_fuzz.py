"""No request is a 500: generated JSON values, byte strings, headers, queries and cookies thrown at every
phone route on a real HTTP server, on SQLite and PostgreSQL. Each answer is a 4xx with a JSON sentence
or the normal answer; nothing is logged as an error; and nothing is written that the request did not
earn (a refused request leaves every row as it was; an accepted vote changes only its own student's
ballot, to the option it sent; an accepted join adds at most one student)."""
import http.client
import json
import logging
import sys
import urllib.parse
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.classroom.phone_client import Phone, PhoneServer
from tests.classroom.support import snapshot

EXAMPLES = 80  # requests per case (route and family of bodies) and backend
ROUTES = [("GET", "/phone"), ("GET", "/phone/phone.js"), ("GET", "/phone/phone.css"), ("GET", "/phone/api/state"),
          ("POST", "/phone/api/join"), ("POST", "/phone/api/vote"), ("GET", "/class"), ("POST", "/phone/api/state"),
          ("GET", "/phone/api/vote")]

# The routes that read a body: each family of bodies gets its own run, so a rare family is never starved.
BODIES = ("flat", "shallow", "deep", "ballot")
READS_BODY = {"/phone/api/join", "/phone/api/vote"}
CASES = [(m, p, b) for m, p in ROUTES for b in (BODIES if m == "POST" and p in READS_BODY else ("any",))]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12)
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=255, exclude_characters="\x7f"), max_size=60)


class Room:
    """A class with q-four's first vote open and one seated phone, served over HTTP, its log watched."""

    def __init__(self, store, clock, server):
        self.store, self.clock, self.server = store, clock, server
        self.info = store.create_class(["q-four", "q-two"])
        store.open_vote(self.info.code, self.info.teacher_key, "q-four")
        seated = Phone(server.url, self.info.code)
        seated.join()
        self.cookie = f"cm_{self.info.code}={next(c.value for c in seated.jar)}"
        self.student = self.cookie.split("=", 1)[1]


@st.composite
def requests(draw, room: Room, method: str, path: str, family: str):
    code = room.info.code
    query = draw(st.one_of(
        st.just(""), st.just(f"code={code}"), st.just(f"join={code}"),
        st.text(max_size=40).map(lambda t: "code=" + urllib.parse.quote(t)),
        st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=40).map(lambda t: t.replace("#", "%")),
        st.binary(max_size=30).map(lambda b: "code=" + urllib.parse.quote_from_bytes(b))))
    headers = draw(st.dictionaries(
        st.sampled_from(["Content-Type", "Origin", "Cookie", "If-None-Match", "X-Forwarded-For", "X-Real-IP",
                         "Accept", "Content-Encoding", "Referer", "Forwarded"]),
        st.one_of(header_text, st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain",
                                                room.cookie, f"cm_{code}={'A' * 22}", f"cm_{code}=../../x",
                                                "http://[", "null", '"3s"', "1.2.3.4, 5.6.7.8"])),
        max_size=5))
    if method == "POST":  # mostly past the same-origin check, to reach the body and the store
        headers.setdefault("Content-Type", draw(st.sampled_from(["application/json", "application/json; charset=utf-8"])
                                                | header_text))
        headers.setdefault("Cookie", draw(st.just(room.cookie) | header_text))
    vote = st.fixed_dictionaries({
        "code": st.one_of(st.just(code), st.just(code.lower()), json_values),
        "question": st.one_of(st.sampled_from(["q-four", "q-two", "q-demo", "../x"]), json_values),
        "option": st.one_of(st.integers(-2, 5), json_values),
        "round": st.one_of(st.integers(0, 3), json_values)})
    flat = st.one_of(st.none(), json_values.map(json.dumps).map(str.encode), vote.map(json.dumps).map(str.encode),
                     st.binary(max_size=1200), st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")))
    # Nested JSON, shallow, or as deep as the size cap lets it be (where parsers break).
    shallow = st.tuples(st.sampled_from(["[", '{"a":', '[{"code":']), st.integers(1, 64)).map(lambda t: (t[0] * t[1]).encode())
    deep = st.integers(900, 1024).map(lambda depth: b"[" * depth)
    # Nearly a ballot: each field right, or now and then any JSON value (so that votes are also accepted).
    ballot = st.fixed_dictionaries({
        "code": st.just(code) | json_values, "question": st.sampled_from(["q-four", "q-two"]) | json_values,
        "option": st.integers(0, 3) | json_values, "round": st.just(1) | json_values}).map(json.dumps).map(str.encode)
    body = draw({"flat": flat, "shallow": shallow, "deep": deep, "ballot": ballot, "any": flat | shallow | deep}[family])
    return method, f"{path}?{query}" if query else path, headers, body


def send(url: str, method: str, target: str, headers: dict, body: bytes | None):
    host, port = urllib.parse.urlsplit(url).netloc.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.putrequest(method, target, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value.encode("latin-1"))
        conn.putheader("Content-Length", str(len(body or b"")))
        conn.endheaders(body)
        answer = conn.getresponse()
        return answer.status, answer.getheader("Content-Type") or "", answer.read()
    finally:
        conn.close()


@contextmanager
def python_default_recursion_limit():
    """Python's own recursion limit while the server (a thread of this process) answers: Hypothesis raises
    the process's limit while a test runs, and a served app runs with the default."""
    raised = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(raised)


class Errors(logging.Handler):
    """Every log record at ERROR or above, or carrying a traceback."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        if record.levelno >= logging.ERROR or record.exc_info:
            self.records.append(record)


def earned(before: dict, after: dict, room: Room, method: str, target: str, headers: dict, body, status: int):
    """Whether the change from `before` to `after` is one this request, answered `status`, may make."""
    if before == after:
        return True
    if status >= 300 or method != "POST":
        return False
    if target.startswith("/phone/api/join"):
        return (after["votes"] == before["votes"] and len(after["students"]) - len(before["students"]) == 1
                and set(before["students"]) <= set(after["students"]))
    if target.startswith("/phone/api/vote"):
        data = json.loads(body)
        changed = set(after["votes"]) ^ set(before["votes"])
        mine = room.store.ballot(room.info.code, room.student, data["question"], data["round"])
        return (len(after["students"]) == len(before["students"]) and mine == data["option"]
                and headers.get("Cookie") == room.cookie and len([r for r in changed if r in after["votes"]]) == 1)
    return False


@pytest.fixture
def fuzz_room(store, clock):
    errors = Errors()
    with PhoneServer(lambda: store) as server:
        for name in ("", "uvicorn", "uvicorn.error"):
            logging.getLogger(name).addHandler(errors)
        try:
            yield Room(store, clock, server), errors
        finally:
            for name in ("", "uvicorn", "uvicorn.error"):
                logging.getLogger(name).removeHandler(errors)


@pytest.mark.parametrize("method, path, family", CASES)
def test_no_request_to_a_phone_route_is_a_500_or_counts_what_it_should_not(fuzz_room, method, path, family):
    room, errors = fuzz_room
    seen = {"examples": 0, "statuses": {}}

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
    @given(st.data())
    def one_request(data):
        _, target, headers, body = data.draw(requests(room, method, path, family))
        room.clock.now += 11  # past the vote window: a student's votes are not all refused for flooding
        errors.records.clear()
        before = snapshot(room.store)
        with python_default_recursion_limit():
            status, kind, payload = send(room.server.url, method, target, headers, body)
        after = snapshot(room.store)
        seen["examples"] += 1
        seen["statuses"][status] = seen["statuses"].get(status, 0) + 1
        if status == 200 and method == "POST":
            seen[target.split("?")[0]] = seen.get(target.split("?")[0], 0) + 1
        where = f"{method} {target} headers={headers!r} body={body[:120] if body else body!r}"
        assert status < 500, f"{status} {payload[:300]!r} for {where}"
        if status >= 400 and kind.startswith("application/json"):
            assert json.loads(payload)["error"].endswith("."), where
        assert not errors.records, f"logged {errors.records[0].getMessage()!r} for {where}"
        assert earned(before, after, room, method, target, headers, body, status), f"wrote rows for {where}"

    one_request()
    print(f"fuzz: {seen['examples']} requests, answers {dict(sorted(seen['statuses'].items()))}, accepted "
          f"joins {seen.get('/phone/api/join', 0)}, votes {seen.get('/phone/api/vote', 0)}")
    assert seen["examples"] == EXAMPLES
