"""Where the Speedup Lives."""
from tests.app.helpers import chart, page


def test_speedup_lives_grid_from_real_traces():
    at = page("chapters/speedup_lives.py", max_new=16, temp=0, gamma=4)
    plain = chart(at, "sl_grid_plain")["data"]
    assert len(plain) == 1 and plain[0]["x"] == plain[0]["y"] == list(range(1, 17))  # the diagonal
    spec = chart(at, "sl_grid_spec")["data"]
    used = sum(len(t["x"]) for t in spec if not t["name"].startswith("computed"))
    assert used == 16  # one used distribution per token
    # The lossless-vs-lossy table is measured behind a button; once measured, this process keeps it.
    measured = at.button(key="sl_fidelity_run").label == "Measure again"
    assert bool(at.dataframe) == measured
    assert any("latency arbitrage" in m.value for m in at.success)
    at.radio(key="sl_drafter").set_value("n-gram lookup (no model)").run()
    assert not at.exception
