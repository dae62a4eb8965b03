"""Real-browser tests: `streamlit run app.py` on a free local port, driven by headless Chromium
(Debian's `chromium` through Playwright's `executable_path`; never Playwright's own download).

Every chapter, in the light and in the dark theme: open it, wait until the script is not running, check
that no exception is shown, use its main control once, wait again, check again, then check it for
accessibility (tests/e2e/accessibility.py: axe-core's WCAG A/AA rules, chart contrast and type, and in
the light theme nothing cut at projector sizes) and save a screenshot at 1280×720. Screenshots go to
$SPECDEC_SCREENSHOTS (default: tmp/screenshots/, git-ignored); scripts/refresh_screenshots.sh copies
them to docs/screenshots/ for the README.

Skipped when no Chromium is found (make test installs it first: scripts/ensure_chromium.sh).
"""
import os
import re
from contextlib import contextmanager
from pathlib import Path

import accessibility
import pytest

from tests import serve
from tests.serve import CHROMIUM
from ui.content import chapters
from ui.widgets import layout

ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("SPECDEC_SCREENSHOTS") or ROOT / "tmp" / "screenshots")
SCRIPT_TIMEOUT_MS = 240_000  # the first page of a fresh server loads the models and times passes
VIEWPORT = {"width": 1280, "height": 720}  # a classroom projector
THEMES = ("light", "dark")  # Streamlit follows the browser's colour scheme

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"no Chromium at {CHROMIUM} (run scripts/ensure_chromium.sh)")


@contextmanager
def streamlit_server(log: Path):
    """`streamlit run app.py` on a free port (`tests.serve.Server`); yields its URL once healthy."""
    try:
        with serve.Server(log) as server:
            yield server.url
    except serve.ServerDidNotStart as err:
        pytest.fail(str(err))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with streamlit_server(tmp_path_factory.mktemp("streamlit") / "server.log") as url:
        yield url




def wait_idle(page, after_action: bool = False) -> None:
    """Wait until the script has run to the end (after an action: first until it has started)."""
    serve.wait_idle(page, SCRIPT_TIMEOUT_MS, after_action)


def assert_no_exception(page, where: str) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, f"{where}: an exception is shown"
    assert page.get_by_text("This app has encountered an error").count() == 0, f"{where}: an error is shown"


def click(page, key: str) -> None:
    page.locator(f".st-key-{key} button").first.click()


def open_fold(page, label: str) -> None:
    """Open a chapter's folded "Go deeper" section by (part of) its label."""
    page.locator('[data-testid="stMain"] [data-testid="stExpander"] summary', has_text=label).first.click()


# Each chapter's main control, and what must be on the page once it has been used (the screenshot shows it).
def home(page):
    thumb = page.locator('.st-key-s_gamma input[type="range"]')
    thumb.focus()
    thumb.press("ArrowRight")
    page.wait_for_url(re.compile(r"[?&]gamma=5(&|$)"), timeout=SCRIPT_TIMEOUT_MS)  # the sidebar drives the URL
    return '[data-testid="stMetric"]'


def serial_tax(page):
    page.locator(".st-key-st_slow label").first.click()  # slow motion off
    wait_idle(page, after_action=True)
    click(page, "st_run")
    return ".st-key-st_cumulative"


def round_by_round(page):
    click(page, "rr_next")
    return '[data-testid="stMarkdownContainer"]:has-text("step 2 of")'


def alpha_dial(page):
    open_fold(page, "the live pair, measured")
    click(page, "ad_run")
    return ".st-key-ad_by_position"


def trees(page):
    open_fold(page, "does the tree pay")
    click(page, "tr_measure")
    return ".st-key-tr_cost"


def self_drafting(page):
    open_fold(page, "the four drafters measured")
    click(page, "sd_run")
    return ".st-key-sd_calibration"


def race(page):
    click(page, "race_run")
    return ".st-key-race_chart"


def identical_outputs(page):
    page.locator('[data-testid="stExpander"] summary:has-text("Sampling: the same distribution")').click()  # folded
    click(page, "id_sample")
    return ".st-key-id_hist"


