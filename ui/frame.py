"""The frame every page shares: page config, navigation, the settings sidebar (kept in step with the
URL), the model pair, and the warnings about settings that had to be changed.

app.py draws it, runs the chapter that `st.navigation` selected, and ends it with the link to the next. The chapter files live in
`chapters/`, not `pages/`: a folder named `pages/` beside the entry point switches Streamlit into its
legacy multipage mode for the first run of every process, which served that run without this frame.
"""
import streamlit as st

from ui.content import chapters
from ui.server import models, operator
from ui.state import sidebar
from ui.widgets import layout


def render():
    """Draw the frame; return the page `st.navigation` selected."""
    st.set_page_config(page_title=layout.TITLE, page_icon=":material/bolt:", layout="wide")
    layout.apply_styles()
    operator.configure_logging()
    threads = models.configure_torch()
    pages = [st.Page(c.path, title=c.title, icon=c.icon, default=(i == 0))
             for i, c in enumerate(chapters.CHAPTERS)]
    cm = chapters.CLASS_MODE
    pages.append(st.Page(cm.path, title=cm.title, icon=cm.icon, url_path=chapters.CLASS_URL))
    # An old chapter's URL lands on the chapter that now holds its content: a hidden page at the old URL
    # whose file runs its new home's script (chapters.run_moved), under its new home's title.
    titles = {c.path: c.title for c in chapters.CHAPTERS}
    pages += [st.Page(old, title=titles[new], visibility="hidden") for old, new in chapters.MOVED.items()]
    # Every chapter listed, always: with class mode there are thirteen, and a collapsed list's "View 3 more"
    # button would hide the last chapters (and shows no keyboard focus ring).
    page = st.navigation(pages, expanded=True)
    keep_shared_controls()
    st.sidebar.markdown(f"**{layout.TITLE}**")
    with st.sidebar:
        layout.run_marker()
    rules = operator.rules()
    sidebar.init_from_url(rules)
    current, pair, _ = sidebar.sidebar(models.get_pair, rules)
    if page.url_path != chapters.CLASS_URL:  # class mode's URL holds its own keys (join, code, view, student)
        sidebar.sync_url(current)
    if pair is not None:
        st.sidebar.caption(f"target {pair.target_name} ({pair.target_params / 1e6:.1f}M params) · "
                           f"draft {pair.draft_name} ({pair.draft_params / 1e6:.1f}M) · {pair.device}, "
                           f"{threads} torch thread(s)")
    sidebar.show_warnings()
    return page


# The one set of α / γ / c controls lives on The α Dial; other chapters read these keys. Streamlit drops a
# widget's state on a page that does not draw the widget, so the frame keeps them alive.
SHARED_CONTROLS = ("ad_alpha", "ad_gamma", "ad_c", "ad_hw")


def keep_shared_controls() -> None:
    for key in SHARED_CONTROLS:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def next_chapter_link(page) -> None:
    """End the chapter `page` with a link to the next one in CHAPTERS. The last one (the quiz) ends the
    story with its further reading instead of a loop back to the start."""
    titles = [c.title for c in chapters.CHAPTERS]
    if page.title not in titles or titles.index(page.title) + 1 == len(chapters.CHAPTERS):
        return
    following = chapters.CHAPTERS[titles.index(page.title) + 1]
    st.divider()
    st.page_link(following.path, label=f"Next: {following.title}", icon=":material/arrow_forward:")
