"""The weight read-rate benchmark runs on the bundled target and prints one row per kernel (its figures
are the machine's, never asserted)."""
import sys

from tests.scripts import load_script

bench = load_script("bench/weight_read_rate")


def test_layer_matrices_are_the_targets_32_products_in_pass_order(pair):
    layers = bench.layer_matrices(pair.target)
    assert len(layers) == 4 * pair.target.config.n_layer
    E = pair.target.config.n_embd
    assert [tuple(w.shape) for w, _ in layers[:4]] == [(E, 3 * E), (E, E), (E, 4 * E), (4 * E, E)]


def test_it_prints_every_kernel_with_a_rate(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["weight_read_rate.py", "--repeats", "2"])
    assert bench.main() == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "kernel" not in line]
    assert len(rows) == 6
    assert all("GB/s" in row for row in rows if "head" not in row)
    assert "| torch.addmm" in rows[0] and "MB |" in rows[4]
