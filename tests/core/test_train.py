"""The training entry point runs end to end on a tiny slice of the corpus, saves, reloads, generates."""
import json
import subprocess
import sys

import pytest

from specdec_core import GREEDY, SamplingConfig, autoregressive_generate, speculative_generate
from specdec_core.pairs import load_pair
from specdec_core.tools.train.corpus import VALIDATION_PLAYS, clean_play, load_plays, split_plays
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # trains a tiny pair end to end


def test_tiny_training_run_end_to_end(tmp_path):
    run, out = tmp_path / "run", tmp_path / "out"
    subprocess.run([sys.executable, "-m", "specdec_core.tools.train", "--tiny", "--threads", "1", "--run", str(run),
                    "--out", str(out)], cwd=ROOT, check=True, capture_output=True, timeout=300)
    assert set(json.loads((run / "split.json").read_text())["validation"]) == set(VALIDATION_PLAYS)
    pair = load_pair("custom", target=str(out / "shakespeare-target"), draft=str(out / "shakespeare-draft"))
    ids = pair.tokenizer.encode("KING:\n")
    plain = autoregressive_generate(pair.target, ids, 10, GREEDY).tokens
    assert speculative_generate(pair.target, pair.draft, ids, gamma=3, max_new_tokens=10, sampling=GREEDY).tokens == plain
    sampled = speculative_generate(pair.target, pair.draft, ids, gamma=3, max_new_tokens=10, sampling=SamplingConfig(1.0), seed=0)
    assert len(sampled.tokens) <= 10
    # a second start resumes from the finished checkpoints instead of training again
    again = subprocess.run([sys.executable, "-m", "specdec_core.tools.train", "--tiny", "--threads", "1", "--run", str(run),
                            "--out", str(out)], cwd=ROOT, check=True, capture_output=True, text=True, timeout=300)
    assert "step" not in again.stdout.replace("exported", "")


def test_validation_plays_never_reach_training():
    train, valid = split_plays(load_plays())
    assert set(valid) == set(VALIDATION_PLAYS) and not set(train) & set(valid)
    assert len(train) + len(valid) == 38


def test_cleaning_turns_markdown_into_play_text():
    md = "# Play\n\n## ACT I\n\n_Enter KING and_\n_QUEEN_\n\n**KING**  \nWho's _there_?  \nSpeak!\n"
    text = clean_play(md)
    assert "KING:\nWho's there?\nSpeak!" in text
    assert "**" not in text and "_" not in text
    assert "ACT I" in text
