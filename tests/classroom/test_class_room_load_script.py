"""scripts/class_room_load.py runs a small room on a real server end to end: every phone sees every
vote opened, and the store counts exactly the ballots the phones hold (kept from rotting)."""
import re

import pytest

from tests.scripts import load_script


@pytest.mark.slow  # a real server start (torch and the models' code imported) and a room: about 40 s
def test_four_phones_every_vote_counted(capsys):
    script = load_script("class_room_load")
    status = script.main(["--phones", "4", "--questions", "1", "--change", "0.5", "--no-race", "--cpu-seconds", "2"])
    out = capsys.readouterr().out
    counted = re.search(r"votes cast (\d+) .*ballots counted (\d+) of (\d+) the phones hold; tallies exact: (\w+)", out)
    assert counted, out
    cast, ballots_counted, ballots_held, exact = int(counted[1]), int(counted[2]), int(counted[3]), counted[4]
    assert ballots_counted == ballots_held == 8 and exact == "yes", out  # 4 phones x 2 rounds, changes replaced
    assert cast >= ballots_counted, out
    assert "missed 0" in out and "request errors: 0" in out, out
    assert status == 0, out


def test_it_refuses_an_unbounded_room():
    script = load_script("class_room_load")
    for argv in (["--phones", "100000"], ["--questions", "0"], ["--change", "2"]):
        with pytest.raises(SystemExit):
            script.main(argv)
