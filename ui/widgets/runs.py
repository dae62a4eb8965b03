"""A marker of finished-or-running script runs, for the browser tests and scripts that drive the app.

Each full run (from the frame) and each run of a fragment that calls `mark()` draws a hidden element
with this session's run number, one more than the last. A driver reads the number before an action
and waits until a larger one is drawn and the page is idle (ui.server.serve.wait_idle): the run its
action caused has then ended. Watching `data-test-script-state` for "running" is not enough: a
browser short of CPU can draw a run's start and end in one update, and a rerun may start seconds
after the click, so no time window is safe.
"""
import streamlit as st

CLASS = "specdec-run"  # <span class="specdec-run" data-run="N">, hidden by layout.STYLES
_KEY = "_specdec_runs"


def mark() -> int:
    """Count this run and draw its number; returns it."""
    n = st.session_state.get(_KEY, 0) + 1
    st.session_state[_KEY] = n
    st.html(f'<span class="{CLASS}" data-run="{n}"></span>')
    return n
