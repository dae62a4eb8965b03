"""The class load command (python -m classroom.tools.load) runs each mode end to end and its checks hold
(kept from rotting): the store alone, a room on the app, a whole lesson with the teacher's reload and a
server restart, a join flood."""
import re

import pytest

from classroom.tools import load


def test_the_store_alone_a_small_room_on_a_sqlite_file(tmp_path, capsys):
    assert load.main(["store", "--url", f"sqlite:///{tmp_path / 'load.sqlite3'}", "--students", "12",
                      "--processes", "2", "--rooms", "1"]) == 0
    out = capsys.readouterr().out
    assert "tally exact: yes   lost votes: 0" in out and "vote   latency (ms)" in out


def test_it_refuses_a_remote_database_and_unbounded_rooms():
    for argv in (["store", "--url", "postgresql://someone@db.example.org/x"], ["store", "--students", "100000"],
                 ["room", "--phones", "501"], ["room", "--questions", "0"], ["room", "--change", "2"],
                 ["lesson", "--phones", "0"], ["flood", "--url", "http://127.0.0.1:1"]):
        with pytest.raises(SystemExit):
            load.main(argv)


@pytest.mark.slow  # a real server start (torch and the models' code imported) and a room: about 40 s
def test_a_room_of_six_phones_every_vote_counted(capsys):
    status = load.main(["room", "--phones", "6", "--questions", "2", "--change", "0.5", "--cpu-seconds", "2"])
    out = capsys.readouterr().out
    counted = re.search(r"all votes: ballots counted (\d+) of (\d+); tallies exact: (\w+)", out)
    assert counted, out
    assert int(counted[1]) == int(counted[2]) == 6 * 4 and counted[3] == "yes", out  # q1 x2, q2 x1, the rush
    assert "missed 0" in out and "failed 0" in out and "counted 6 of 6" in out, out
    assert status == 0, out


@pytest.mark.slow  # two server starts, a browser, 4 questions voted twice: a few minutes
def test_a_whole_lesson_with_a_reload_and_a_restart_counts_every_ballot(capsys):
    status = load.main(["lesson", "--phones", "12", "--questions", "4"])
    out = capsys.readouterr().out
    assert "ballots: expected 96 (every phone, every question, both rounds), the phones hold 96, the store counts 96" \
        in out, out
    assert "it shows 12 students joined" in out and "missed 0" in out, out
    assert re.search(r"phones still on question 2 round 2: 12 of 12", out), out
    assert status == 0, out


@pytest.mark.slow  # a real server start
def test_one_address_flooding_the_join_takes_five_seats(capsys):
    assert load.main(["flood", "--seconds", "3"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"5 seats taken in \d+ requests", out), out
