"""SpecDec Lab: speculative decoding (Leviathan, Kalman & Matias 2022; Chen et al. 2023), taught by
running real GPT-2 models. This entry point draws the frame every page shares (page config,
navigation, the settings sidebar kept in step with the URL, the model pair), then the chapter.

Run:  .venv/bin/python -m streamlit run app.py
Add a chapter: its file in chapters/ and one line in ui/content/chapters.py CHAPTERS (navigation, Home's
links and each chapter's "next" link all read it).
"""
from ui import frame

page = frame.render()
page.run()
frame.next_chapter_link(page)