def speedup_lives(page):
    option = page.locator('.st-key-sl_drafter [role="radiogroup"] label').nth(1)  # the second drafter
    label = option.inner_text().strip()
    option.click()
    return f'.st-key-sl_grid_spec:has-text("{label}")'


def impact(page):
    click(page, "im_run")
    return ".st-key-im_chart"


def quiz(page):
    """Answer the first question, whichever kind the seed put first: a choice, or a number."""
    # The question sits in the lesson's demo box; the radio above it chooses the bank (already chosen: no rerun).
    question = '[data-testid="stMain"] .st-key-lesson-demo'
    choices = page.locator(f'{question} [data-testid="stRadio"] [role="radiogroup"] label')
    number = f'{question} [data-testid="stNumberInput"] input'
    # wait until the question's answer box is drawn, whichever kind it is (counting does not wait)
    page.locator(f'{question} [data-testid="stRadio"] [role="radiogroup"] label, {number}').first.wait_for()
    if choices.count():
        choices.first.click()
    else:
        box = page.locator(number).first
        box.fill("2")
        box.press("Enter")
    wait_idle(page, after_action=True)
    click(page, "qz_check")
    return '[data-testid="stAlert"]:has-text("Right."), [data-testid="stAlert"]:has-text("Not quite.")'


def takeaways(page):  # nothing to press: its links are the result
    return '[data-testid="stPageLink"]:has-text("See it live")'


NO_ACTION = {"takeaways"}
ACTIONS = {f.__name__: f for f in (home, serial_tax, round_by_round, alpha_dial, race, trees, self_drafting,
                                   identical_outputs, speedup_lives, impact, takeaways, quiz)}


def test_every_chapter_has_an_action():
    assert sorted(ACTIONS) == sorted(Path(c.path).stem for c in chapters.CHAPTERS)


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("chapter", chapters.CHAPTERS, ids=lambda c: Path(c.path).stem)
def test_page_in_a_real_browser(server, browser, chapter, theme):
    name = Path(chapter.path).stem
    context = browser.new_context(viewport=VIEWPORT, color_scheme=theme)
    page = context.new_page()
    try:
        path = "" if chapter is chapters.CHAPTERS[0] else name
        page.goto(f"{server}/{path}", wait_until="domcontentloaded")
        page.wait_for_selector('[data-testid="stApp"]', timeout=60_000)
        page.wait_for_selector('[data-testid="stHeading"], h1, h2', timeout=SCRIPT_TIMEOUT_MS)
        wait_idle(page)
        assert_no_exception(page, f"{name} (opened)")
        heading = layout.TITLE if chapter is chapters.CHAPTERS[0] else chapter.title
        assert heading in page.locator('[data-testid="stMain"]').inner_text()

        shown = ACTIONS[name](page)
        if name not in NO_ACTION:  # a wait for the action's run would wait for a run that never comes
            wait_idle(page, after_action=True)
        result = page.locator(shown).first
        result.wait_for(state="visible", timeout=SCRIPT_TIMEOUT_MS)
        wait_idle(page)
        assert_no_exception(page, f"{name} (after its main control)")
        page.wait_for_timeout(500)  # let charts finish their transition

        problems = {"axe-core findings": accessibility.axe_findings(page),
                    "chart marks under 3:1": accessibility.low_contrast_chart_marks(page),
                    "chart text under 12 px": accessibility.small_chart_text(page),
                    "chart text under 4.5:1": accessibility.low_contrast_chart_text(page)}
        if theme == "light":  # sizes do not depend on the theme
            problems["cut at projector sizes"] = accessibility.cut_at_projector_sizes(page)
            page.set_viewport_size(VIEWPORT)
            SHOTS.mkdir(parents=True, exist_ok=True)
            result.scroll_into_view_if_needed()
            page.wait_for_timeout(500)
            page.screenshot(path=str(SHOTS / f"{chapters.CHAPTERS.index(chapter):02d}-{name}.png"))
        problems = {k: v for k, v in problems.items() if v}
        assert not problems, f"{name}, {theme} theme: " + "\n".join(
            f"{k}:\n  " + "\n  ".join(map(str, v)) for k, v in problems.items())
    finally:
        context.close()


