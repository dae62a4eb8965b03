"""The frame (app.py + ui/): navigation, the settings sidebar and its URL round trip, friendly
messages for bad input, and HTML escaping. Runs on the bundled pair with few tokens."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ui.content import chapters
from ui.state import settings
from ui.state.settings import Settings
from ui.widgets import chips

APP = str(Path(__file__).resolve().parents[2] / "app.py")
EXPECTED_ORDER = ["Home", "The Serial Tax", "A Round, Token by Token", "The α Dial"]


def app(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params = {k: str(v) for k, v in query.items()}
    return at.run()


def texts(at, kind: str) -> list[str]:
    return [e.value for e in getattr(at, kind)]


# --- the frame ------------------------------------------------------------------------------------

def test_frame_renders_home_with_title_and_sidebar():
    at = app()
    assert not at.exception
    assert any("Draft Fast, Verify Exact" in m for m in texts(at, "markdown"))
    assert at.header[0].value == "Draft Fast, Verify Exact — speculative decoding, live"
    keys = {w.key for w in at.sidebar.get("slider")} | {w.key for w in at.sidebar.get("number_input")}
    assert {"s_gamma", "s_temperature", "s_top_k", "s_top_p", "s_seed", "s_max_new"} <= keys
    assert at.selectbox(key="s_pair").value == "shakespeare"


def test_chapter_list_order_and_files():
    titles = [c.title for c in chapters.CHAPTERS]
    assert titles[:len(EXPECTED_ORDER)] == EXPECTED_ORDER
    root = Path(APP).parent
    for c in chapters.CHAPTERS:
        assert (root / c.path).is_file(), c.path
        assert "frame.ensure()" not in (root / c.path).read_text(), f"{c.path}: chapters need no workaround"
    # A folder named pages/ beside app.py would put Streamlit's legacy multipage mode back in charge of
    # every process's first run.
    assert not (root / "pages").exists()


def test_home_links_every_chapter_in_order():
    at = app()
    labels = [link.proto.label for link in at.get("page_link")]
    found = [next((i for i, label in enumerate(labels) if c.title in label), None) for c in chapters.CHAPTERS[1:]]
    assert None not in found and found == sorted(found)


@pytest.mark.parametrize("chapter", chapters.CHAPTERS, ids=lambda c: c.path)
def test_every_page_keeps_the_frame(chapter):
    """A page reached by switch_page still has the shared sidebar (Streamlit may run it without app.py)."""
    at = app(max_new=8)
    at.switch_page(chapter.path).run()
    assert not at.exception
    assert at.slider(key="s_gamma").value == settings.DEFAULTS.gamma
    assert at.session_state["settings"].max_new_tokens == 8
    # …and ends with the way on: a link to the next chapter of the one list; the last one loops back nowhere.
    i = chapters.CHAPTERS.index(chapter)
    labels = [link.proto.label for link in at.get("page_link")]
    assert not any(label.startswith("Back to the start") for label in labels)
    if i + 1 < len(chapters.CHAPTERS):
        assert labels[-1] == f"Next: {chapters.CHAPTERS[i + 1].title}"


# --- settings <-> session state <-> URL ------------------------------------------------------------

def test_query_params_round_trip():
    query = {"pair": "shakespeare", "prompt": "HAMLET:\nWho's there?", "gamma": 7, "temp": 0.5, "top_k": 40,
             "top_p": 0.9, "seed": 1234, "max_new": 17}
    at = app(**query)
    assert not at.exception and not at.warning
    s = at.session_state["settings"]
    assert (s.prompt, s.gamma, s.temperature, s.top_k, s.top_p, s.seed, s.max_new_tokens) == (
        "HAMLET:\nWho's there?", 7, 0.5, 40, 0.9, 1234, 17)
    assert at.slider(key="s_gamma").value == 7
    assert at.text_area(key="s_prompt").value == "HAMLET:\nWho's there?"
    assert at.query_params == {k: str(v) for k, v in query.items()}

    # The URL follows the widgets, so a copied link reproduces the demo.
    at.slider(key="s_gamma").set_value(9).run()
    at.number_input(key="s_seed").set_value(42).run()
    assert at.query_params["gamma"] == "9" and at.query_params["seed"] == "42"
    again = app(**at.query_params)
    assert again.session_state["settings"] == at.session_state["settings"]


def test_sampling_config_from_settings():
    assert Settings(temperature=0).sampling.greedy
    cfg = Settings(temperature=0.7, top_k=5, top_p=0.5).sampling
    assert (cfg.temperature, cfg.top_k, cfg.top_p) == (0.7, 5, 0.5)
    cfg = Settings(top_k=0, top_p=1.0).sampling
    assert cfg.top_k is None and cfg.top_p is None


# --- escaping ----------------------------------------------------------------------------------------

SCRIPT = "<script>alert('x')</script> & <b>bold</b>"  # a page's prompt: tests/app/test_hostile_inputs.py


def test_chip_escapes_text_and_tooltip():
    html = chips.chip(SCRIPT, "accepted", tip='"><img src=x onerror=alert(1)>')
    assert "<script>" not in html and "<b>" not in html and "<img" not in html
    assert "&lt;script&gt;" in html and "&amp;" in html
    assert chips.chip("\n", "bonus").endswith("<br>") and "↵" in chips.chip("\n", "bonus")
