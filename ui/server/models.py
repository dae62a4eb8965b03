"""Loading the model pair once per server process, and turning the prompt into token ids, with
friendly messages in the page instead of exceptions.

The pair is shared by every session (`st.cache_resource`): it is read-only after `.eval()`, and every
generation makes its own KV cache and random generator, so sessions never share mutable state. Which
pairs may be loaded is the operator's classroom rules (ui/server/operator.py), checked again here whatever the widgets say.
Load failures reach the page as a sentence (server paths shortened to the repository's); the details go
to the server log.
"""
import logging
import time
from pathlib import Path

import streamlit as st
import torch

from specdec_core.pairs import ModelPair, PairUnavailable, load_pair
from ui.server import operator
from ui.state.rules import CUSTOM, NotAllowed, check_custom_pair, check_named_pair
from ui.state.settings import Settings, current

RETRY_AFTER_S = 60  # a pair that failed to load is not retried on every rerun (offline checks take seconds)
ROOT = Path(__file__).resolve().parents[2]
log = logging.getLogger("specdec.models")


@st.cache_resource(show_spinner=False)
def configure_torch() -> int:
    """Set torch's intra-op threads once per process: $SPECDEC_THREADS, else half the cores.
    Oversubscribed cores make each pass many times slower, so leave room for the server and others."""
    n = operator.torch_threads()
    torch.set_num_threads(n)
    return n


@st.cache_resource(show_spinner=False, max_entries=3)
def _load(name: str, target: str = "", draft: str = "") -> ModelPair:
    if name == CUSTOM:
        return load_pair(CUSTOM, target=target, draft=draft)
    return load_pair(name)


def _public(message: str) -> str:
    """A loader's message as a student may read it: no absolute paths of this server."""
    return message.replace(str(ROOT) + "/", "").replace(str(ROOT), ".")


@st.cache_resource(show_spinner=False)
def _failures() -> dict[tuple[str, str, str], tuple[float, str]]:
    return {}


def get_pair(name: str, target: str = "", draft: str = "") -> tuple[ModelPair | None, str | None]:
    """The named pair, or for name "custom" the pair of two allow-listed hub ids (loaded once per
    process, with a spinner the first time), or None and a message when it cannot be had here."""
    rules = operator.rules()
    try:
        if name == CUSTOM:
            check_custom_pair(target, draft, rules)
        else:
            check_named_pair(name, rules)
            target = draft = ""
    except NotAllowed as err:
        return None, f"{err}."
    key = (name, target, draft)
    failed = _failures().get(key)
    if failed and time.monotonic() - failed[0] < RETRY_AFTER_S:
        return None, failed[1]
    label = name if name != CUSTOM else f"{draft} → {target}"
    try:
        with st.spinner(f"Loading the '{label}' model pair (once per server process)…", show_time=True):
            pair = _load(name, target, draft)
    except (PairUnavailable, ValueError, OSError) as err:
        log.warning("pair %r unavailable: %s", key, err)
        message = _public(str(err))
    except Exception as err:  # anything else a broken model file can raise: a sentence, never a traceback
        log.exception("loading pair %r failed", key)
        message = (f"the '{label}' pair could not be loaded here ({type(err).__name__}); the server log has "
                   "the details")
    else:
        _failures().pop(key, None)
        return pair, None
    _failures()[key] = (time.monotonic(), message)
    return None, message


def forget_pairs() -> None:
    """Forget every loaded pair and remembered failure: the next get_pair loads afresh (tests, and an
    operator who changed the files on disk)."""
    _load.clear()
    _failures().clear()


def current_pair() -> tuple[ModelPair | None, str | None]:
    """get_pair for the sidebar's current settings."""
    return get_pair(*current().pair_args)


def pair_key(pair: ModelPair) -> str:
    """Identifies a loaded pair in cache keys: the name and models, plus sizes, so retrained models
    never reuse measurements of the old ones."""
    return f"{pair.name}:{pair.target_name}:{pair.draft_name}:{pair.target_params}:{pair.draft_params}"


def require_pair() -> ModelPair:
    """The pair chosen in the sidebar, or an error message in the page and a stop."""
    pair, error = current_pair()
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
