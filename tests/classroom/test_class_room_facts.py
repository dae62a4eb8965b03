"""Every fact the room sees lives in the store, on SQLite and PostgreSQL: the answer the teacher showed,
a demo's verdict, and the change counter a phone's poll compares; a restart and a second store (another
server process) see them; a refusal writes nothing; a version-1 database is upgraded in place."""
import pytest
from sqlalchemy import select, text

import classroom
from classroom import schema
from tests.classroom.support import snapshot


@pytest.fixture
def room(store):
    info = store.create_class(["q-four", "q-demo"])
    return store, info


def test_every_move_the_room_sees_counts_and_nothing_else_does(room):
    store, info = room
    seen = [store.room_version(info.code)]
    me = store.join(info.code)
    assert store.room_version(info.code) == seen[-1]  # a join is not a change a phone draws
    for move in (lambda: store.open_vote(info.code, info.teacher_key, "q-four"),
                 lambda: store.close_vote(info.code, info.teacher_key),
                 lambda: store.open_vote(info.code, info.teacher_key, "q-four"),
                 lambda: store.reveal(info.code, info.teacher_key),
                 lambda: store.show_answer(info.code, info.teacher_key, "q-four"),
                 lambda: store.hide(info.code, info.teacher_key),
                 lambda: store.record_verdict(info.code, info.teacher_key, "q-demo", 2, "Too close to call."),
                 lambda: store.open_vote(info.code, info.teacher_key, "q-four", round=2)):
        move()
        seen.append(store.room_version(info.code))
        if store.state(info.code).open:
            store.vote(info.code, me, "q-four", 1, round=store.state(info.code).round)  # votes are not counted
            assert store.room_version(info.code) == seen[-1]
    assert seen == sorted(set(seen)), seen  # every move one more, never the same twice
    assert store.facts(info.code) == classroom.RoomFacts(seen[-1], frozenset({"q-four"}),
                                                         {"q-demo": (2, "Too close to call.")})
    assert store.ballot(info.code, me, "q-four", 1) == 1 and store.ballot(info.code, me, "q-four", 3) is None


def test_a_later_verdict_replaces_the_first(room):
    store, info = room
    store.record_verdict(info.code, info.teacher_key, "q-demo", 0, "First run.")
    store.record_verdict(info.code, info.teacher_key, "q-demo", 1, "Second run.")
    assert store.facts(info.code).verdicts == {"q-demo": (1, "Second run.")}


def test_room_facts_refusals_write_nothing(room):
    store, info = room
    other = store.create_class(["q-two"])
    me = store.join(info.code)
    cases = [
        (PermissionError, store.show_answer, (info.code, other.teacher_key, "q-four")),
        (PermissionError, store.record_verdict, (info.code, "x" * 32, "q-demo", 0, "No.")),
        (classroom.UnknownQuestion, store.show_answer, (info.code, info.teacher_key, "q-two")),
        (classroom.BadOption, store.record_verdict, (info.code, info.teacher_key, "q-demo", 3, "No.")),
        (classroom.BadInput, store.record_verdict, (info.code, info.teacher_key, "q-demo", True, "No.")),
        (classroom.BadInput, store.record_verdict, (info.code, info.teacher_key, "q-demo", 0, "x" * 10_000)),
        (classroom.BadInput, store.record_verdict, (info.code, info.teacher_key, "q-demo", 0, None)),
        (classroom.UnknownClass, store.show_answer, ("ZZZZZZ", info.teacher_key, "q-four")),
    ]
    for error, call, args in cases:
        before = snapshot(store)
        with pytest.raises(error):
            call(*args)
        assert snapshot(store) == before, (call.__name__, args)
    for error, call, args in ((classroom.UnknownClass, store.room_version, ("ZZZZZZ",)),
                              (classroom.UnknownClass, store.facts, ("'; DROP TABLE classes; --",)),
                              (classroom.UnknownStudent, store.check_student, (other.code, me)),
                              (classroom.UnknownStudent, store.ballot, (other.code, me, "q-two")),
                              (classroom.BadInput, store.ballot, (info.code, "../etc", "q-four"))):
        with pytest.raises(error):
            call(*args)


def test_a_restart_and_a_second_process_see_the_same_room(url, bank, clock):
    teacher_side = classroom.open_store(url, bank=bank, clock=clock)
    room_side = classroom.open_store(url, bank=bank, clock=clock)  # another server process on the same database
    info = teacher_side.create_class(["q-four", "q-demo"])
    teacher_side.open_vote(info.code, info.teacher_key, "q-four")
    teacher_side.reveal(info.code, info.teacher_key)
    teacher_side.show_answer(info.code, info.teacher_key, "q-four")
    teacher_side.record_verdict(info.code, info.teacher_key, "q-demo", 1, "Slower.")
    assert room_side.facts(info.code) == teacher_side.facts(info.code)
    before = teacher_side.facts(info.code)
    teacher_side.close()
    room_side.close()
    restarted = classroom.open_store(url, bank=bank, clock=clock)
    assert restarted.facts(info.code) == before == classroom.RoomFacts(before.version, frozenset({"q-four"}),
                                                                       {"q-demo": (1, "Slower.")})
    restarted.close()


def test_expiry_takes_the_room_facts_with_the_class(room, clock):
    from datetime import datetime
    store, info = room
    store.show_answer(info.code, info.teacher_key, "q-four")
    clock.now += classroom.RETENTION.total_seconds() + 1
    assert store.expire(datetime.fromtimestamp(clock.now)) == 1
    with store.engine.connect() as conn:
        assert conn.execute(select(schema.question_facts)).all() == []


def test_a_version_1_database_is_upgraded_in_place(url, bank):
    store = classroom.open_store(url, bank=bank)
    info = store.create_class(["q-four"])
    with store.engine.begin() as conn:  # back to version 1: no change counter, no facts table, no lock
        conn.execute(text("DROP TABLE question_facts"))
        conn.execute(text("ALTER TABLE classes DROP COLUMN version"))
        conn.execute(text("ALTER TABLE classes DROP COLUMN locked"))
        conn.execute(text("ALTER TABLE students DROP COLUMN joined_from"))
        conn.execute(schema.schema_version.update().values(version=1))
    store.close()
    upgraded = classroom.open_store(url, bank=bank)
    with upgraded.engine.connect() as conn:
        assert conn.execute(select(schema.schema_version.c.version)).scalar() == schema.SCHEMA_VERSION == 3
    assert upgraded.room_version(info.code) == 0  # the class kept, its counter starting from nothing
    upgraded.open_vote(info.code, info.teacher_key, "q-four")
    upgraded.show_answer(info.code, info.teacher_key, "q-four")
    assert upgraded.facts(info.code) == classroom.RoomFacts(2, frozenset({"q-four"}), {})
    assert upgraded.state(info.code).locked is False
    upgraded.join_from(info.code, "192.0.2.7")  # the new columns in use
    upgraded.lock(info.code, info.teacher_key)
    assert upgraded.state(info.code).locked is True
    upgraded.close()
