"""Small layout conventions every chapter follows, and the few style rules the theme cannot set."""
import re

import streamlit as st

RUN_MARKER = "specdec-run"  # <span class="specdec-run" data-run="N">, hidden by STYLES
_RUNS_KEY = "_specdec_runs"
TITLE = "Draft Fast, Verify Exact — speculative decoding, live"

# What .streamlit/config.toml cannot say (both themes; tests/e2e/test_browser.py checks the result):
# - st.caption fades its text with `opacity: 0.6`, which also fades the badges inside a caption
#   (the "from the paper" badge fell to 2.43:1). The caption keeps its muted look through a
#   translucent text colour instead, which its badges, having colours of their own, do not inherit.
# - A metric value that does not fit its column is cut with "…" (the race's "Elapsed" read "116…"
#   on a projector): its size follows the window (36 px at 1400 px and up, 27 px at 1024) and it
#   wraps rather than being cut.
# - A displayed formula is a scroll box (overflow-x: auto); KaTeX's rounding made some 2 px wider than
#   their box, so they scrolled, unreachable by keyboard (axe: scrollable-region-focusable). A little
#   room at the sides absorbs that without hiding a formula that is really too wide.
# - Streamlit's chart theme draws ticks and axis titles in grey #808495: 3.7:1 on white. They take the
#   page's text colour instead (slightly muted), which follows the theme, even a switch in mid-session.
# - A slider writes its value in the primary colour: the dark theme's red is 3.5:1 there, and a
#   lighter red would leave the white text of primary buttons under 4.5:1. The value takes the
#   text colour instead.
# - The run marker (run_marker) is for the test drivers: its element takes no room and no gap.
STYLES = """<style>
[data-testid="stCaptionContainer"] { opacity: 1; color: color-mix(in srgb, currentColor 75%, transparent); }
[data-testid="stMetricValue"] { font-size: clamp(1.5rem, 2.6vw, 2.25rem); }
[data-testid="stMetricValue"], [data-testid="stMetricValue"] * {
  white-space: normal !important; overflow: visible; text-overflow: clip; overflow-wrap: break-word; }
[data-testid="stSliderThumbValue"], [data-testid="stSliderThumbValue"] * { color: inherit !important; }
[data-testid="stMarkdownContainer"] .katex-display { padding-inline: 4px; }
.js-plotly-plot :is(.xtick, .ytick, .g-xtitle, .g-ytitle, .g-x2title, .g-y2title, .g-x3title, .g-y3title, .legendtext,
  .legendtitletext) text, .js-plotly-plot .legendtext {
  fill: color-mix(in srgb, currentColor 85%, transparent) !important; }
.js-plotly-plot .gtitle, .js-plotly-plot .annotation-text { fill: currentColor !important; }
[data-testid="stElementContainer"]:has(.specdec-run) { display: none; }
</style>"""


def apply_styles() -> None:
    """Add STYLES to the page (once per run, from the frame)."""
    st.html(STYLES)


# A chapter is a lesson (STYLE.md, "A page that teaches"): its idea in one sentence, the live demo that shows it
# on the first 1280×720 screen, one thing to try, then what an expert wants next folded beneath. The demo sits
# in a container with this key (CSS class st-key-lesson-demo): tests/e2e/test_first_screen.py and
# scripts/bench/first_paint.py find it there and check that it starts on the first screen.
DEMO_KEY = "lesson-demo"


def idea(sentence: str) -> None:
    """The chapter's one idea, in one sentence, right under its header."""
    st.markdown(f"**The idea:** {sentence}")


def demo():
    """The container of the chapter's main demo (use as `with layout.demo():`)."""
    return st.container(key=DEMO_KEY)


def try_this(text: str) -> None:
    """One thing to try against the running demo."""
    st.info(f"**Try this:** {text}", icon=":material/lightbulb:")


def deeper(label: str, key: str | None = None):
    """A folded "Go deeper" section (use as `with layout.deeper("…"):`). Its body runs even while closed: keep
    costly work in it behind a button or a toggle. Its key (by default from its label) keeps its identity across
    reruns, so a fold the reader opened stays open when a button inside it reruns the page."""
    return st.expander(f"Go deeper: {label}", key=key or "deeper_" + re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")[:60])


def intro(seeing: str, try_this: str) -> None:
    """The two sentences that say what the page shows, and one thing to try."""
    st.markdown(seeing)
    st.info(f"**Try this:** {try_this}", icon=":material/lightbulb:")


def paper_badge() -> str:
    """Marks a figure as the paper's, not this app's."""
    return ":gray-badge[from the paper]"


def measured_badge() -> str:
    """Marks a figure as measured live here."""
    return ":green-badge[measured here, live]"


def run_marker() -> int:
    """Count this script run (a full run, or a fragment's) and draw its number in a hidden element; returns it.

    The browser tests and scripts that drive the app (tests/serve.py, wait_idle) read the number before an action
    and wait until a larger one is drawn and the page is idle: the run their action caused has then ended.
    Watching `data-test-script-state` for "running" is not enough: a browser short of CPU can draw a run's start
    and end in one update, and a rerun may start seconds after the click, so no time window is safe."""
    n = st.session_state.get(_RUNS_KEY, 0) + 1
    st.session_state[_RUNS_KEY] = n
    st.html(f'<span class="{RUN_MARKER}" data-run="{n}"></span>')
    return n
