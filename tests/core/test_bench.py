"""The benchmark's quick mode on the bundled pair, at the smallest settings: its outputs have the
promised structure, and every greedy row of ours reproduces plain greedy decoding token for token.
No timing is asserted here: the performance targets are printed by the benchmark itself."""
import csv
import json
import re
from dataclasses import replace

import pytest

from specdec_core.pairs import PairUnavailable, load_pair
from specdec_core.tools import bench, cli


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    try:
        load_pair("shakespeare", device="cpu")
    except PairUnavailable as err:
        pytest.skip(f"bundled pair unavailable: {err}")
    out = tmp_path_factory.mktemp("bench")
    code = cli.main(["bench", "--quick", "--gammas", "2", "--max-new-tokens", "6", "--reps", "1",
                     "--trace-reps", "1", "--threads", "1", "--out", str(out)])
    return code, out


def test_prompts_file_is_fixed_and_held_out():
    data = json.loads(bench.PROMPTS_FILE.read_text())
    kinds = {p["kind"] for p in data["prompts"]}
    assert kinds == {"open", "repetitive"}
    assert {p["play"] for p in data["prompts"]} <= {"macbeth", "the-tempest"}  # the validation plays
    assert all(p["text"].strip() for p in data["prompts"])


def test_quick_bench_writes_table_csv_and_chart(quick_run):
    code, out = quick_run
    assert code == 0
    md = (out / "bench.md").read_text()
    assert "### Targets" in md and "| config | ms |" in md and "python -m specdec_core bench" in md
    assert (out / "bench.png").stat().st_size > 1000 or (out / "bench.html").exists()
    rows = list(csv.DictReader((out / "bench.csv").open()))
    configs = {r["config"] for r in rows}
    for label in ("plain greedy", "plain sampling", "spec model greedy gamma=2", "spec ngram greedy gamma=2",
                  "spec model sampling gamma=2", "hf generate (plain greedy)", "hf assisted, constant gamma=2",
                  "hf assisted, default"):
        assert label in configs, label
    assert {r["group"] for r in rows} == {"open", "repetitive"}
    for r in rows:
        assert float(r["seconds"]) > 0 and float(r["target_passes_per_token"]) > 0
        if r["method"] == "spec":
            assert 0 <= float(r["alpha"]) <= 1 and float(r["predicted"]) > 0 and float(r["decode_speedup"]) > 0
        if r["method"] == "spec" and r["drafter"] == "model":
            assert float(r["predicted_run"]) > 0 and float(r["v_run"]) > 0 and float(r["c_run"]) > 0
    runs = list(csv.DictReader((out / "runs.csv").open()))
    assert all(int(r["n_tokens"]) == 6 for r in runs)  # every method makes exactly the asked length


def test_our_greedy_rows_equal_plain_greedy(quick_run):
    _, out = quick_run
    rows = list(csv.DictReader((out / "bench.csv").open()))
    ours = [r for r in rows if r["decoding"] == "greedy" and r["method"] in ("plain", "spec", "tree")]
    assert ours and all(r["matches_greedy"] == "True" for r in ours)
    assert {"tree greedy shape=2,2,1,1 (14 nodes)", "tree greedy best-first budget=16 depth=4 (16 nodes)"} <= {
        r["config"] for r in ours}


def test_tree_rows_sit_next_to_the_chain_of_their_depth(quick_run):
    _, out = quick_run
    md = (out / "bench.md").read_text()
    assert "### Token trees against the chain of the same depth" in md
    assert "a tree of <= 32 nodes: tokens per target pass vs the chain of its depth" in md
    rows = list(csv.DictReader((out / "bench.csv").open()))
    assert "spec model greedy gamma=4" in {r["config"] for r in rows}  # the trees' rival, added for them
    for r in rows:
        if r["method"] == "tree":
            assert float(r["tokens_per_pass"]) >= 1 and 0 < float(r["nodes_per_round"]) <= int(r["nodes"])
            assert float(r["predicted"]) > 0


def test_gamma_list_parsing():
    assert bench.parse_gammas("1-3,6") == [1, 2, 3, 6]
    with pytest.raises(ValueError):
        bench.parse_gammas("0-2")


