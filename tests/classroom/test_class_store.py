"""Every call of the class store on SQLite and PostgreSQL: what it does, and that a restart loses nothing."""
import csv
import io
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

import classroom
from classroom import codes
from classroom.schema import classes
from classroom.store import RETENTION
from tests.classroom.support import BANK_RAW, snapshot

ROOT = Path(__file__).resolve().parents[2]


def test_create_class_gives_a_readable_code_and_a_secret_key(store):
    info = store.create_class(["q-four", "q-two"])
    assert re.fullmatch(r"[A-HJ-NP-Z2-9]{6}", info.code)
    assert len(info.teacher_key) >= 32 and info.teacher_key not in repr(info)
    dump = repr(snapshot(store))
    assert info.teacher_key not in dump  # only its hash is stored
    assert codes.hash_key(info.teacher_key) in dump
    state = store.state(info.code)
    assert state == classroom.ClassState(info.code, ("q-four", "q-two"), None, None, False, False, 0, 0)


def test_codes_are_unique_and_typed_loosely(store):
    infos = [store.create_class(["q-two"]) for _ in range(20)]
    assert len({i.code for i in infos}) == 20
    code = infos[0].code
    sid = store.join(f" {code[:3].lower()}-{code[3:]} ")  # as a student might type it
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", sid)
    assert store.state(code).students == 1


def test_a_vote_round_and_the_revote(store):
    info = store.create_class(["q-four", "q-two"])
    a, b, c = (store.join(info.code) for _ in range(3))
    store.open_vote(info.code, info.teacher_key, "q-four")
    store.vote(info.code, a, "q-four", 0)
    store.vote(info.code, b, "q-four", 0)
    store.vote(info.code, c, "q-four", 3)
    store.vote(info.code, b, "q-four", 2)  # b changes their mind: replaces, not adds
    assert store.tally(info.code, "q-four") == {0: 1, 1: 0, 2: 1, 3: 1}
    state = store.state(info.code)
    assert (state.question_id, state.round, state.open, state.revealed, state.students, state.answers) == \
        ("q-four", 1, True, False, 3, 3)

    store.reveal(info.code, info.teacher_key)
    state = store.state(info.code)
    assert state.revealed and not state.open  # what the room sees is final
    with pytest.raises(classroom.VoteNotOpen):
        store.vote(info.code, a, "q-four", 1)

    store.open_vote(info.code, info.teacher_key, "q-four", round=2)  # the revote after discussion
    state = store.state(info.code)
    assert (state.round, state.open, state.revealed, state.answers) == (2, True, False, 0)
    store.vote(info.code, a, "q-four", 2, round=2)
    store.vote(info.code, c, "q-four", 2, round=2)
    assert store.tally(info.code, "q-four", round=2) == {0: 0, 1: 0, 2: 2, 3: 0}
    assert store.tally(info.code, "q-four", round=1) == {0: 1, 1: 0, 2: 1, 3: 1}  # round 1 untouched
    with pytest.raises(classroom.VoteNotOpen):
        store.vote(info.code, a, "q-four", 1, round=1)  # the closed round stays closed

    store.close_vote(info.code, info.teacher_key)
    assert not store.state(info.code).open
    store.reveal(info.code, info.teacher_key)
    store.hide(info.code, info.teacher_key)
    assert not store.state(info.code).revealed
    assert store.tally(info.code, "q-two") == {0: 0, 1: 0}  # every option, voted or not


def test_check_teacher(store):
    info = store.create_class(["q-two"])
    other = store.create_class(["q-two"])
    store.check_teacher(info.code, info.teacher_key)
    for key in (other.teacher_key, info.teacher_key[:-1], "", None, 42, "x" * 10_000, info.teacher_key + " "):
        with pytest.raises(PermissionError):
            store.check_teacher(info.code, key)


def test_export_csv_has_counts_and_never_a_student(store):
    info = store.create_class(["q-four", "q-two", "q-demo"])
    ids = [store.join(info.code) for _ in range(3)]
    store.open_vote(info.code, info.teacher_key, "q-two")
    for sid, option in zip(ids, (0, 1, 1)):
        store.vote(info.code, sid, "q-two", option)
    store.open_vote(info.code, info.teacher_key, "q-two", round=2)
    for sid in ids:
        store.vote(info.code, sid, "q-two", 0, round=2)
    store.open_vote(info.code, info.teacher_key, "q-demo")
    store.vote(info.code, ids[0], "q-demo", 2)
    text = store.export_csv(info.code, info.teacher_key)
    rows = list(csv.reader(io.StringIO(text)))
    assert rows == [["question", "round", "option", "count"],
                    ["q-two", "1", "0", "1"], ["q-two", "1", "1", "2"],
                    ["q-two", "2", "0", "3"], ["q-two", "2", "1", "0"],
                    ["q-demo", "1", "0", "0"], ["q-demo", "1", "1", "0"], ["q-demo", "1", "2", "1"]]
    assert not any(sid in text for sid in ids)
    with pytest.raises(PermissionError):
        store.export_csv(info.code, "not-the-key")


def test_expire_deletes_old_classes_with_their_votes(store, clock):
    old = store.create_class(["q-two"])
    sid = store.join(old.code)
    store.open_vote(old.code, old.teacher_key, "q-two")
    store.vote(old.code, sid, "q-two", 1)
    clock.now += RETENTION.total_seconds() - 60
    young = store.create_class(["q-two"])  # runs expire: the old class is not old enough yet
    store.state(old.code)
    clock.now += 120
    fresh = store.create_class(["q-four"])  # now it is
    with pytest.raises(classroom.UnknownClass):
        store.state(old.code)
    rows = snapshot(store)
    assert len(rows["classes"]) == 2 and rows["students"] == [] and rows["votes"] == []
    store.state(young.code), store.state(fresh.code)
    later = datetime.fromtimestamp(clock.now + 1, UTC) + RETENTION
    assert store.expire(now=later) == 2
    assert snapshot(store)["classes"] == []


