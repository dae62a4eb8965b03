"""The frame every page shares: page config, navigation, the settings sidebar (kept in step with the
URL), the model pair, and the warnings about settings that had to be changed.

app.py draws it and then runs the chapter. Every chapter also starts with `frame.ensure()`, because
Streamlit sometimes runs a page file without app.py: with a `pages/` folder next to the entry point,
its legacy multipage mode serves the first request of a fresh server process (and every run under
`AppTest.switch_page`) by executing the page directly. `ensure()` draws the frame in that case, and
`render()` reruns that first run of the process at once, so its widget ids are never the ones a
visitor's first click is sent to.
"""
import threading
from contextlib import contextmanager

import streamlit as st

from . import chapters, layout, models, operator, settings

_state = threading.local()  # one script run = one thread at a time
_navigation_ready = False  # whether this process has run st.navigation once (see render)


def render():
    """Draw the frame; return the page `st.navigation` selected."""
    st.set_page_config(page_title=layout.TITLE, page_icon=":material/bolt:", layout="wide")
    operator.configure_logging()
    threads = models.configure_torch()
    pages = [st.Page(c.path, title=c.title, icon=c.icon, default=(i == 0))
             for i, c in enumerate(chapters.CHAPTERS)]
    page = st.navigation(pages)
    global _navigation_ready
    if not _navigation_ready:
        # The first script run of a fresh process is the legacy pages/ mode's (see above): its widgets
        # get other ids than in every later run, so a visitor's first click would be lost. This first
        # st.navigation call switches the process over; rerunning at once serves the page from there.
        _navigation_ready = True
        st.rerun()
    st.sidebar.markdown(f"**{layout.TITLE}**")
    settings.init_from_url()
    current, pair, _ = settings.sidebar(models.get_pair)
    settings.sync_url(current)
    if pair is not None:
        st.sidebar.caption(f"target {pair.target_name} ({pair.target_params / 1e6:.1f}M params) · "
                           f"draft {pair.draft_name} ({pair.draft_params / 1e6:.1f}M) · {pair.device}, "
                           f"{threads} torch thread(s)")
    settings.show_warnings()
    return page


@contextmanager
def framed():
    """Marks the page run inside it as already framed."""
    _state.active = True
    try:
        yield
    finally:
        _state.active = False


def ensure() -> None:
    """Call first in every page: draws the frame if Streamlit ran this page without app.py."""
    if not getattr(_state, "active", False):
        render()
