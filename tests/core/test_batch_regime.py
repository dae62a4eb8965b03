"""The batch regime's analysis and benchmark rows: the cost model's γ and crossover on made-up
costs, and the smallest live measurement through `specdec bench-batch` (no timing is asserted)."""
import pandas as pd
import pytest

from specdec_core.analysis.batching import BatchCosts, Regime, measure_regime, monotone
from specdec_core.analysis.stats import measured
from specdec_core.request import GenerationRequest
from specdec_core.sampling_config import GREEDY
from specdec_core.tools import cli


def linear_costs(free_positions: int) -> BatchCosts:
    """A pass costs one unit up to `free_positions` positions (memory-bound), then grows linearly."""
    t = lambda n: max(1.0, n / free_positions)
    sizes, ks = (1, 2, 4, 8, 16, 32), range(1, 9)
    return BatchCosts({(b, k): t(b * k) for b in sizes for k in ks}, {b: 0.05 * t(b) for b in sizes})


def test_the_cost_model_shortens_gamma_and_crosses_over_as_passes_turn_compute_bound():
    costs = linear_costs(free_positions=8)
    gammas = [costs.best_gamma(0.8, b) for b in (1, 2, 4, 8, 16, 32)]
    assert gammas[0] == 7 and gammas == sorted(gammas, reverse=True)  # γ shrinks as the batch grows
    speedups = [costs.speedup(0.8, b, g) for b, g in zip((1, 2, 4, 8, 16, 32), gammas)]
    assert speedups[0] > 2 and speedups[-1] < 1  # speculation pays alone and stops paying at 32
    assert costs.v(8, 4) == 4.0  # v(B·(γ + 1)) over 32 positions, 8 of them free


def test_a_slow_moment_does_not_bend_the_cost_curve():
    fit = dict(monotone({1: 1.0, 2: 3.0, 4: 1.0, 8: 4.0}))  # the pass over 2 positions hit a busy moment
    assert fit == {1: 1.0, 2: 2.0, 4: 2.0, 8: 4.0}
    costs = BatchCosts({(1, 1): 1.0, (2, 1): 3.0, (1, 4): 1.0, (2, 4): 4.0}, {1: 0.1, 2: 0.1})
    assert costs.t(3) == 2.0 and costs.t(6) == 3.0 and costs.t(16) == 8.0  # interpolated, then extrapolated


def test_crossover_is_the_first_measured_batch_below_one():
    def row(b, speedup, predicted):
        m = measured([speedup])
        return type("Row", (), {"batch": b, "speedup": m, "plain": m, "predicted_speedup": predicted})()
    regime = Regime([row(1, 1.8, 2.0), row(4, 1.1, 0.9), row(16, 0.8, 0.7)], 0.8, linear_costs(8), 8, 1, GREEDY)
    assert regime.crossover == 16 and regime.predicted_crossover == 4 and regime.fixed_crossover is None


def test_measure_regime_runs_small(pair):
    regime = measure_regime(pair.target, pair.draft, pair.tokenizer, GenerationRequest(max_new_tokens=4, seed=0),
                            batch_sizes=(1, 2), repeats=1, cost_repeats=1, gammas=(1, 2))
    frame = regime.frame()
    assert isinstance(frame, pd.DataFrame) and list(frame["batch"]) == [1, 2]
    assert set(frame["gamma"]) <= {1, 2}
    assert regime.fixed_gamma == 4 and all(r.fixed_speedup.n == 1 for r in regime.rows)
    for r in regime.rows:  # speculation reads the prompt twice and ends a round before its first token
        assert r.ttft_plain.n == r.ttft_speculative.n == 1 and r.draft_prefill.median > 0


def test_bench_batch_writes_its_rows_and_crossover(tmp_path, capsys):
    code = cli.main(["bench-batch", "--sizes", "1,2", "--tokens", "4", "--reps", "1", "--out", str(tmp_path)])
    assert code == 0
    md = (tmp_path / "batch_bench.md").read_text()
    assert "| 1 |" in md and "| 2 |" in md and "Crossover (measured)" in md and "specdec bench-batch" in md
    assert "fixed γ = 4" in md and "speedup at γ=4" in md
    assert len(pd.read_csv(tmp_path / "batch_bench.csv")) == 2
    assert cli.main(["bench-batch", "--sizes", "0,100", "--out", str(tmp_path)]) == 2


def test_a_batch_size_reads_as_the_one_cost_type():
    """BatchCosts.at(B) is a costs.Costs whose speedup is the batch model's own."""
    from specdec_core import theory
    from specdec_core.costs import Costs

    costs = linear_costs(8)
    for batch in (1, 4, 16):
        here = costs.at(batch)
        assert isinstance(here, Costs) and here.target_s == costs.t(batch)
        for gamma in (1, 3, 7):
            assert theory.speedup(0.7, gamma, here.c, here.v) == pytest.approx(costs.speedup(0.7, batch, gamma))
