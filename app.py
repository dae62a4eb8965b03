"""SpecDec Lab: speculative decoding (Leviathan, Kalman & Matias 2022; Chen et al. 2023), taught by
running real GPT-2 models. This entry point draws the frame every page shares (page config,
navigation, the settings sidebar kept in step with the URL, the model pair), then the chapter.

Run:  .venv/bin/python -m streamlit run app.py
Add a chapter: one line in ui/chapters.py CHAPTERS (navigation and Home's links both read it), and
start the page file with `frame.ensure()`.
"""
from ui import frame

page = frame.render()
with frame.framed():
    page.run()
