"""Loading the model pair once per server process, and turning the prompt into token ids, with
friendly messages in the page instead of exceptions.

The pair is shared by every session (`st.cache_resource`): it is read-only after `.eval()`, and every
generation makes its own KV cache and random generator, so sessions never share mutable state.
"""
import os
import time

import streamlit as st
import torch

from specdec_core.pairs import ModelPair, PairUnavailable, load_pair

from .settings import Settings, current

THREADS_ENV = "SPECDEC_THREADS"
RETRY_AFTER_S = 60  # a pair that failed to load is not retried on every rerun (offline checks take seconds)


@st.cache_resource(show_spinner=False)
def configure_torch() -> int:
    """Set torch's intra-op threads once per process: $SPECDEC_THREADS, else half the cores.
    Oversubscribed cores make each pass many times slower, so leave room for the server and others."""
    n = int(os.environ.get(THREADS_ENV) or 0) or max(1, (os.cpu_count() or 2) // 2)
    torch.set_num_threads(n)
    return n


@st.cache_resource(show_spinner=False, max_entries=3)
def _load(name: str) -> ModelPair:
    return load_pair(name)


@st.cache_resource(show_spinner=False)
def _failures() -> dict[str, tuple[float, str]]:
    return {}


def get_pair(name: str) -> tuple[ModelPair | None, str | None]:
    """The named pair (loaded once per process, with a spinner the first time), or None and the
    loader's message when it cannot be had here."""
    failed = _failures().get(name)
    if failed and time.monotonic() - failed[0] < RETRY_AFTER_S:
        return None, failed[1]
    try:
        with st.spinner(f"Loading the '{name}' model pair (once per server process)…", show_time=True):
            pair = _load(name)
    except (PairUnavailable, ValueError, OSError) as err:
        message = str(err)
        _failures()[name] = (time.monotonic(), message)
        return None, message
    _failures().pop(name, None)
    return pair, None


def pair_key(pair: ModelPair) -> str:
    """Identifies a loaded pair in cache keys: the name, plus sizes, so retrained models never reuse
    measurements of the old ones."""
    return f"{pair.name}:{pair.target_params}:{pair.draft_params}"


def require_pair() -> ModelPair:
    """The pair chosen in the sidebar, or an error message in the page and a stop."""
    pair, error = get_pair(current().pair)
    if pair is None:
        st.error(f"This chapter runs the model pair, and {error}",
                 icon=":material/cloud_off:")
        st.info("Pick the bundled **shakespeare** pair in the sidebar: it works offline.")
        st.stop()
    return pair


def prompt_problem(pair: ModelPair, s: Settings) -> tuple[list[int], str | None]:
    """Token ids of the prompt, and what is wrong with them for generating s.max_new_tokens (or None)."""
    if not s.prompt.strip():
        return [], "The prompt is empty: type a line in the sidebar or pick a preset."
    ids = pair.tokenizer.encode(s.prompt)
    if not ids:
        return [], "The prompt encodes to no tokens at all: type a few words."
    window = pair.context_length
    if len(ids) + s.max_new_tokens > window:
        return ids, (f"The prompt is {len(ids)} tokens and you asked for {s.max_new_tokens} new ones: together "
                     f"they exceed this pair's context window of {window} tokens. Shorten the prompt or lower "
                     "max new tokens in the sidebar.")
    return ids, None


def require_prompt_ids(pair: ModelPair, s: Settings | None = None) -> list[int]:
    """Token ids of the sidebar prompt, or a friendly message in the page and a stop."""
    ids, problem = prompt_problem(pair, s or current())
    if problem:
        st.warning(problem, icon=":material/edit_note:")
        st.stop()
    return ids
