"""scripts/class_load.py runs a small room end to end and reports an exact tally (kept from rotting)."""
import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "class_load.py"


def load_script():
    spec = importlib.util.spec_from_file_location("class_load", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_small_room_on_a_sqlite_file(tmp_path, capsys):
    script = load_script()
    assert script.main(["--url", f"sqlite:///{tmp_path / 'load.sqlite3'}", "--students", "12", "--processes", "2",
                        "--rooms", "1"]) == 0
    out = capsys.readouterr().out
    assert "tally exact: yes   lost votes: 0" in out and "vote   latency (ms)" in out


def test_it_refuses_a_remote_database_and_unbounded_rooms():
    script = load_script()
    with pytest.raises(SystemExit):
        script.main(["--url", "postgresql://someone@db.example.org/x"])
    with pytest.raises(SystemExit):
        script.main(["--students", "100000"])
