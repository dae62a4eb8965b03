"""The operator's settings for this server, from environment variables or `.streamlit/secrets.toml`
(same keys; the environment wins). See `ui.state.rules.KEYS` for the list and the README's
"Running it for a class" for examples.

Read on every run (a dozen dictionary look-ups), so a test can change the environment; what could
not be used is logged once, server-side.
"""
import logging
import os
import threading

import streamlit as st

from ui.state.rules import KEYS, ClassroomRules, rules_from

THREADS_ENV = "SPECDEC_THREADS"
log = logging.getLogger("specdec.operator")
_logged: set[str] = set()
_logged_lock = threading.Lock()


def _secrets() -> dict:
    try:
        if not st.secrets.load_if_toml_exists():
            return {}
        return {key: st.secrets[key] for key, _ in KEYS.values() if key in st.secrets}
    except Exception as err:  # a malformed secrets.toml must not take the app down
        _log_once(f"could not read .streamlit/secrets.toml: {type(err).__name__}: {err}")
        return {}


def _log_once(message: str) -> None:
    with _logged_lock:
        if message in _logged:
            return
        _logged.add(message)
    log.warning(message)


def torch_threads() -> int:
    """Torch intra-op threads per process: $SPECDEC_THREADS, else half the cores. Oversubscribed cores
    make each pass many times slower, so leave room for the server and others."""
    try:
        n = int(os.environ.get(THREADS_ENV) or 0)
    except ValueError:
        n = 0
    return min(n, 64) if n > 0 else max(1, (os.cpu_count() or 2) // 2)


def values() -> dict:
    """The raw operator settings: secrets.toml, overridden by the environment."""
    out = _secrets()
    for key, _ in KEYS.values():
        if key in os.environ:
            out[key] = os.environ[key]
    return out


@st.cache_resource(show_spinner=False)
def configure_logging() -> None:
    """Send the app's own log lines (logger "specdec") to stderr next to Streamlit's, once per process,
    at $SPECDEC_LOG_LEVEL (default INFO; DEBUG adds one line per generation slot, for the load test)."""
    logger = logging.getLogger("specdec")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        level = os.environ.get("SPECDEC_LOG_LEVEL", "INFO").upper()
        logger.setLevel(level if level in ("DEBUG", "INFO", "WARNING", "ERROR") else "INFO")
        logger.propagate = False


def rules() -> ClassroomRules:
    """The operator's classroom rules for this server (see ui.state.rules)."""
    p = rules_from(values(), torch_threads=torch_threads())
    for problem in p.problems:
        _log_once(f"operator setting ignored: {problem}")
    return p
