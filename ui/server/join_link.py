"""The links class mode hands out: the join link (and its QR code) that phones open, and the projector's.
Both start from the address the teacher's browser used to reach this server."""
import urllib.parse

import streamlit as st

from classroom import web

FALLBACK_ORIGIN = "http://localhost:8501"


def origin() -> str:
    """Scheme and host of this page as the teacher's browser reached it (no path, no query)."""
    parts = urllib.parse.urlsplit(st.context.url or FALLBACK_ORIGIN)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return FALLBACK_ORIGIN
    return f"{parts.scheme}://{parts.netloc}"


def join_url(code: str) -> str:
    """The link a phone opens to join class `code`: the phone page (classroom/web), not the Streamlit app."""
    return f"{origin()}{web.PATH}?join={code}"


def projector_url(code: str) -> str:
    """The room's screen for class `code` (opened by the teacher, on the teacher's machine)."""
    return f"{origin()}/class?code={code}&view=projector"
