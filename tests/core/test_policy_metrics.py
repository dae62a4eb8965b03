"""The serving stacks' acceptance metrics, the hindsight oracle and the calibration table on made-up
rounds; the CLI's --policy and its --json metrics; the shoot-out and the policy race with a policy."""
import dataclasses
import json
import math

import pytest

from specdec_core import GenerationRequest, NgramDrafter, speculative_generate
from specdec_core.analysis import race
from specdec_core.analysis.policy_compare import PLAIN, compare_policies, summary
from specdec_core.analysis.round_stats import (
    acceptance_length_histogram,
    calibration,
    gamma_stats,
    mean_acceptance_length,
    modelled_speedup,
    oracle_speedup,
    per_position_acceptance_rate,
)
from specdec_core.policies import POLICIES, ConfidenceStop, Costs, Heuristic, with_costs
from specdec_core.sampling_config import GREEDY
from specdec_core.tools import cli
from specdec_core.trace import RoundTrace


def _round(drafted: int, accepted: int, margins=None, gamma=None, stop="gamma", passes=None) -> RoundTrace:
    kind = "bonus" if accepted == drafted else "corrective"
    accept = [1.0] * accepted + [0.0] * (drafted - accepted)
    return RoundTrace(index=0, position=0, draft_tokens=[1] * drafted, n_accepted=accepted, next_token=2,
                      next_kind=kind, emitted=[1] * (accepted + 1), q_draft=[1.0] * drafted, p_draft=accept,
                      accept_prob=accept, uniforms=None, draft_pass_s=[], target_pass_s=0.0,
                      draft_passes=drafted if passes is None else passes,
                      gamma=gamma or drafted, draft_stop=stop, draft_margin=margins, draft_top=margins)


# the confidence-stopped round paid 3 draft passes for its 2 drafts (the declined one's pass too)
ROUNDS = [_round(4, 4), _round(4, 1), _round(2, 0, stop="confidence", gamma=4, passes=3), _round(3, 3)]


def test_acceptance_metrics_follow_the_serving_stacks_definitions():
    assert mean_acceptance_length(ROUNDS) == pytest.approx((5 + 2 + 1 + 4) / 4)
    # position 1: drafted by all 4, accepted by 3; 2: by 4, accepted by 2; 3: by 3 and 2; 4: by 2 and 1
    assert per_position_acceptance_rate(ROUNDS) == pytest.approx([3 / 4, 2 / 4, 2 / 3, 1 / 2])
    assert acceptance_length_histogram(ROUNDS) == {1: 1, 2: 1, 3: 0, 4: 1, 5: 1}
    stats = gamma_stats(ROUNDS)
    assert stats["draft_stops"] == {"gamma": 3, "confidence": 1} and stats["mean_gamma"] == pytest.approx(15 / 4)
    assert math.isnan(mean_acceptance_length([]))


def test_the_oracle_drafts_exactly_what_was_accepted():
    costs = Costs(c=0.1, table=(1.0, 1.2, 1.4, 1.6, 1.8))
    tokens = 5 + 2 + 1 + 4
    assert modelled_speedup(ROUNDS, costs) == pytest.approx(tokens / (4 * 0.1 + 1.8 + 4 * 0.1 + 1.8 + 0.3 + 1.4
                                                                      + 0.3 + 1.6))
    assert oracle_speedup(ROUNDS, costs) == pytest.approx(tokens / (0.4 + 1.8 + 0.1 + 1.2 + 1.0 + 0.3 + 1.6))
    assert oracle_speedup(ROUNDS, costs) > modelled_speedup(ROUNDS, costs)


def test_calibration_bins_judged_drafts_by_confidence():
    rounds = [_round(3, 1, margins=[0.95, 0.15, 0.12]), _round(2, 2, margins=[0.91, 0.55])]
    table = calibration(rounds, "margin", bins=10, spacing="equal")
    by_bin = {round(row.bin_low, 1): (row.drafts, row.acceptance) for row in table.itertuples() if row.drafts}
    # the third draft of round 1 was never judged (the second was rejected), so it is not counted
    assert by_bin == {0.9: (2, 1.0), 0.1: (1, 0.0), 0.5: (1, 1.0)}
    quantiles = calibration(rounds, "margin", bins=2)  # two bins of two judged drafts each, lowest first
    assert list(quantiles["drafts"]) == [2, 2] and list(quantiles["acceptance"]) == [0.5, 1.0]
    assert list(quantiles["bin_low"]) == [0.15, 0.91]
    with pytest.raises(ValueError, match="signal"):
        calibration(rounds, "entropy")


