"""The phone's page of class mode, outside Streamlit's rerun model: Starlette routes that app.py mounts
beside the app (`st.App(..., routes=...)`), on the same server, port and class store.

    routes(open_store)     the page, its script and style, and the join / state / vote calls (phone.py)
    phone_url(page, code)  the join link: the phone page beside the class page's address
    OldJoinLinks           middleware: /class?join=CODE (a Streamlit-era link) -> /phone?join=CODE
    phone_state(...)       what a phone is sent, as plain data (view.py): the room's part, then the phone's own

Nothing here imports streamlit, ui or chapters.
"""
from .phone import PATH, POLL_S, OldJoinLinks, phone_url, routes
from .view import phone_state

__all__ = ["routes", "OldJoinLinks", "phone_state", "phone_url", "PATH", "POLL_S"]
