"""The phone's page of class mode, outside Streamlit's rerun model: Starlette routes that app.py mounts
beside the app (`st.App(..., routes=...)`), on the same server, port and class store.

    routes(open_store)     the page, its script and style, and the join / state / vote calls (phone.py)
    OldJoinLinks           middleware: /class?join=CODE (a Streamlit-era link) -> /phone?join=CODE
    phone_state(...)       what a phone is sent, as plain data (view.py)

Nothing here imports streamlit, ui or chapters.
"""
from .phone import PATH, POLL_S, OldJoinLinks, routes
from .view import phone_state

__all__ = ["routes", "OldJoinLinks", "phone_state", "PATH", "POLL_S"]
