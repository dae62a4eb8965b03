"""A room under load, on SQLite and PostgreSQL: 60 students join and vote from 5 OS processes at once, some
changing their vote, with a revote; many threads of one server on one store; and why the unique key
matters (a plain insert instead of the upsert would count a changed vote twice)."""
import threading

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, func, select
from sqlalchemy.exc import IntegrityError

from classroom import store as store_module
from classroom.schema import votes
from classroom.tools.crowd import run_room


def test_sixty_students_from_five_processes(url):
    report = run_room(url, students=60, processes=5, change=0.3, seed=1, timeout=60)
    assert report.errors == []
    assert report.tallies == report.expected and report.lost == 0
    for round in (1, 2):
        assert sum(report.tallies[round].values()) == 60  # every student counted once per round
    assert report.votes > 120  # some students changed their vote, and every change replaced the first


def test_many_threads_share_one_store(store):
    info = store.create_class(["q-four"])
    store.open_vote(info.code, info.teacher_key, "q-four")
    results, errors = {}, []

    def student(i):
        try:
            sid = store.join(info.code)
            store.vote(info.code, sid, "q-four", i % 4)
            store.vote(info.code, sid, "q-four", (i + 1) % 4)  # a change of mind
            results[sid] = (i + 1) % 4
        except Exception as err:  # collected: an assertion in a thread would be lost
            errors.append(err)

    threads = [threading.Thread(target=student, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    expected = {o: sum(1 for v in results.values() if v == o) for o in range(4)}
    assert store.tally(info.code, "q-four") == expected and len(results) == 24


def plain_insert(conn, values):
    """The broken variant: a plain insert where the store upserts."""
    conn.execute(votes.insert().values(**values))


def test_the_unique_key_refuses_a_plain_second_insert(store, monkeypatch):
    info = store.create_class(["q-four"])
    sid = store.join(info.code)
    store.open_vote(info.code, info.teacher_key, "q-four")
    monkeypatch.setattr(store_module, "record_vote", plain_insert)
    store.vote(info.code, sid, "q-four", 0)
    with pytest.raises(IntegrityError):  # the database itself refuses a second row for the same student
        store.vote(info.code, sid, "q-four", 2)
    assert store.tally(info.code, "q-four") == {0: 1, 1: 0, 2: 0, 3: 0}
    monkeypatch.undo()
    store.vote(info.code, sid, "q-four", 2)  # the store's upsert replaces it
    assert store.tally(info.code, "q-four") == {0: 0, 1: 0, 2: 1, 3: 0}


def test_without_the_unique_key_a_changed_vote_counts_twice(store):
    """The failure the key prevents, shown on a copy of the votes table without it."""
    keyless = Table("votes_without_key", MetaData(), Column("student", String(64)), Column("option", Integer))
    with store.engine.begin() as conn:
        keyless.create(conn)
        conn.execute(keyless.insert(), [{"student": "s1", "option": 0}, {"student": "s1", "option": 2}])
        counted = conn.execute(select(func.count()).select_from(keyless)).scalar()
        keyless.drop(conn)
    assert counted == 2  # one student, two votes counted


def test_a_flood_from_many_connections_at_once_still_stops_at_the_limit(store):
    """One student's votes racing on 3 × VOTE_BURST connections: exactly VOTE_BURST pass (the student's row
    is locked while its window is read and written, so no two votes both see room for one more)."""
    info = store.create_class(["q-four"])
    sid = store.join(info.code)
    store.open_vote(info.code, info.teacher_key, "q-four")
    start, outcomes = threading.Barrier(3 * store_module.VOTE_BURST), []

    def flood(i):
        start.wait(30)
        try:
            store.vote(info.code, sid, "q-four", i % 4)
            outcomes.append("ok")
        except store_module.TooManyRequests:
            outcomes.append("refused")

    threads = [threading.Thread(target=flood, args=(i,)) for i in range(3 * store_module.VOTE_BURST)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert outcomes.count("ok") == store_module.VOTE_BURST
    assert outcomes.count("refused") == 2 * store_module.VOTE_BURST
    assert sum(store.tally(info.code, "q-four").values()) == 1
