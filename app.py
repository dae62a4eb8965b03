"""SpecDec Lab: speculative decoding (Leviathan, Kalman & Matias 2022; Chen et al. 2023), taught by
running real GPT-2 models. This file is the frame every page shares: page config, the settings
sidebar (kept in step with the URL), the model pair, then the chapter that was asked for.

Run:  .venv/bin/python -m streamlit run app.py
To add a chapter: one line in ui/chapters.py CHAPTERS (Home's links come from the same list).
"""
import streamlit as st

from ui import chapters, layout, models, settings


st.set_page_config(page_title=layout.TITLE, page_icon=":material/bolt:", layout="wide")
models.configure_torch()

pages = [st.Page(c.path, title=c.title, icon=c.icon, default=(i == 0)) for i, c in enumerate(chapters.CHAPTERS)]
page = st.navigation(pages)

st.sidebar.markdown(f"**{layout.TITLE}**")
settings.init_from_url()
current, pair, error = settings.sidebar(models.get_pair)
settings.sync_url(current)
if pair is not None:
    st.sidebar.caption(f"target {pair.target_name} ({pair.target_params / 1e6:.1f}M params) · "
                       f"draft {pair.draft_name} ({pair.draft_params / 1e6:.1f}M) · {pair.device}, "
                       f"{models.configure_torch()} torch thread(s)")
settings.show_warnings()

page.run()
