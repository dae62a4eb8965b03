"""Accessibility checks on a page open in Playwright, used by test_browser.py on every chapter.

- axe-core (bundled by the pinned `axe-playwright-python`) with the WCAG 2.0/2.1 A and AA rules, plus
  the heading-order best practice; serious and critical findings fail, except the named ones that
  come from Streamlit itself (STREAMLIT_OWN, also listed in the README's accessibility note).
- What axe does not look at: the colours of chart lines, markers, bars and rules against the page
  (3:1, WCAG 1.4.11), the contrast of chart ticks, titles and legends (4.5:1: they are text), and their
  size (12 px at least, for a projector).
- At projector sizes: no metric value cut short, no table with columns out of sight unless it says it
  scrolls (ui/widgets/tables.py), no chart wider
  than its place, no page wider than the window.
"""
from axe_playwright_python.sync_playwright import Axe

from ui.widgets import palette, tables

WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
FAILING_IMPACTS = ("serious", "critical")
ALWAYS_CHECKED = ("heading-order",)  # a best practice, but a page of headings is how a class finds its way
PROJECTOR_SIZES = ({"width": 1024, "height": 768}, {"width": 1280, "height": 720})
MIN_GRAPHIC_CONTRAST = 3.0
MIN_CHART_FONT_PX = 12.0

# (axe rule id, CSS selector axe reports) -> why it cannot be fixed from the app. Kept exact, so that
# a new finding, or one of these on another element, still fails.
STREAMLIT_OWN: dict[tuple[str, str], str] = {}

_axe = Axe()


def axe_findings(page) -> list[tuple[str, str, str, str]]:
    """(rule id, impact, selector, summary) of every axe finding that counts: serious or critical WCAG
    A/AA violations, and any heading-order violation, minus STREAMLIT_OWN."""
    options = {"runOnly": {"type": "tag", "values": WCAG_AA + ["best-practice"]}, "resultTypes": ["violations"]}
    results = _axe.run(page, options=options).response
    found = []
    for v in results["violations"]:
        wcag = any(t in WCAG_AA for t in v["tags"])
        if not ((wcag and v["impact"] in FAILING_IMPACTS) or v["id"] in ALWAYS_CHECKED):
            continue
        for node in v["nodes"]:
            selector = " ".join(str(t) for t in node["target"])
            if (v["id"], selector) in STREAMLIT_OWN:
                continue
            found.append((v["id"], node.get("impact") or v["impact"], selector,
                          (node.get("failureSummary") or v["help"]).replace("\n", " ")[:300]))
    return found


# Every coloured mark plotly drew: lines, markers, bars, and shapes (add_hline/add_vline), with the
# opacity it was drawn at, and the page background behind the chart.
_CHART_MARKS_JS = """() => {
  const out = [];
  const rgb = s => (s && (s.startsWith('rgb') || s.startsWith('color('))) ? s : null;
  for (const [i, plot] of [...document.querySelectorAll('.js-plotly-plot')].entries()) {
    const marks = [
      ['line', plot.querySelectorAll('.scatterlayer path.js-line'), 'stroke'],
      ['marker', plot.querySelectorAll('.scatterlayer .points path'), 'fill'],
      ['bar', plot.querySelectorAll('.barlayer .point path'), 'fill'],
      ['rule', plot.querySelectorAll('.shapelayer path'), 'stroke'],
    ];
    for (const [kind, nodes, prop] of marks) {
      for (const n of nodes) {
        const s = getComputedStyle(n);
        const colour = rgb(s[prop]);
        if (!colour || s[prop + 'Opacity'] === '0' || s.display === 'none') continue;
        let opacity = parseFloat(s[prop + 'Opacity'] || '1');
        for (let e = n; e && e !== plot; e = e.parentElement) opacity *= parseFloat(getComputedStyle(e).opacity || '1');
        if (opacity === 0) continue;
        out.push({chart: i, kind, colour, opacity});
      }
    }
  }
  const bg = getComputedStyle(document.querySelector('[data-testid="stApp"]')).backgroundColor;
  return {background: bg, marks: out};
}"""

_CHART_FONTS_JS = """() => [...document.querySelectorAll(
    '.js-plotly-plot .xtick text, .js-plotly-plot .ytick text, .js-plotly-plot .legendtext, .js-plotly-plot .g-xtitle text, .js-plotly-plot .g-ytitle text, .js-plotly-plot .gtitle')]
  .filter(t => t.textContent.trim())
  .map(t => { const s = getComputedStyle(t);
    return {text: t.textContent.trim().slice(0, 30), px: parseFloat(s.fontSize), fill: s.fill,
            opacity: parseFloat(s.fillOpacity || '1') * parseFloat(s.opacity || '1')}; })"""