def test_prediction_from_in_run_costs():
    """aggregate() on made-up runs: the decoding speedup leaves out the prompt's prefill, and the
    in-run prediction is E(alpha, gamma) / (gamma c + v) with c and v from the runs' own passes."""
    plain, spec = bench.Config("plain", "greedy"), bench.Config("spec", "greedy", "model", 4)
    base = dict(kind="open", prompt="a", tokens=[1] * 8, target_passes=8, draft_passes=0, accepted=None,
                judged=None, prefill_s=1.0, target_s=0.8, draft_s=0.0, peak_mib=0.0)
    runs = [{**base, "config": plain, "seconds": 10.0, "pass_s": 0.1, "draft_pass_s": float("nan")},
            {**base, "config": spec, "seconds": 5.0, "target_passes": 2, "draft_passes": 8, "accepted": 6,
             "judged": 8, "pass_s": 0.2, "draft_pass_s": 0.01}]
    row = next(r for r in bench.aggregate(runs, [plain, spec], {"core": bench.Costs.measured(0.1, 0.01, {5: 0.15})},
                                          bench.Settings()) if r["config"] == spec.label)
    assert row["speedup"] == pytest.approx(2.0) and row["decode_speedup"] == pytest.approx(9 / 4)
    assert row["c_run"] == pytest.approx(0.1) and row["v_run"] == pytest.approx(2.0)
    alpha = 6 / 8
    expected = (1 - alpha ** 5) / (1 - alpha) / (4 * 0.1 + 2.0)
    assert row["predicted_run"] == pytest.approx(expected)
    assert row["of_predicted_run"] == pytest.approx(2.25 / expected)
    assert row["predicted"] == pytest.approx((1 - alpha ** 5) / (1 - alpha) / (4 * 0.1 + 1.5))  # the profile's


def test_cli_race_prints_the_median_speedup_with_its_spread(capsys):
    # --max-repeats 3: the race may not grow on a busy machine, so the count printed is the one asked for
    assert cli.main(["race", "--prompt", "ROMEO:", "--max-new-tokens", "6", "--repeats", "3", "--max-repeats", "3",
                     "--temperature", "0"]) == 0
    out = capsys.readouterr().out
    assert re.match(r"measured speedup \d+\.\d\d× \(\d+\.\d\d–\d+\.\d\d, 3 runs\); standard lane \d+ ms", out), out


def test_policy_benchmark_writes_every_policy_next_to_the_fixed_gammas(tmp_path):
    """`specdec bench-policies` at the smallest size: every adaptive policy and the fixed gamma get a row,
    with the oracle bound; no timing is asserted."""
    from specdec_core.policies import POLICIES
    code = cli.main(["bench-policies", "--gammas", "2", "--reps", "1", "--tokens", "6", "--prompts", "1",
                     "--temperatures", "0", "--out", str(tmp_path)])
    assert code == 0
    md = (tmp_path / "policy_bench.md").read_text()
    assert "| fixed gamma=2 |" in md and "Oracle bound" in md and "specdec bench-policies" in md
    for name in POLICIES:
        if name != "constant":
            assert f"| {name}" in md, name
    assert "Adaptive default for this drafter" in md


def test_policy_benchmark_records_the_adaptive_default_for_the_chosen_drafter(tmp_path, monkeypatch):
    """`--drafter eagle --record` races the EAGLE drafter and writes its choice beside the others'."""
    from specdec_core.pairs import PAIRS
    from specdec_core.policies import ADAPTIVE
    from specdec_core.policy_record import read_record, write_choice
    record = tmp_path / "policies.json"
    write_choice(record, "draft", {"policy": "hybrid"})
    monkeypatch.setitem(PAIRS, "shakespeare", replace(PAIRS["shakespeare"], policy_record=str(record)))
    code = cli.main(["bench-policies", "--drafter", "eagle", "--record", "--gammas", "2", "--reps", "1",
                     "--tokens", "6", "--prompts", "1", "--temperatures", "0", "--out", str(tmp_path)])
    assert code == 0
    report = json.loads((tmp_path / "policy_bench.json").read_text())
    entries, notes = read_record(record)
    assert report["drafter"] == "eagle" and not notes and entries["draft"] == {"policy": "hybrid"}
    assert entries["eagle"]["policy"] == report["choice"]["policy"] in ADAPTIVE
    assert "--drafter eagle" in entries["eagle"]["command"] and entries["eagle"]["precision"] == "fp32"
    with pytest.raises(SystemExit):
        cli.main(["bench-policies", "--drafter", "nonsense", "--out", str(tmp_path)])
