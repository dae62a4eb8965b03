"""What a projector shows of each chapter before anyone clicks: a measuring script (not a test).

    .venv/bin/python scripts/bench/first_paint.py [--pages home,race] [--port 8765] [--screenshots DIR] [--json FILE]

Starts `streamlit run app.py` headless (tests/serve.py, as the browser tests do; with `--port` an
app already served there is measured instead), opens each chapter in headless Chromium at 1280×720 with
the sidebar open, waits until the script has run to the end, and prints per chapter:

- words: the words of prose visible at first paint in the main area: text that is rendered and visible
  (not inside a collapsed expander, a tab not selected, a popover), anywhere on the page (not only the
  first 720 px); charts' own text, generated tokens (chips), formulas and icon names left out;
- controls: visible buttons, sliders, selects, radios, checkboxes, toggles and inputs in the main area, and
  where the first of them starts (px from the top of the page: what a reader can touch first);
- charts: visible charts in the main area;
- height: the main area's height in px (how far a teacher scrolls);
- demo: where the chapter's main demo starts (px from the top of the page) and whether that is within the
  first 720 px. The demo is the element a chapter marks with `st.container(key="lesson-demo")` (CSS class
  `st-key-lesson-demo`), else the first chart, else the first primary button;
- load: seconds from opening the chapter to the end of its script run (the first is a fresh server's
  first visit when this script started the server).

tests/e2e/test_first_screen.py holds every chapter to its budget with the same measure (`measure`).
"""
import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from classroom.tools import serve  # noqa: E402
from ui.content import chapters  # noqa: E402

VIEWPORT = {"width": 1280, "height": 720}  # a classroom projector
SCRIPT_TIMEOUT_MS = 240_000  # a fresh server's first page loads the models and times passes
DEMO_MARK = "lesson-demo"  # st.container(key=DEMO_MARK) around a chapter's main demo

CONTROLS = ["stButton", "stDownloadButton", "stSlider", "stSelectSlider", "stSelectbox", "stMultiSelect", "stRadio",
            "stCheckbox", "stToggle", "stNumberInput", "stTextInput", "stTextArea", "stButtonGroup",
            "stSegmentedControl", "stPills", "stColorPicker", "stDateInput", "stTimeInput", "stFileUploader"]
CHARTS = ["stPlotlyChart", "stVegaLiteChart", "stArrowVegaLiteChart", "stPyplot", "stDeckGlJsonChart",
          "stGraphVizChart", "stImage"]

# Runs in the page at scroll 0. Visible = checkVisibility (closed <details>, hidden tab panels, display:none,
# visibility:hidden, opacity 0) and a box of non-zero size.
_MEASURE_JS = """([controls, charts, mark]) => {
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main) return null;
  const seen = el => el && el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})
                     && el.getBoundingClientRect().width > 0 && el.getBoundingClientRect().height > 0;
  const chartSel = charts.map(c => `[data-testid="${c}"]`).join(',');
  // not prose: charts' own text, generated tokens (chips), formulas (KaTeX draws one glyph per span)
  // nor icons: a material icon is a ligature, its name is text ("lightbulb")
  const skip = 'script,style,noscript,svg,title,.tok-run,.tok-diff,.katex,[data-testid*="Icon"],.material-symbols-rounded';
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  let words = 0; const parts = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(chartSel) || el.closest(skip)) continue;
    if (!seen(el)) continue;
    const w = n.textContent.split(/\\s+/).filter(t => /[\\p{L}\\p{N}]/u.test(t));
    words += w.length; if (w.length) parts.push(w.join(' '));
  }
  const count = ids => ids.reduce((k, id) => k + [...main.querySelectorAll(`[data-testid="${id}"]`)].filter(seen).length, 0);
  const tops = controls.flatMap(id => [...main.querySelectorAll(`[data-testid="${id}"]`)].filter(seen)
                                          .map(el => el.getBoundingClientRect().top));
  const block = main.querySelector('[data-testid="stMainBlockContainer"]') || main;
  let demo = null, how = null;
  for (const [sel, name] of [[`.st-key-${mark}`, 'marked'], [chartSel, 'first chart'],
                             ['[data-testid="stBaseButton-primary"]', 'first primary button']]) {
    const el = [...main.querySelectorAll(sel)].find(seen);
    if (el) { demo = el; how = name; break; }
  }
  const next = [...main.querySelectorAll('[data-testid="stPageLink"]')].filter(seen)
               .some(a => /^\\s*(arrow_forward)?\\s*Next:/.test(a.innerText));
  return {words, controls: count(controls), control_top: tops.length ? Math.round(Math.min(...tops)) : null,
          charts: count(charts.filter(c => c !== 'stImage')),
          height: Math.round(block.scrollHeight), demo_top: demo ? Math.round(demo.getBoundingClientRect().top) : null,
          demo_how: how, next_link: next, exceptions: main.querySelectorAll('[data-testid="stException"]').length,
          text: parts.join(' | ')};
}"""


def chapter_url(base: str, chapter) -> str:
    return base + "/" + ("" if chapter is chapters.CHAPTERS[0] else Path(chapter.path).stem)


