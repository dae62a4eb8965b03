"""Why Verification Is Free."""
from specdec_core import theory
from tests.app.helpers import chart, metric, page


def test_verification_sliders_drive_the_formulas():
    at = page("chapters/verification.py", gamma=3, max_new=8)
    at.slider(key="vf_gamma").set_value(4).run()
    at.slider(key="vf_c").set_value(0.0).run()
    at.slider(key="vf_alpha").set_value(0.8).run()
    assert metric(at, "Expected tokens per target pass") == f"{theory.expected_tokens(0.8, 4):.2f}"
    assert metric(at, "Speedup, paper's model (v = 1)") == f"{theory.walltime_improvement(0.8, 4, 0.0):.2f}×"
    at.slider(key="vf_alpha").set_value(0.5).run()
    assert metric(at, "Speedup, paper's model (v = 1)") == f"{theory.walltime_improvement(0.5, 4, 0.0):.2f}×"
    v = float(metric(at, "v(γ) measured here"))  # shown to 2 decimals
    here = float(metric(at, "Speedup with this machine's v(γ)").rstrip("×"))
    expected = theory.expected_tokens(0.5, 4)
    assert v > 0 and abs(here - expected / v) <= 0.006 + expected * 0.005 / v**2


def test_verification_shows_gamma_plus_one_distributions_from_one_pass():
    at = page("chapters/verification.py", gamma=3, max_new=8)
    panels = [t for t in chart(at, "vf_dists")["data"] if t.get("type") == "bar"]
    assert len(panels) == 4  # γ + 1 distributions
    assert all(0 <= x <= 1 for t in panels for x in t["x"])
    assert any("one" in m.value.lower() and "pass" in m.value for m in at.markdown)
    assert any(r"\max(0,\ p - q)" in x.value for x in at.latex)