def _mid_class(store):
    """A class stopped in the middle: round 1 of q-four voted and closed, round 2 open with some votes."""
    info = store.create_class(["q-four", "q-two"])
    ids = [store.join(info.code) for _ in range(4)]
    store.open_vote(info.code, info.teacher_key, "q-four")
    for sid, option in zip(ids, (0, 1, 1, 3)):
        store.vote(info.code, sid, "q-four", option)
    store.reveal(info.code, info.teacher_key)
    store.open_vote(info.code, info.teacher_key, "q-four", round=2)
    store.vote(info.code, ids[0], "q-four", 1, round=2)
    store.vote(info.code, ids[1], "q-four", 1, round=2)
    store.reveal(info.code, info.teacher_key)
    return info, ids


def test_a_restart_loses_nothing(url, bank, clock):
    first = classroom.open_store(url, bank=bank, clock=clock)
    info, ids = _mid_class(first)
    before = (first.state(info.code), first.tally(info.code, "q-four", 1), first.tally(info.code, "q-four", 2),
              first.export_csv(info.code, info.teacher_key))
    first.close()
    second = classroom.open_store(url, bank=bank, clock=clock)  # a new server process on the same database
    after = (second.state(info.code), second.tally(info.code, "q-four", 1), second.tally(info.code, "q-four", 2),
             second.export_csv(info.code, info.teacher_key))
    assert after == before
    assert before[0] == classroom.ClassState(info.code, ("q-four", "q-two"), "q-four", 2, False, True, 4, 2)
    second.open_vote(info.code, info.teacher_key, "q-two")  # the class goes on: the teacher key and students hold
    second.vote(info.code, ids[3], "q-two", 1)
    assert second.tally(info.code, "q-two") == {0: 0, 1: 1}
    second.close()


def test_a_fresh_process_reads_the_class_back(tmp_path, bank, clock):
    url = f"sqlite:///{tmp_path / 'class.sqlite3'}"
    store = classroom.open_store(url, bank=bank, clock=clock)
    info, _ = _mid_class(store)
    store.close()
    script = (f"import classroom; s = classroom.open_store({url!r}, bank=classroom.bank_from({BANK_RAW!r})); "
              f"print(s.state({info.code!r})); print(s.tally({info.code!r}, 'q-four', 1), "
              f"s.tally({info.code!r}, 'q-four', 2))")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.splitlines() == [
        repr(classroom.ClassState(info.code, ("q-four", "q-two"), "q-four", 2, False, True, 4, 2)),
        "{0: 1, 1: 2, 2: 0, 3: 1} {0: 0, 1: 2, 2: 0, 3: 0}"]


def test_default_url_and_driver_mapping(monkeypatch):
    monkeypatch.delenv(classroom.ENV_VAR, raising=False)
    assert classroom.default_url().endswith("/data/classroom.sqlite3")
    monkeypatch.setenv(classroom.ENV_VAR, "postgresql://u@h/db")
    assert classroom.default_url() == "postgresql://u@h/db"
    from classroom.engine import driver_url
    assert driver_url("postgresql://u@h/db").drivername == "postgresql+psycopg"
    assert driver_url("postgres://u@h/db").drivername == "postgresql+psycopg"
    for bad in ("not a url", "mysql://u@h/db", "sqlite://"):
        with pytest.raises(classroom.BadInput):
            classroom.open_store(bad, bank=classroom.bank_from(BANK_RAW))


def test_the_schema_version_is_kept_and_a_newer_one_refused(url, bank):
    store = classroom.open_store(url, bank=bank)
    from classroom.schema import SCHEMA_VERSION, schema_version
    with store.engine.begin() as conn:
        assert conn.execute(select(schema_version.c.version)).scalars().all() == [SCHEMA_VERSION]
        conn.execute(schema_version.update().values(version=SCHEMA_VERSION + 1))
    store.close()
    with pytest.raises(classroom.ClassError, match="newer"):
        classroom.open_store(url, bank=bank)


def test_the_stored_hash_is_not_the_key(store):
    info = store.create_class(["q-two"])
    with store.engine.connect() as conn:
        stored = conn.execute(select(classes.c.teacher_hash)).scalar()
    assert stored != info.teacher_key and len(stored) == 64


def test_a_taken_code_is_drawn_again(store, monkeypatch):
    first = store.create_class(["q-two"])
    draws = iter([first.code, first.code, "ABCDEF"])
    monkeypatch.setattr(codes, "new_code", lambda: next(draws))
    assert store.create_class(["q-two"]).code == "ABCDEF"
    monkeypatch.setattr(codes, "new_code", lambda: first.code)
    before = snapshot(store)
    with pytest.raises(classroom.TooManyRequests):
        store.create_class(["q-two"])
    assert snapshot(store) == before


def test_an_older_schema_is_upgraded_in_place(url, bank, monkeypatch):
    from classroom import schema
    current = schema.SCHEMA_VERSION
    classroom.open_store(url, bank=bank).close()  # a database of this app's version
    steps = []
    monkeypatch.setattr(schema, "SCHEMA_VERSION", current + 1)  # an app one version newer
    monkeypatch.setitem(schema.UPGRADES, current, lambda conn: steps.append(conn.dialect.name))
    store = classroom.open_store(url, bank=bank)
    with store.engine.connect() as conn:
        assert conn.execute(select(schema.schema_version.c.version)).scalar() == current + 1
    assert len(steps) == 1
    store.close()
    classroom.open_store(url, bank=bank).close()  # already upgraded: no step runs again
    assert len(steps) == 1