def measure(page) -> dict:
    """The first-paint figures of the chapter open in `page` (scrolled to the top, script idle)."""
    page.evaluate("() => { window.scrollTo(0, 0); document.querySelectorAll('[data-testid=\"stMain\"], "
                  "[data-testid=\"stAppScrollToBottomContainer\"]').forEach(e => { e.scrollTop = 0; }); }")
    m = page.evaluate(_MEASURE_JS, [CONTROLS, CHARTS, DEMO_MARK])
    m["demo_above_fold"] = m["demo_top"] is not None and m["demo_top"] < VIEWPORT["height"]
    return m


_SNAPSHOT_JS = """() => { const m = document.querySelector('[data-testid="stMain"]');
  return m ? [m.innerText.length, m.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot').length,
              !!document.querySelector('[data-testid="stApp"][data-test-script-state="notRunning"]')].join() : ''; }"""


def settle(page, quiet_ms: int = 1500, step_ms: int = 250) -> None:
    """Wait until the script run has ended and the main area has stopped changing for `quiet_ms` (charts are
    drawn by a component loaded after the run ends; a page's fragments and links arrive a moment later)."""
    serve.wait_idle(page, SCRIPT_TIMEOUT_MS)
    last, still, waited = None, 0, 0
    while still < quiet_ms and waited < SCRIPT_TIMEOUT_MS:
        page.wait_for_timeout(step_ms)
        waited += step_ms
        now = page.evaluate(_SNAPSHOT_JS)
        still = still + step_ms if now == last and now.endswith("true") else 0
        last = now


def open_chapter(browser, base: str, chapter, screenshot: Path | None = None) -> dict:
    """Open `chapter` in a fresh 1280×720 context, wait for its script run to end, and measure it."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    try:
        start = time.monotonic()
        page.goto(chapter_url(base, chapter), wait_until="domcontentloaded")
        page.wait_for_selector('[data-testid="stMain"] [data-testid="stHeading"], [data-testid="stMain"] h1',
                               timeout=SCRIPT_TIMEOUT_MS)
        serve.wait_idle(page, SCRIPT_TIMEOUT_MS)
        load = time.monotonic() - start  # to the end of the first script run
        settle(page)
        m = measure(page)
        m["load_s"] = round(load, 1)
        if screenshot:
            page.screenshot(path=str(screenshot))
        return m
    finally:
        context.close()


def table(rows: dict) -> str:
    head = f"{'chapter':<20} {'words':>6} {'ctrls':>6} {'ctrl@':>6} {'charts':>6} {'height':>7} {'demo@':>6} {'fold':>5} " \
           f"{'next':>5} {'load s':>7}  demo is"
    lines = [head, "-" * len(head)]
    for name, m in rows.items():
        lines.append(f"{name:<20} {m['words']:>6} {m['controls']:>6} "
                     f"{m['control_top'] if m['control_top'] is not None else '-':>6} {m['charts']:>6} {m['height']:>7} "
                     f"{m['demo_top'] if m['demo_top'] is not None else '-':>6} "
                     f"{'yes' if m['demo_above_fold'] else 'NO':>5} {'yes' if m['next_link'] else 'no':>5} "
                     f"{m['load_s']:>7}  {m['demo_how']}")
    lines.append(f"{'total':<20} {sum(m['words'] for m in rows.values()):>6} "
                 f"{sum(m['controls'] for m in rows.values()):>6} {'':>6} {sum(m['charts'] for m in rows.values()):>6}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", help="comma-separated chapter file stems (default: every chapter)")
    ap.add_argument("--port", type=int, help="measure the app already served on this port instead of starting one")
    ap.add_argument("--screenshots", type=Path, help="save each chapter's first screen here (NN-stem.png)")
    ap.add_argument("--json", type=Path, help="also write the figures (and each page's visible text) here")
    ap.add_argument("--text", action="store_true", help="print each chapter's visible words too")
    args = ap.parse_args()
    wanted = [c for c in chapters.CHAPTERS
              if not args.pages or Path(c.path).stem in args.pages.split(",")]
    if args.screenshots:
        args.screenshots.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import sync_playwright

    def run(base: str) -> dict:
        rows = {}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=serve.CHROMIUM, args=serve.CHROMIUM_ARGS)
            try:
                for c in wanted:
                    stem = Path(c.path).stem
                    shot = args.screenshots / f"{chapters.CHAPTERS.index(c):02d}-{stem}.png" if args.screenshots else None
                    rows[stem] = open_chapter(browser, base, c, shot)
                    print(f"  {stem}: {rows[stem]['words']} words, {rows[stem]['load_s']} s", file=sys.stderr)
            finally:
                browser.close()
        return rows

    if args.port:
        rows = run(f"http://localhost:{args.port}")
    else:
        log = ROOT / "tmp" / "first_paint_server.log"
        log.parent.mkdir(exist_ok=True)
        with serve.Server(log) as server:
            rows = run(server.url)
    print(table(rows))
    if args.text:
        for name, m in rows.items():
            print(f"\n## {name}\n{m['text']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
