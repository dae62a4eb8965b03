"""The adaptive default per drafter: the benchmark's choice among the adaptive policies, the record it
writes beside the bundled pair, and the pair reading it back."""
import json
from dataclasses import replace

import pytest

from specdec_core.analysis.policy_compare import PLAIN, best_adaptive
from specdec_core.pairs import PAIRS
from specdec_core.policies import ADAPTIVE, DEFAULT_ADAPTIVE
from specdec_core.policy_record import read_record, write_choice


def rows(fixed: dict[str, float], adaptive: dict[str, float]) -> list[dict]:
    """bench-policies summary rows with only what the choice reads: each contestant's median speedup."""
    speedups = {PLAIN: 1.0, **fixed, **{name: adaptive.get(name, 0.5) for name in ADAPTIVE}}
    return [{"policy": name, "speedup": x} for name, x in speedups.items()]


def test_the_choice_is_the_best_adaptive_policy_relative_to_the_best_fixed_gamma():
    got = best_adaptive({"T=0": rows({"fixed gamma=4": 2.0, "fixed gamma=6": 1.8}, {"heuristic": 1.9, "hybrid": 1.6})})
    assert got["policy"] == "heuristic"
    assert got["score"] == pytest.approx(0.95)
    assert got["settings"]["T=0"] == {"speedup": 1.9, "vs_best_fixed": pytest.approx(0.95),
                                      "best_fixed": "fixed gamma=4", "best_fixed_speedup": 2.0}


def test_the_choice_weighs_every_setting_against_its_own_best_fixed_gamma():
    """A policy that wins one setting narrowly and loses the other badly is not chosen; the raw speedups
    would mislead, since the settings' best fixed gammas differ (2.0x against 1.2x)."""
    settings = {"T=0": rows({"fixed gamma=5": 2.0}, {"heuristic": 2.0, "confidence": 1.9}),
                "T=1": rows({"fixed gamma=3": 1.2}, {"heuristic": 0.6, "confidence": 1.1})}
    assert best_adaptive(settings)["policy"] == "confidence"


def test_the_choice_needs_every_adaptive_policy_and_a_fixed_gamma():
    with pytest.raises(ValueError, match="fixed gamma"):
        best_adaptive({"T=0": [r for r in rows({}, {}) if r["policy"] != PLAIN]})
    with pytest.raises(ValueError, match="hybrid"):
        best_adaptive({"T=0": [r for r in rows({"fixed gamma=2": 1.0}, {}) if r["policy"] != "hybrid"]})
    with pytest.raises(ValueError):
        best_adaptive({})


def test_the_record_keeps_other_drafters_and_refuses_a_policy_that_is_not_adaptive(tmp_path):
    path = tmp_path / "record.json"
    assert read_record(path) == ({}, [])  # no record: no note either
    write_choice(path, "eagle", {"policy": "heuristic", "when": "then"})
    write_choice(path, "draft", {"policy": "hybrid", "when": "now"})
    record, notes = read_record(path)
    assert {d: e["policy"] for d, e in record.items()} == {"draft": "hybrid", "eagle": "heuristic"} and not notes
    with pytest.raises(ValueError, match="adaptive"):
        write_choice(path, "draft", {"policy": "constant"})
    assert read_record(path)[0]["draft"]["policy"] == "hybrid"


def test_an_unreadable_record_or_entry_leaves_a_note(tmp_path):
    path = tmp_path / "record.json"
    path.write_text("{not json")
    record, notes = read_record(path)
    assert record == {} and "cannot be read" in notes[0]
    path.write_text(json.dumps({"draft": {"policy": "constant"}, "eagle": {"policy": "calibrated"}, "medusa": 3}))
    record, notes = read_record(path)
    assert list(record) == ["eagle"] and len(notes) == 2 and any("'draft'" in n for n in notes)


def test_the_pair_offers_its_recorded_policy_per_drafter_and_the_default_elsewhere(pair):
    record = {"draft": {"policy": "heuristic", "precision": "fp32"}, "eagle": {"policy": "confidence", "precision": "fp32"}}
    p = replace(pair, adaptive_choices=record)
    assert (p.adaptive_policy(), p.adaptive_policy("eagle"), p.adaptive_policy("medusa")) == \
        ("heuristic", "confidence", DEFAULT_ADAPTIVE)
    assert replace(p, precision="bf16").adaptive_policy("eagle") == DEFAULT_ADAPTIVE  # measured at fp32 only


def test_the_bundled_pair_has_a_measured_adaptive_default_for_each_of_its_drafters(pair):
    """The record is the benchmark's output (`specdec bench-policies --drafter NAME --record`), not typed."""
    record, notes = read_record(PAIRS["shakespeare"].policy_record)
    assert not notes and set(record) == {"draft", *pair.self_drafters}
    for drafter, entry in record.items():
        assert entry["policy"] in ADAPTIVE and entry["command"].startswith("specdec bench-policies")
        assert f"--drafter {drafter}" in entry["command"] and "--record" in entry["command"]
        assert pair.adaptive_policy(drafter) == entry["policy"]