# Anything cut short at the current window size.
_CUT_JS = """(HINT) => {
  const cut = [];
  const wider = e => e.scrollWidth > e.clientWidth + 1;
  for (const m of document.querySelectorAll('[data-testid="stMetricValue"], [data-testid="stMetricValue"] *'))
    if (wider(m)) cut.push('metric value cut: ' + m.textContent.trim().slice(0, 40));
  for (const t of document.querySelectorAll('[data-testid="stDataFrame"]')) {
    const scroller = t.querySelector('.dvn-scroller');
    const next = t.closest('[data-testid="stElementContainer"]')?.nextElementSibling;
    const hinted = next && next.innerText.includes(HINT);
    if (scroller && wider(scroller) && !hinted)
      cut.push('table hides columns without a scroll hint: ' + [...t.querySelectorAll('th, [role=columnheader]')].map(h => h.textContent).slice(0, 4).join(' | '));
  }
  for (const c of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
    if (!c.checkVisibility()) continue;  // inside a closed "Go deeper" fold: not on the screen, nothing to cut
    const svg = c.querySelector('.main-svg');
    if (svg && svg.getBoundingClientRect().right > c.getBoundingClientRect().right + 1)
      cut.push('chart wider than its place: ' + (c.closest('[class*="st-key-"]')?.className.match(/st-key-\\S+/)?.[0] || '?'));
  }
  if (document.documentElement.scrollWidth > window.innerWidth + 1) cut.push('page wider than the window');
  return cut;
}"""


_BACKGROUND_JS = """() => getComputedStyle(document.querySelector('[data-testid="stApp"]')).backgroundColor"""


def _colour(css: str) -> tuple[str, float]:
    """A computed CSS colour as (#RRGGBB, alpha): rgb()/rgba() or color(srgb r g b / a)."""
    inner = css[css.index("(") + 1:css.rindex(")")]
    if css.startswith("color(srgb"):
        channels, _, alpha = inner.removeprefix("srgb").partition("/")
        r, g, b = (round(float(x) * 255) for x in channels.split())
        return f"#{r:02X}{g:02X}{b:02X}", float(alpha or 1)
    if css.startswith("rgb"):
        parts = [float(x) for x in inner.replace("/", ",").replace(" ", ",").split(",") if x]
        return "#" + "".join(f"{round(x):02X}" for x in parts[:3]), parts[3] if len(parts) > 3 else 1.0
    raise ValueError(f"css must be an rgb() or color(srgb) colour, got {css!r}")


def _hex(css: str) -> str:
    return _colour(css)[0]


def low_contrast_chart_marks(page) -> list[str]:
    """Chart marks under 3:1 against the page background, as 'chart N kind #colour ratio'."""
    got = page.evaluate(_CHART_MARKS_JS)
    bg = _hex(got["background"])
    bad = set()
    for m in got["marks"]:
        colour, alpha = _colour(m["colour"])
        if alpha * m["opacity"] == 0:  # not drawn (e.g. a transparent outline)
            continue
        seen = palette.blend(colour, bg, min(1.0, alpha * m["opacity"]))
        ratio = palette.contrast(seen, bg)
        if ratio < MIN_GRAPHIC_CONTRAST:
            bad.add(f"chart {m['chart']} {m['kind']} {seen} {ratio:.2f}:1 on {bg}")
    return sorted(bad)


def small_chart_text(page) -> list[str]:
    """Chart ticks and legend entries drawn smaller than MIN_CHART_FONT_PX."""
    return sorted({f"{t['text']!r} {t['px']:g}px" for t in page.evaluate(_CHART_FONTS_JS)
                   if t["px"] < MIN_CHART_FONT_PX})


def low_contrast_chart_text(page) -> list[str]:
    """Chart ticks, legends and titles under 4.5:1 against the page (axe does not read chart text)."""
    bg = _hex(page.evaluate(_BACKGROUND_JS))
    bad = set()
    for t in page.evaluate(_CHART_FONTS_JS):
        colour, alpha = _colour(t["fill"])
        seen = palette.blend(colour, bg, min(1.0, alpha * t["opacity"]))
        if palette.contrast(seen, bg) < 4.5:
            bad.add(f"{t['text']!r} {seen} {palette.contrast(seen, bg):.2f}:1 on {bg}")
    return sorted(bad)


def cut_at_projector_sizes(page) -> list[str]:
    """What is cut short at 1024×768 and at 1280×720 (the window is resized, then left at the last size)."""
    found = []
    for size in PROJECTOR_SIZES:
        page.set_viewport_size(size)
        page.wait_for_timeout(800)  # let Streamlit and plotly lay out again
        found += [f"{size['width']}×{size['height']}: {c}" for c in page.evaluate(_CUT_JS, tables.SCROLL_HINT[:20])]
    return found
