"""The llama.cpp peer script's pure helpers (parsing its tools' output, the table); the script itself
builds llama.cpp and runs for minutes, so it is never part of the test suite."""
import pytest

from tests.scripts import load_script

peer = load_script("bench/llama_cpp_peer")

COMPLETION = """llama_perf_sampler_print:    sampling time =       3.10 ms /    80 runs   (    0.04 ms per token)
llama_perf_context_print:        load time =      40.00 ms
llama_perf_context_print: prompt eval time =      21.50 ms /    17 tokens (    1.26 ms per token,   790.70 tokens per second)
llama_perf_context_print:        eval time =     180.25 ms /    63 runs   (    2.86 ms per token,   349.51 tokens per second)
"""
SPECULATIVE = """encoded   17 tokens in    0.030 seconds, speed:  566.667 t/s
decoded   66 tokens in    0.150 seconds, speed:  440.000 t/s

n_draft   = 5
n_predict = 66
n_drafted = 70
n_accept  = 51
accept    = 72.857%
"""


def test_completion_perf_lines_are_read():
    got = peer.parse_completion(COMPLETION)
    assert got == {"prompt_ms": 21.5, "eval_ms": 180.25, "eval_runs": 63, "ms": 201.75}
    with pytest.raises(ValueError):
        peer.parse_completion("no perf here")


def test_speculative_summary_is_read_and_scaled_to_the_asked_tokens():
    got = peer.parse_speculative(SPECULATIVE)
    assert got == {"enc_ms": 30.0, "dec_ms": 150.0, "n_predict": 66, "n_drafted": 70, "n_accept": 51}
    assert peer.speculative_ms(got, 66) == 180.0
    assert peer.speculative_ms(got, 33) == 105.0
    with pytest.raises(ValueError):
        peer.parse_speculative(COMPLETION)


def test_summary_is_the_median_of_prompt_medians_with_its_range():
    times = {"a": {"p1": [10.0, 30.0, 20.0], "p2": [40.0, 50.0, 60.0], "p3": [1.0, 2.0, 3.0]}}
    assert peer.summarize(times) == {"a": (20.0, 2.0, 50.0)}


def test_table_gives_speedups_over_each_engines_own_plain():
    summary = {"x plain": (100.0, 90.0, 110.0), "x K=5": (50.0, 45.0, 60.0)}
    md = peer.table(summary, [("x, plain", "x plain", None), ("x, K = 5", "x K=5", "x plain"),
                              ("y, plain", "y plain", None)], 64)
    lines = md.splitlines()
    assert len(lines) == 4  # header, rule, two rows: y has no figures and no row
    assert lines[2] == "| x, plain | 100 (90–110) | 1 (baseline) |"
    assert lines[3] == "| x, K = 5 | 50 (45–60) | 2.00× |"


def test_the_saved_record_holds_the_table_rows_and_where_they_were_measured():
    summary = {"x plain": (100.0, 90.0, 110.0), "x K=5": (50.0, 45.0, 60.0)}
    rows = [("x, plain", "x plain", None), ("x, K = 5", "x K=5", "x plain"), ("y, plain", "y plain", None)]
    saved = peer.record(summary, rows, 64, 8, 5, {"x plain": 40, "x K=5": 39}, 40)
    assert [r["contestant"] for r in saved["rows"]] == ["x, plain", "x, K = 5"]
    assert saved["rows"][1]["speedup_over_own_plain"] == 2.0 and saved["rows"][0]["speedup_over_own_plain"] == 1.0
    assert saved["rows"][1]["texts_equal_to_ours"] == "39 of 40"
    assert saved["tokens"] == 64 and saved["cpu"] and saved["when"]
