"""The address a phone in the room uses to reach the class page: the join link and its QR code.

A teacher who opened the app as http://localhost:8501 must not project a QR code of "localhost": on a
phone that names the phone. So the address the teacher's browser used is kept only when it names this
machine from elsewhere; a loopback address is replaced by this machine's address on the local network
(what `streamlit run` prints as its Network URL, streamlit.net_util.get_internal_ip); the operator's
SPECDEC_PUBLIC_URL (a proxy's or a tunnel's address) overrides both; where none is known the teacher is
told so in plain words instead of being shown a QR code that leads nowhere.

`join_url` decides from plain values (tests call it directly); `current` gathers them from the running server.
"""
import ipaddress
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass

import streamlit as st
from streamlit import config, net_util

from ui.server import operator
from ui.state.rules import KEYS

PUBLIC_URL_ENV = KEYS["public_url"][0]  # SPECDEC_PUBLIC_URL, in the environment or .streamlit/secrets.toml
URL_MAX = 300  # longest public address accepted
WILDCARDS = ("", "0.0.0.0", "::")  # a server.address that listens on every interface


@dataclass(frozen=True)
class JoinAddress:
    """The class page's address as the room reaches it (no query), or why there is none."""
    url: str | None  # e.g. "http://192.168.1.20:8501/class"; None when no reachable address is known
    source: str  # "public" (the operator's setting), "browser" (as the teacher reached it), "network" (the LAN address)
    warning: str | None = None  # for the teacher, in plain words, when url is None


def is_loopback(host: str) -> bool:
    """Whether `host` names the machine it is typed on (localhost, 127.x, ::1, and 0.0.0.0 or ::,
    which a browser on the server also reaches): on a phone such an address names the phone."""
    name = host.strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def netloc(host: str, port: int | None) -> str:
    """host[:port], an IPv6 address in brackets."""
    host = host.strip("[]")
    shown = f"[{host}]" if ":" in host else host
    return shown if port is None else f"{shown}:{port}"


def checked_public_url(raw: str) -> str | None:
    """The operator's public address without a trailing slash, or None when it cannot be one: an
    http(s) URL with a host and nothing of a query, a fragment or a user name (never echoed: it may hold one)."""
    text = raw.strip()
    if len(text) > URL_MAX:
        return None
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # noqa: B018  (raises on a port that is not a number)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        return None
    if parts.username is not None or parts.password is not None or any(c.isspace() for c in text):
        return None
    return text.rstrip("/")


def join_url(browser_url: str | None, port: int, public_url: str | None, lan_addresses: Iterable[str],
             page: str = "/class", base_path: str = "") -> JoinAddress:
    """Where the room reaches `page` (a path from the app's root, e.g. "/class").

    browser_url: the address the teacher's browser used (st.context.url), or None. port: the port this
    server listens on. public_url: the operator's SPECDEC_PUBLIC_URL (the app's root as the room reaches
    it), or None/"". lan_addresses: this machine's addresses on the local network, best first.
    base_path: the server's own path prefix (server.baseUrlPath), for the browser's and the LAN address.

    The operator's setting wins; then the host the browser used unless it is a loopback one; then the first
    LAN address that is not loopback, with the browser's scheme, on this server's port.
    """
    page = "/" + page.lstrip("/")
    if public_url:
        checked = checked_public_url(public_url)
        if checked is None:
            return JoinAddress(None, "public", f"The server's {PUBLIC_URL_ENV} setting is not a web address "
                                               "(http:// or https://, a host, no user name and no query), so there is "
                                               "no join link to show. Ask whoever runs this server to correct it.")
        return JoinAddress(checked + page, "public")

    path = ("/" + base_path.strip("/") if base_path.strip("/") else "") + page
    parts = urllib.parse.urlsplit(browser_url or "")
    if parts.scheme in ("http", "https") and parts.hostname and not is_loopback(parts.hostname):
        return JoinAddress(f"{parts.scheme}://{parts.netloc}{path}", "browser")

    scheme = parts.scheme if parts.scheme in ("http", "https") else "http"
    for host in lan_addresses:
        if host and not is_loopback(host):
            return JoinAddress(f"{scheme}://{netloc(host, port)}{path}", "network")
    return JoinAddress(None, "network", "Phones cannot reach this page: its address names this machine "
                                        "only (localhost), and the machine has no address on a local network. "
                                        f"Connect it to the room's network, or set {PUBLIC_URL_ENV} to the address "
                                        "the room uses, and reload.")


def lan_addresses(server_address: str | None) -> list[str]:
    """This machine's addresses on the local network, as `streamlit run` finds its Network URL: the one
    address the server listens on (server.address), else the address of the interface that leads out
    (streamlit.net_util.get_internal_ip, which gives 127.0.0.1 where there is none)."""
    if server_address and server_address.startswith("unix://"):
        return []  # a Unix socket: only a proxy on this machine reaches it
    if server_address and server_address not in WILDCARDS:
        return [server_address]
    found = net_util.get_internal_ip()
    return [found] if found else []


def current(page: str = "/class") -> JoinAddress:
    """Where the room reaches `page` (a path from the app's root) of this running server; the operator's
    setting is read on each call, as every operator setting is."""
    return join_url(st.context.url, int(config.get_option("server.port")), operator.values().get(PUBLIC_URL_ENV),
                    lan_addresses(config.get_option("server.address")), page,
                    base_path=config.get_option("server.baseUrlPath") or "")
