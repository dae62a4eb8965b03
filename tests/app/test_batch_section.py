"""Impact's batch section: the control is bounded, the measurement runs behind its button and draws
its three figures (tokens/s with the cost model beside it, the speedup with the crossover line at 1,
the time to first token), and the next visitor sees the kept result without measuring."""
from tests.app.helpers import chart, page
from ui.sections import impact_batch


def test_batch_section_measures_and_shows_its_figures(monkeypatch):
    monkeypatch.setattr(impact_batch, "TOKENS", 4)  # the smallest live measurement
    monkeypatch.setattr(impact_batch, "REPEATS", 1)
    at = page("chapters/impact.py")
    slider = at.select_slider(key="bt_largest")
    assert list(slider.options) == [str(b) for b in impact_batch.LARGEST]
    # nothing is measured at the default largest batch (no test measures it): no figure before the button
    assert not [c for c in at.get("plotly_chart") if c.key and c.key.startswith("bt_")]
    slider.set_value(4).run()
    at.button(key="bt_run").click().run()
    assert not at.exception, at.exception
    tps, speedup, ttft = chart(at, "bt_tps"), chart(at, "bt_speedup"), chart(at, "bt_ttft")
    names = [t["name"] for t in tps["data"]]
    assert names == ["plain, measured", "plain, cost model", "speculative, measured", "speculative, cost model"]
    assert all(list(t["x"]) == [1, 2, 4] for t in tps["data"])
    assert [t["name"] for t in speedup["data"]] == ["measured, γ per batch size", "cost model", "measured, fixed γ = 4",
                                                    "cost model, fixed γ = 4"]
    assert any(s.get("y0") == 1 for s in speedup["layout"]["shapes"])  # the "no gain" line
    assert {t["name"] for t in ttft["data"]} >= {"plain", "speculative"}
    assert any("first token" in m.value for m in at.markdown)
    assert any(m.label == "Crossover (measured)" for m in at.metric)

    again = page("chapters/impact.py")  # another visitor: the kept result, no button press needed
    again.select_slider(key="bt_largest").set_value(4).run()
    assert chart(again, "bt_speedup")["data"]
