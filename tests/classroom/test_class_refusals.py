"""Every refusal of the class store, on SQLite and PostgreSQL: the right error, a plain message, and
nothing written. Forged and replayed votes, floods, and hostile inputs included."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import classroom
from classroom import store as store_module
from tests.classroom.support import snapshot

HOSTILE = [None, 0, -1, 10**100, 1.0, True, b"q-two", [], {}, "", " ", "x" * 100_000, "'; DROP TABLE votes;--",
           "q-two' OR '1'='1", "\x00", "q-two\x00", "Ωμέγα", "🙂" * 10, "%", "_", "\\", "../../etc/passwd"]


@pytest.fixture
def room(store):
    """A class with two students, q-four's round 1 open, and a second class with its own student."""
    info = store.create_class(["q-four", "q-two"])
    alice, bob = store.join(info.code), store.join(info.code)
    store.open_vote(info.code, info.teacher_key, "q-four")
    store.vote(info.code, alice, "q-four", 1)
    other = store.create_class(["q-four"])
    stranger = store.join(other.code)
    store.open_vote(other.code, other.teacher_key, "q-four")
    return store, info, alice, bob, other, stranger


def refused(store, error, call, *args, **kwargs):
    """Assert that the call raises `error` (with a message) and leaves every table as it was."""
    before = snapshot(store)
    with pytest.raises(error) as caught:
        call(*args, **kwargs)
    assert str(caught.value).strip(), "a refusal says why"
    assert snapshot(store) == before, "a refused call wrote something"
    return caught.value


def test_the_errors_are_value_errors():
    for error in (classroom.BadInput, classroom.UnknownClass, classroom.UnknownStudent, classroom.VoteNotOpen,
                  classroom.UnknownQuestion, classroom.BadOption, classroom.TooManyRequests):
        assert issubclass(error, classroom.ClassError) and issubclass(error, ValueError)
    assert not issubclass(PermissionError, ValueError)


def test_a_wrong_teacher_key_changes_nothing(room):
    store, info, _, _, other, _ = room
    for call, args in ((store.open_vote, ("q-two",)), (store.close_vote, ()), (store.reveal, ()), (store.hide, ()),
                       (store.export_csv, ()), (store.check_teacher, ())):
        refused(store, PermissionError, call, info.code, other.teacher_key, *args)


def test_unknown_classes_questions_and_options(room):
    store, info, alice, _, _, _ = room
    refused(store, classroom.UnknownClass, store.join, "ZZZZZZ")
    refused(store, classroom.UnknownClass, store.join, "ABC")
    refused(store, classroom.UnknownClass, store.vote, "ZZZZZZ", alice, "q-four", 0)
    refused(store, classroom.UnknownClass, store.state, "ZZZZZZ")
    refused(store, classroom.UnknownQuestion, store.create_class, ["q-four", "no-such-question"])
    refused(store, classroom.BadInput, store.create_class, ["q-four", "q-four"])
    refused(store, classroom.BadInput, store.create_class, [])
    refused(store, classroom.BadInput, store.create_class, "q-four")
    refused(store, classroom.UnknownQuestion, store.open_vote, info.code, info.teacher_key, "q-demo")  # bank, not class
    refused(store, classroom.UnknownQuestion, store.vote, info.code, alice, "q-demo", 0)
    refused(store, classroom.UnknownQuestion, store.tally, info.code, "q-demo")
    refused(store, classroom.BadOption, store.vote, info.code, alice, "q-four", 4)
    refused(store, classroom.BadOption, store.vote, info.code, alice, "q-four", -1)
    refused(store, classroom.BadInput, store.vote, info.code, alice, "q-four", 1.0)
    refused(store, classroom.BadInput, store.open_vote, info.code, info.teacher_key, "q-four", round=0)
    refused(store, classroom.BadInput, store.tally, info.code, "q-four", round=99)


