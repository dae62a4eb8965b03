"""The α Dial's controls, the app's one set of α / γ / c: The α Dial sets them, the Wall-Clock Race reads
them (ui/frame.py keeps them across pages). Their defaults have this one home."""
import streamlit as st

ALPHA = 0.8  # the α a visitor starts from


def measured_c(profile) -> float:
    """c as the dial shows it: this machine's measured c, clipped to the slider's [0, 1]."""
    return round(min(max(profile.c, 0.0), 1.0), 3)


def set_defaults(s, profile) -> None:
    """The controls' defaults for this session, where not set yet: α = ALPHA, the sidebar's γ, and the
    measured c (`profile`: this machine's costs)."""
    st.session_state.setdefault("ad_alpha", ALPHA)
    st.session_state.setdefault("ad_gamma", s.gamma)
    st.session_state.setdefault("ad_c", measured_c(profile))
