"""The benchmark's quick mode on the bundled pair, at the smallest settings: its outputs have the
promised structure, and every greedy row of ours reproduces plain greedy decoding token for token.
No timing is asserted here: the performance targets are printed by the benchmark itself."""
import csv
import json

import pytest

from specdec_core import bench, cli
from specdec_core.pairs import PairUnavailable, load_pair


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
    assert "### Targets (issue 6)" in md and "| config | ms |" in md and "python -m specdec_core bench" in md
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
            assert 0 <= float(r["alpha"]) <= 1 and float(r["predicted"]) > 0
    runs = list(csv.DictReader((out / "runs.csv").open()))
    assert all(int(r["n_tokens"]) == 6 for r in runs)  # every method makes exactly the asked length


def test_our_greedy_rows_equal_plain_greedy(quick_run):
    _, out = quick_run
    rows = list(csv.DictReader((out / "bench.csv").open()))
    ours = [r for r in rows if r["decoding"] == "greedy" and r["method"] in ("plain", "spec")]
    assert ours and all(r["matches_greedy"] == "True" for r in ours)


def test_gamma_list_parsing():
    assert bench._parse_gammas("1-3,6") == [1, 2, 3, 6]
    with pytest.raises(ValueError):
        bench._parse_gammas("0-2")