def test_cli_takes_a_policy_and_reports_the_metrics(small_pair, monkeypatch, capsys):
    target, draft = small_pair

    class Pair:  # the CLI loads a named pair; give it the tiny one
        def __init__(self):
            self.target, self.draft, self.self_drafters, self.notes = target, draft, {}, []
            self.tokenizer = type("T", (), {"encode": staticmethod(lambda s: [1, 2, 3]),
                                            "decode": staticmethod(lambda ids: " ".join(map(str, ids)))})()

    monkeypatch.setattr(cli, "load_pair", lambda name, **options: Pair())
    assert cli.main(["generate", "--prompt", "x", "--policy", "heuristic", "--gamma", "2", "--max-gamma", "5",
                     "--max-new-tokens", "20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["policy"] == "heuristic" and out["mean_acceptance_length"] >= 1
    assert len(out["per_position_acceptance_rate"]) <= 5 and sum(out["acceptance_length_histogram"].values()) == \
        out["target_passes"]
    assert {r["gamma"] for r in out["rounds"]} <= set(range(1, 6)) and out["rounds"][0]["gamma"] == 2
    assert cli.main(["generate", "--prompt", "x", "--policy", "confidence", "--threshold", "2"]) == 2
    assert "threshold" in capsys.readouterr().err


def test_shootout_and_policy_race_accept_a_policy(small_pair):
    target, draft = small_pair
    out = race.drafter_shootout(target, {"model": draft, "ngram": NgramDrafter()},
                                GenerationRequest([1, 2, 3, 1, 2, 3], 12, GREEDY, 0),
                                ConfidenceStop(threshold=0.2, max_gamma=6), repeats=1)
    assert [r["drafter"] for r in out["rows"]] == ["model", "ngram"]
    assert all(r["mean_acceptance_length"] >= 1 for r in out["rows"])
    results = compare_policies(target, draft, [[1, 2, 3], [4, 5]], {"fixed": 3, "heuristic": Heuristic()},
                               GenerationRequest(max_new_tokens=12, sampling=GREEDY), repeats=2)
    rows = summary(results, Costs())
    assert [r["policy"] for r in rows] == [PLAIN, "fixed", "heuristic"]
    assert all(len(results[k].seconds) == 4 and len(results[k].per_repetition()) == 2 for k in results)
    alone = speculative_generate(target, draft, [1, 2, 3], gamma=Heuristic(), max_new_tokens=12, sampling=GREEDY,
                                 eos_token_id=None).rounds  # the first prompt's rounds, run on their own
    raced = results["heuristic"].rounds[:len(alone)]
    assert [(r.gamma, r.n_accepted) for r in raced] == [(r.gamma, r.n_accepted) for r in alone]


def test_with_costs_replaces_the_planning_profile_only_where_there_is_one():
    cheap = Costs(c=0.01, table=(1.0, 1.01, 1.02))
    assert with_costs(POLICIES["acceptance"](), cheap).costs == cheap
    assert with_costs(POLICIES["hybrid"](), cheap).length.costs == cheap
    assert with_costs(POLICIES["calibrated"](), cheap).costs == cheap
    assert with_costs(POLICIES["heuristic"](), cheap) == POLICIES["heuristic"]()


def test_costs_are_one_frozen_hashable_type_measured_or_planned():
    measured_here = Costs.measured(0.010, 0.001, {1: 0.010, 4: 0.016, 8: 0.024})
    assert hash(measured_here) == hash(Costs.measured(0.010, 0.001, {8: 0.024, 1: 0.010, 4: 0.016}))
    assert measured_here.c == pytest.approx(0.1) and measured_here.verify_s == {1: 0.010, 4: 0.016, 8: 0.024}
    assert measured_here.v(3) == pytest.approx(1.6) and measured_here.v(5) == pytest.approx(2.0)  # interpolated
    assert measured_here.v(20) == pytest.approx(2.4)  # the nearest measured beyond the last
    planned = measured_here.planning(max_gamma=4)
    assert planned.table == (1.0, measured_here.v(1), measured_here.v(2), measured_here.v(3), measured_here.v(4))
    assert planned.target_s is None and planned.v(5) == pytest.approx(2 * planned.v(4) - planned.v(3))  # linear beyond
    assert Costs.from_profile(measured_here, 4) == planned
    with pytest.raises(dataclasses.FrozenInstanceError):
        planned.c = 1.0


def test_policies_declare_whether_they_plan_with_costs():
    planners = {name for name, make in POLICIES.items() if make().plans_with_costs}
    assert planners == {"acceptance", "hybrid", "calibrated"}
    cheap = Costs(c=0.01, table=(1.0, 1.01, 1.02))
    for name, make in POLICIES.items():
        assert (with_costs(make(), cheap) == make()) == (name not in planners)