def test_forged_and_replayed_votes(room):
    store, info, alice, bob, other, stranger = room
    refused(store, classroom.UnknownStudent, store.vote, info.code, "madeUpStudentId0000000", "q-four", 0)
    refused(store, classroom.UnknownStudent, store.vote, info.code, stranger, "q-four", 0)  # another class's student
    refused(store, classroom.UnknownStudent, store.vote, other.code, alice, "q-four", 0)
    refused(store, classroom.VoteNotOpen, store.vote, info.code, bob, "q-two", 0)  # in the class, never opened
    refused(store, classroom.VoteNotOpen, store.vote, info.code, bob, "q-four", 0, round=2)  # round 2 not open
    store.close_vote(info.code, info.teacher_key)
    refused(store, classroom.VoteNotOpen, store.vote, info.code, alice, "q-four", 3)  # replay after the close
    fresh = store.create_class(["q-two"])
    refused(store, classroom.VoteNotOpen, store.reveal, fresh.code, fresh.teacher_key)  # nothing opened yet
    assert store.tally(info.code, "q-four") == {0: 0, 1: 1, 2: 0, 3: 0}


def test_a_flood_from_one_student_is_refused(room, clock):
    store, info, alice, bob, _, _ = room
    clock.now += store_module.VOTE_WINDOW_S  # alice's first vote's window is over
    for i in range(store_module.VOTE_BURST):
        store.vote(info.code, alice, "q-four", i % 4)
    last = store.tally(info.code, "q-four")
    error = refused(store, classroom.TooManyRequests, store.vote, info.code, alice, "q-four", 0)
    assert "too many votes" in str(error)
    store.vote(info.code, bob, "q-four", 0)  # one student's flood does not hold up another
    clock.now += store_module.VOTE_WINDOW_S
    store.vote(info.code, alice, "q-four", 0)  # the next window lets alice vote again
    assert sum(store.tally(info.code, "q-four").values()) == sum(last.values()) + 1


def test_a_full_class_refuses_one_more_student(store, monkeypatch):
    monkeypatch.setattr(store_module, "MAX_STUDENTS", 3)
    info = store.create_class(["q-two"])
    for _ in range(3):
        store.join(info.code)
    assert "full" in str(refused(store, classroom.TooManyRequests, store.join, info.code))


def test_a_full_store_refuses_one_more_class(store, monkeypatch):
    monkeypatch.setattr(store_module, "MAX_CLASSES", 2)
    store.create_class(["q-two"]), store.create_class(["q-two"])
    refused(store, classroom.TooManyRequests, store.create_class, ["q-two"])


def test_hostile_values_in_every_argument(room):
    store, info, alice, _, _, _ = room
    key = info.teacher_key
    calls = {
        "join": lambda v: store.join(v),
        "state code": lambda v: store.state(v),
        "create": lambda v: store.create_class(v),
        "create item": lambda v: store.create_class(["q-four", v]),
        "vote code": lambda v: store.vote(v, alice, "q-four", 0),
        "vote student": lambda v: store.vote(info.code, v, "q-four", 0),
        "vote question": lambda v: store.vote(info.code, alice, v, 0),
        "vote option": lambda v: store.vote(info.code, alice, "q-four", v),
        "vote round": lambda v: store.vote(info.code, alice, "q-four", 0, round=v),
        "open question": lambda v: store.open_vote(info.code, key, v),
        "open round": lambda v: store.open_vote(info.code, key, "q-four", round=v),
        "tally question": lambda v: store.tally(info.code, v),
        "tally round": lambda v: store.tally(info.code, "q-four", round=v),
    }
    before = snapshot(store)
    for name, call in calls.items():
        for value in HOSTILE:
            if name in ("vote option", "vote round", "open round", "tally round") and value in (0, 1, True):
                continue  # 0 and 1 are fine values there (True is refused too, checked below)
            with pytest.raises(classroom.ClassError):
                call(value)
    for value in HOSTILE:  # a teacher key is refused as a permission, whatever its type
        with pytest.raises(PermissionError):
            store.close_vote(info.code, value)
    with pytest.raises(classroom.BadInput):
        store.vote(info.code, alice, "q-four", True)
    assert snapshot(store) == before


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=80) | st.binary(max_size=20).map(lambda b: b.decode("latin-1")))
def test_any_string_is_refused_plainly(room, text):
    store, info, alice, _, _, _ = room
    for call in (lambda: store.join(text + "!"), lambda: store.vote(info.code, text + "!", "q-four", 0),
                 lambda: store.vote(info.code, alice, text + "!", 0), lambda: store.tally(info.code, text + "!")):
        with pytest.raises(classroom.ClassError):
            call()
    with pytest.raises(PermissionError):
        store.check_teacher(info.code, text)
