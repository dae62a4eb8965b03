"""What was "Why Verification Is Free" now lives where the story needs it: the verify factor v(γ) in
The Serial Tax, the acceptance rule, its proof and the γ+1 distributions of one pass in A Round, the
cost model on The α Dial. Its old URL still works."""
from streamlit.testing.v1 import AppTest

from specdec_core import theory
from tests.app.helpers import APP, chart, metric, page
from ui.content import chapters


def test_the_old_url_lands_on_the_chapter_that_holds_its_content():
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("chapters/verification.py").run()
    assert not at.exception
    assert at.header[0].value == "A Round, Token by Token"
    assert chapters.MOVED["chapters/verification.py"] == "chapters/round_by_round.py"


def test_the_cost_model_sliders_on_the_alpha_dial_drive_the_formulas():
    at = page("chapters/alpha_dial.py", gamma=3, max_new=8)
    at.slider(key="ad_gamma").set_value(4).run()
    at.slider(key="ad_c").set_value(0.0).run()
    at.slider(key="ad_alpha").set_value(0.8).run()
    assert metric(at, "Expected tokens per pass at γ = 4") == f"{theory.expected_tokens(0.8, 4):.2f}"
    assert metric(at, "Speedup at γ = 4") == f"{theory.walltime_improvement(0.8, 4, 0.0):.2f}×"
    paper, here = chart(at, "ad_speedup_c")["data"][:2]
    assert paper["y"][0] == theory.expected_tokens(0.8, 4)  # c = 0, v = 1
    at.button(key="ad_use_c").click().run()
    assert at.slider(key="ad_c").value > 0


def test_a_round_shows_gamma_plus_one_distributions_from_one_pass_and_the_rule():
    at = page("chapters/round_by_round.py", gamma=3, max_new=8)
    at.toggle(key="rr_dists").set_value(True).run()  # folded under "Go deeper": runs only when turned on
    panels = [t for t in chart(at, "vf_dists")["data"] if t.get("type") == "bar"]
    assert len(panels) == 4  # γ + 1 distributions
    assert all(0 <= x <= 1 for t in panels for x in t["x"])
    assert any(r"\max(0,\ p - q)" in x.value for x in at.latex)


def test_the_serial_tax_shows_the_measured_verify_factor():
    at = page("chapters/serial_tax.py", max_new=8)
    at.toggle(key="st_vf").set_value(True).run()  # folded under "Go deeper": drawn only when turned on
    measured, assumed, serial = chart(at, "vf_v")["data"]
    assert assumed["y"][0] == 1 and serial["y"][0] == 2 and all(v > 0 for v in measured["y"])
