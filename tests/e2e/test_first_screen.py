"""Every chapter's first screen, held to the lesson-first budget in a real browser (headless Chromium at a
projector's 1280×720, the sidebar open), measured as scripts/bench/first_paint.py measures it:

- at most WORD_BUDGET words of prose visible at first paint (nothing opened; charts, generated tokens,
  formulas and icon names not counted), and at most APP_BUDGET across the app;
- the chapter's main demo starts on the first screen: the element marked `st.container(key="lesson-demo")`
  (else the first chart, else the first primary button) begins at least DEMO_SHOWN_PX above the fold;
- no exception, and a link to the next chapter (every chapter but the last).

Skipped when no Chromium is found, like tests/e2e/test_browser.py.
"""
import sys
from pathlib import Path

import pytest

from tests import serve
from tests.serve import CHROMIUM, CHROMIUM_ARGS
from ui.content import chapters

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "bench"))
import first_paint  # noqa: E402

WORD_BUDGET = 250  # the explainer's pace: one idea, one demo, 100–200 words around it
OVER_BUDGET = {}  # stem -> its own budget, with the reason in a comment (none needs one today)
APP_BUDGET = 3500
DEMO_SHOWN_PX = 120  # at least this much of the demo shows on the first screen

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason=f"no Chromium at {CHROMIUM} (run scripts/ensure_chromium.sh)")]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """Every chapter opened once on one fresh server, in order: stem -> first_paint.measure's figures."""
    from playwright.sync_api import sync_playwright
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    try:
        with serve.Server(log) as server, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                yield {Path(c.path).stem: first_paint.open_chapter(browser, server.url, c) for c in chapters.CHAPTERS}
            finally:
                browser.close()
    except serve.ServerDidNotStart as err:
        pytest.fail(str(err))


@pytest.mark.parametrize("chapter", chapters.CHAPTERS, ids=lambda c: Path(c.path).stem)
def test_first_screen_leads_with_one_idea_and_its_demo(measured, chapter):
    name = Path(chapter.path).stem
    m = measured[name]
    assert m["exceptions"] == 0, f"{name}: an exception is shown"
    budget = OVER_BUDGET.get(name, WORD_BUDGET)
    assert m["words"] <= budget, f"{name}: {m['words']} words visible at first paint (budget {budget}):\n{m['text']}"
    assert m["demo_top"] is not None, f"{name}: no demo (mark it with st.container(key='{first_paint.DEMO_MARK}'))"
    fold = first_paint.VIEWPORT["height"] - DEMO_SHOWN_PX
    assert m["demo_top"] <= fold, f"{name}: the demo ({m['demo_how']}) starts at {m['demo_top']} px, below {fold} px"
    if chapter is not chapters.CHAPTERS[-1]:
        assert m["next_link"], f"{name}: no visible link to the next chapter"


def test_the_whole_app_keeps_to_its_word_budget(measured):
    words = {name: m["words"] for name, m in measured.items()}
    assert sum(words.values()) <= APP_BUDGET, f"{sum(words.values())} words at first paint across the app: {words}"
