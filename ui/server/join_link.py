"""Where the room reaches this server: the address of the class page as a phone in the room would use
it. Here: the address the teacher's browser used. (The class-room work replaces how it is found:
a loopback address becomes this machine's LAN address, SPECDEC_PUBLIC_URL overrides it, and where no
reachable address is known, `url` is None and `warning` says why. The callers only read `current()`.)"""
import urllib.parse
from dataclasses import dataclass

import streamlit as st

FALLBACK_URL = "http://localhost:8501/class"  # where no browser address is known (a script run without one)


@dataclass(frozen=True)
class JoinAddress:
    """The class page's address as the room reaches it (no query), or why there is none."""
    url: str | None  # e.g. "http://192.168.1.20:8501/class"; None when no reachable address is known
    source: str  # where it came from: "browser" (as the teacher reached it)
    warning: str | None = None  # for the teacher, in plain words, when url is None


def current(page: str = "class") -> JoinAddress:
    """Where the room reaches `page` of this running server."""
    parts = urllib.parse.urlsplit(st.context.url or FALLBACK_URL)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        parts = urllib.parse.urlsplit(FALLBACK_URL)
    path = parts.path if parts.path not in ("", "/") else f"/{page}"
    return JoinAddress(urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", "")), "browser")
