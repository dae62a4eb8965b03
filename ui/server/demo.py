"""The press-measure-store pattern of every chapter with a live button, in one place:

    press the button → wait for a generation slot → a progress bar → the core's work → the result stored
    with the settings it answers → on later reruns, shown only while they still match (or under a note
    that they are stale).

A result is stored per session (st.session_state), or with `shared=True` once for the whole server
process, for figures about this machine and these models that every student would measure alike.

    out = demo.run("Run the shoot-out", key="im_run", state="im_result", signature=signature,
                   work=lambda progress: {"out": race.drafter_shootout(..., pacing=Pacing(progress=progress))},
                   what="your shoot-out", failure="Could not run")
    stored = demo.latest("im_result", signature, stale="note", again="Run the shoot-out")

A ValueError from the work (the core's answer to a bad input) becomes a sentence on the page and stops
it, never a traceback; the slot is given back however the work ends (ui.server.admission). A measurement
takes its slot run by run instead: the page calls the core inside `with measuring(what) as pacing:`,
passes it the one `pacing`, stores the result with `keep`, and shows its figure with `spread_note`.
"""
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext

import streamlit as st

from specdec_core.analysis.stats import Pacing
from ui.server import admission

Progress = Callable[[float, str], None]  # (fraction done in [0, 1], what is running now)
SETTLE_S = 0.03  # pause after drawing progress, between a measurement's timed runs
SHARED_ENTRIES = 16  # results kept per state name in the server-wide store (the latest settings win)
_shared_lock = threading.Lock()  # sessions run in threads of their own


@st.cache_resource(show_spinner=False)
def _shared() -> dict[str, OrderedDict]:
    """state name -> {signature: stored result}, for the whole server process (`shared=True`)."""
    return {}


def _store(state: str, signature, stored: dict, shared: bool) -> None:
    if not shared:
        st.session_state[state] = stored
        return
    with _shared_lock:
        entries = _shared().setdefault(state, OrderedDict())
        entries.pop(signature, None)
        entries[signature] = stored
        while len(entries) > SHARED_ENTRIES:
            entries.popitem(last=False)


def _stored(state: str, signature, shared: bool) -> dict | None:
    """The result for `signature`, else the latest under `state` (for the stale note), else None."""
    if not shared:
        return st.session_state.get(state)
    with _shared_lock:
        entries = _shared().get(state) or {}
        if signature in entries:
            return entries[signature]
        return next(reversed(entries.values()), None) if entries else None


def _no_progress(_fraction: float, _text: str) -> None:
    admission.checkpoint()


def _bar(text: str) -> tuple:
    """A progress bar, and the (fraction, text) -> None that draws on it between timed runs."""
    bar = st.progress(0.0, text=text)

    def report(fraction: float, text: str) -> None:
        bar.progress(min(max(fraction, 0.0), 1.0), text=text)
        # The server's event loop sends the update on another thread, and a browser on this machine
        # redraws it: both get a moment before the next timed run starts, instead of during it.
        time.sleep(SETTLE_S)
    return bar, report


@contextmanager
def measuring(what: str = "your request", progress_text: str = "Starting…",
              failure: str = "Could not run") -> Iterator[Pacing]:
    """A progress bar around the block, and the one `Pacing` the core's measurement takes: a generation
    slot per run (`admission.pacing`) and the bar drawn between runs. A ValueError from the core
    becomes "`failure`: error" on the page and stops the run; the bar goes however the block ends.

        with demo.measuring("your race", "Racing…", "Could not race") as pacing:
            live = race.live_race(pair.target, pair.draft, s.request(ids), gamma, pacing=pacing)
        demo.keep("race_live", signature, {"race": live})"""
    bar, report = _bar(progress_text)
    try:
        yield admission.pacing(what, report)
    except ValueError as err:
        st.error(f"{failure}: {err}")
        st.stop()
    finally:
        bar.empty()


def keep(state: str, signature, payload: dict, shared: bool = False) -> dict:
    """Store `payload` with "signature" added (this session's, or the server's with `shared`), as
    `execute` does; returns the stored dict."""
    stored = {**payload, "signature": signature}
    _store(state, signature, stored, shared)
    return stored


def repeats_cap(repeats: int, most: int) -> int:
    """How many repetitions a measurement may grow to while they disagree: `most` when no other request
    holds or waits for a generation slot, else `repeats`. On a server busy with classmates' requests
    more repetitions of one figure would only slow theirs; other work on the machine leaves the slots free."""
    g = admission.gate()
    return most if g.running == 0 and g.waiting == 0 else repeats


def execute(state: str, signature, work: Callable[[Progress], dict], *, what: str = "your request",
            failure: str = "Could not run", progress: bool = True, progress_text: str = "Starting…",
            slot: bool = True, shared: bool = False) -> dict:
    """Run `work(progress)` in an admission slot (with a progress bar unless `progress` is False) and
    store its dict with "signature" added: in st.session_state[state], or with `shared` for every
    session of this server. Returns the stored dict; on a ValueError shows "`failure`: error" and stops
    the script run. `slot=False`: the work takes its slots itself, run by run (pass it `hold(what)`)."""
    bar, report = _bar(progress_text) if progress else (None, _no_progress)

    try:
        with admission.slot(what) if slot else nullcontext():
            payload = work(report)
    except ValueError as err:
        st.error(f"{failure}: {err}")
        st.stop()
    finally:
        if bar is not None:
            bar.empty()
    return keep(state, signature, payload, shared)


def run(label: str, *, key: str, state: str, signature, work: Callable[[Progress], dict], where=None,
        what: str = "your request", failure: str = "Could not run", progress: bool = True,
        progress_text: str = "Starting…", slot: bool = True, shared: bool = False, **button) -> dict | None:
    """A button (`label`, widget key `key`, drawn in `where` or the page; extra keyword arguments go to
    st.button). When pressed, `execute`s the work and returns the stored dict; otherwise None."""
    if not (where or st).button(label, key=key, **button):
        return None
    return execute(state, signature, work, what=what, failure=failure, progress=progress,
                   progress_text=progress_text, slot=slot, shared=shared)


def latest(state: str, signature, *, stale: str = "hide", again: str = "the button",
           shared: bool = False) -> dict | None:
    """The stored result under `state` (this session's, or the server's with `shared`). One from other
    settings (another signature) is hidden (stale="hide": returns None) or shown under a note to press
    `again` (stale="note")."""
    stored = _stored(state, signature, shared)
    if not stored:
        return None
    if stored.get("signature") != signature:
        if stale == "hide":
            return None
        st.info(f"These results are from earlier settings; press **{again}** again.", icon=":material/history:")
    return stored


def spread_note(m, what: str = "The figure", unit: str = "×", digits: int = 2, scale: float = 1.0) -> None:
    """A caption with the median and spread of a measured figure (a specdec_core Measured), and a
    warning instead when the spread is wide: then the machine was busy, and the figure says so."""
    text = m.text(unit, digits, scale)
    if m.busy:
        st.warning(f"**The machine was busy while this was measured.** {what}: {text}, median of {m.n} interleaved "
                   "runs that disagree by more than a quarter, so read the median as rough: other work on the "
                   "server slowed some runs more than others. Measure again when it is quieter.",
                   icon=":material/speed:")
    else:
        st.caption(f"{what}: {text}, median of {m.n} interleaved runs.")