# Called after each Tab: describes the element that now has focus, and judges the ones focused before
# whose widget focus has left: did each look different while it had focus (outline, ring, background,
# border or colour on it, its three nearest ancestors — a text field's border is its wrapper's — or
# its children)?
_FOCUS_STEP_JS = """() => {
  const look = n => { const s = getComputedStyle(n);
    return [s.outlineStyle, s.outlineWidth, s.outlineColor, s.boxShadow, s.backgroundColor, s.borderColor, s.color].join('|'); };
  const top = e => e.parentElement?.parentElement?.parentElement || e;
  const family = e => [e, e.parentElement, e.parentElement?.parentElement, top(e), ...e.querySelectorAll('*')]
    .filter(Boolean).slice(0, 16).map(look).join('#');
  const e = document.activeElement && document.activeElement !== document.body ? document.activeElement : null;
  const judged = [], pending = [];
  // An element is judged once focus has left its widget (a number field's +/- buttons are still inside it).
  for (const p of window.__focusPending || []) {
    if (!p.el.isConnected) continue;
    if (e && top(p.el).contains(e)) pending.push(p);
    else judged.push({...p.info, shown: family(p.el) !== p.look});
  }
  let current = null;
  if (e) {
    const key = e.closest('[class*="st-key-"]')?.className.match(/st-key-(\\S+)/)?.[1] || '';
    current = {key, tag: e.tagName, text: (e.innerText || e.getAttribute('aria-label') || e.value || '').trim().slice(0, 40)};
    pending.push({el: e, look: family(e), info: current});
  }
  window.__focusPending = pending;
  return {judged, current, pending: pending.length};
}"""


def test_round_by_round_by_keyboard_alone(server, browser):
    """Tab reaches every button of the step-through and each one shows focus; Enter works them."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    try:
        page.goto(f"{server}/round_by_round", wait_until="domcontentloaded")
        for key in ("rr_next", "rr_round"):  # both drawn: the step-through's buttons come in one fragment, not at once
            page.wait_for_selector(f".st-key-{key} button", timeout=SCRIPT_TIMEOUT_MS)
        wait_idle(page)
        controls = page.eval_on_selector_all('[data-testid="stMain"] [class*="st-key-rr_"] button',
                                             "bs => bs.map(b => b.closest('[class*=\"st-key-\"]').className.match(/st-key-(\\S+)/)[1])")
        assert {"rr_next", "rr_round"} <= set(controls)
        reached, unseen = {}, []
        for _ in range(120):
            page.keyboard.press("Tab")
            page.wait_for_timeout(300)  # widgets draw their focus state a render (and a transition) later
            step = page.evaluate(_FOCUS_STEP_JS)
            unseen += [j for j in step["judged"] if not j["shown"]]
            current = step["current"]
            if current and current["key"] in controls:
                reached.setdefault(current["key"], current)
            if set(controls) <= set(reached) and (current is None or current["key"] not in controls):
                break  # the last control has been left, so whether it showed focus is judged too
        assert set(reached) == set(controls), f"not reached by Tab: {set(controls) - set(reached)}"
        assert not unseen, f"focus not shown on: {unseen}"

        before = page.locator('[data-testid="stMarkdownContainer"]:has-text("step 1 of")').count()
        page.locator(".st-key-rr_next button").focus()
        page.keyboard.press("Enter")
        wait_idle(page, after_action=True)
        page.locator('[data-testid="stMarkdownContainer"]:has-text("step 2 of")').first.wait_for(timeout=60_000)
        assert before == 1
        page.locator(".st-key-rr_round button").focus()
        page.keyboard.press("Enter")  # finish the round: its table of finished rounds appears
        wait_idle(page, after_action=True)
        page.locator(".st-key-rr_csv").wait_for(timeout=60_000)
        assert_no_exception(page, "round_by_round by keyboard")
        assert accessibility.cut_at_projector_sizes(page) == []  # now with the table of finished rounds
    finally:
        context.close()
