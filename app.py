"""SpecDec Lab: speculative decoding (Leviathan, Kalman & Matias 2022; Chen et al. 2023), taught by
running real GPT-2 models. This entry point draws the frame every page shares (page config,
navigation, the settings sidebar kept in step with the URL, the model pair), then the chapter.

Run:  .venv/bin/python -m streamlit run app.py
Add a chapter: its file in chapters/ and one line in ui/content/chapters.py CHAPTERS (navigation, Home's
links and each chapter's "next" link all read it).

The file has two lives. Streamlit runs it as each session's script (as `__main__`): the frame and the
chapter. `streamlit run app.py` first imports it as the module `app` and, finding `app = st.App(...)`,
serves that: the same script, plus class mode's phone page (classroom/web) as Starlette routes on the
same server and port, over the same class store as the teacher's and projector's views.
"""
import streamlit as st
from starlette.middleware import Middleware

from classroom import web
from ui.server import class_store

if __name__ == "__main__":
    from ui import frame

    page = frame.render()
    page.run()
    frame.next_chapter_link(page)
else:
    app = st.App(__file__, routes=web.routes(class_store.shared), middleware=[Middleware(web.OldJoinLinks)])
