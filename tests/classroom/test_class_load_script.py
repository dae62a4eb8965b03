"""scripts/class_load.py runs a small room end to end and reports an exact tally (kept from rotting)."""

import pytest

from tests.scripts import load_script


def test_a_small_room_on_a_sqlite_file(tmp_path, capsys):
    script = load_script("class_load")
    assert script.main(["--url", f"sqlite:///{tmp_path / 'load.sqlite3'}", "--students", "12", "--processes", "2",
                        "--rooms", "1"]) == 0
    out = capsys.readouterr().out
    assert "tally exact: yes   lost votes: 0" in out and "vote   latency (ms)" in out


def test_it_refuses_a_remote_database_and_unbounded_rooms():
    script = load_script("class_load")
    with pytest.raises(SystemExit):
        script.main(["--url", "postgresql://someone@db.example.org/x"])
    with pytest.raises(SystemExit):
        script.main(["--students", "100000"])
