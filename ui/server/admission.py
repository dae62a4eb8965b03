"""Admission control: at most `SPECDEC_MAX_CONCURRENT` generations or measurements run at once in
this server process; the others wait their turn in a first-come queue and say so in the page
("Queued — 2 ahead of you"), instead of thrashing the CPU cores all together.

Two helpers, one rule: every piece of model work a page does goes through one of them.

    with admission.slot("the race"):          button-triggered work (a generation, a sweep, the lab)
        result = race.live_race(...)

    @admission.cached(max_entries=32)          instead of @st.cache_data for a cached generation:
    def generation(pair_id, ..., _pair): ...   the call queues only when the result must be computed

A slot is released however the block ends: a result, an error, or Streamlit stopping the run because
the student changed a setting or closed the tab. Streamlit can only stop a run at an interrupt
point, so long work calls `checkpoint()` now and then (pass `admission.on_round` / `on_token` as the
core's callbacks, or draw progress: every `st.*` call is an interrupt point too). Live progress drawn
inside a slot goes through a `Throttle` (about ten redraws a second), so that the slot is spent on
the model rather than on sending every token to the browser.

One session runs one script at a time, so it holds at most one slot; a slot is re-entrant within
a thread, so a cached function called inside `slot()` does not queue again. Slots are always taken
before a cache's compute lock (never while holding one), which keeps the two free of deadlock.
"""
import functools
import inspect
import itertools
import logging
import math
import threading
import time
from collections import OrderedDict, deque
from contextlib import contextmanager

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from specdec_core.analysis.stats import Pacing
from ui.server import operator

log = logging.getLogger("specdec.admission")
POLL_S = 0.25  # how often a queued run re-checks its place and whether it was stopped
_local = threading.local()  # slots held by this thread (re-entrancy)


class Gate:
    """A first-come, first-served counting semaphore that can say how many are waiting ahead of you.
    `weight` lets a measurement take every slot (it then runs alone, for clean timings)."""

    def __init__(self, limit: int):
        assert limit >= 1, "a gate needs at least one slot"
        self.limit = limit
        self._cond = threading.Condition()
        self._running = 0
        self._queue: deque[tuple[int, int]] = deque()  # (ticket, weight), oldest first
        self._tickets = itertools.count()
        self.admitted = 0  # since start, for the log and the tests
        self.max_running = 0

    @property
    def running(self) -> int:
        return self._running

    @property
    def waiting(self) -> int:
        return len(self._queue)

    def enter(self, weight: int = 1) -> int:
        """Join the queue; returns a ticket for try_acquire / ahead / leave."""
        with self._cond:
            ticket = next(self._tickets)
            self._queue.append((ticket, min(max(1, weight), self.limit)))
            return ticket

    def try_acquire(self, ticket: int) -> bool:
        """Take the slot(s) if this ticket is first in line and they are free."""
        with self._cond:
            if not self._queue or self._queue[0][0] != ticket:
                return False
            weight = self._queue[0][1]
            if self._running + weight > self.limit:
                return False
            self._queue.popleft()
            self._running += weight
            self.admitted += 1
            self.max_running = max(self.max_running, self._running)
            self._cond.notify_all()  # the next in line may fit too
            return True

    def wait(self, timeout: float) -> None:
        """Sleep until something changes (a release, a departure) or `timeout` seconds pass."""
        with self._cond:
            self._cond.wait(timeout)

    def ahead(self, ticket: int) -> int:
        """How many tickets wait before this one (0: next in line)."""
        with self._cond:
            return next((i for i, (t, _) in enumerate(self._queue) if t == ticket), 0)

    def leave(self, ticket: int) -> None:
        """Give up a place in the queue (the run was stopped while waiting)."""
        with self._cond:
            for i, (t, _) in enumerate(self._queue):
                if t == ticket:
                    del self._queue[i]
                    break
            self._cond.notify_all()

    def release(self, weight: int = 1) -> None:
        with self._cond:
            self._running -= min(max(1, weight), self.limit)
            assert self._running >= 0, "released more slots than were taken"
            self._cond.notify_all()


@st.cache_resource(show_spinner=False)
def _gate(limit: int) -> Gate:
    """One gate per server process (per limit, so changing SPECDEC_MAX_CONCURRENT takes effect)."""
    return Gate(limit)


def gate() -> Gate:
    """This server's gate."""
    return _gate(operator.rules().max_concurrent)


def checkpoint() -> None:
    """An interrupt point: raises Streamlit's stop or rerun exception if this session asked for one
    (a setting changed, the tab closed). A no-op outside a Streamlit script run."""
    if get_script_run_ctx(suppress_warning=True) is not None:
        _ = "_" in st.session_state  # reading session state is where Streamlit handles stop and rerun requests


def on_round(_round=None) -> None:
    """A ready-made `on_round` callback for the core's speculative_generate."""
    checkpoint()


def on_token(_token=None, _seconds=None) -> None:
    """A ready-made `on_token` callback for the core's autoregressive_generate."""
    checkpoint()


def queue_message(ahead: int, running: int, limit: int, what: str) -> str:
    """What a queued student reads."""
    place = "you are next" if ahead == 0 else f"{ahead} ahead of you"
    return (f"**Queued — {place}.** This server runs {limit} generation{'s' * (limit != 1)} at a time so "
            f"that each stays fast ({running} running now). {what[:1].upper() + what[1:]} will start by itself "
            "as soon as one is free; keep this tab open.")


@contextmanager
def slot(what: str = "your request", exclusive: bool = False):
    """Hold one of the server's generation slots for the duration of the block, waiting in line
    (with a visible message) if all are taken. `exclusive` waits for the whole server (for timings)."""
    held = getattr(_local, "depth", 0)
    if held:  # this thread already holds a slot: nested work runs under it
        _local.depth = held + 1
        try:
            yield
        finally:
            _local.depth = held
        return
    g = gate()
    weight = g.limit if exclusive else 1
    ticket = g.enter(weight)
    placeholder, shown, since = None, None, time.monotonic()
    try:
        while not g.try_acquire(ticket):
            message = queue_message(g.ahead(ticket), g.running, g.limit, what)
            if message != shown and get_script_run_ctx(suppress_warning=True) is not None:
                if placeholder is None:
                    placeholder = st.empty()
                placeholder.info(message, icon=":material/hourglass_top:")
                shown = message
            checkpoint()
            g.wait(POLL_S)
    except BaseException:
        g.leave(ticket)
        if placeholder is not None:
            placeholder.empty()
        raise
    admitted = time.monotonic()
    waited = admitted - since
    if waited > 1:
        log.info("admitted %s after %.1f s in the queue (%d running, %d waiting)", what, waited, g.running, g.waiting)
    _local.depth = 1
    try:
        if placeholder is not None:
            placeholder.empty()
        yield
    finally:
        _local.depth = 0
        g.release(weight)
        log.debug("slot: %s waited %.3f s, held %.3f s", what, waited, time.monotonic() - admitted)


def pacing(what: str = "your request", progress=None) -> Pacing:
    """The core's pacing for a long measurement (specdec_core.analysis.stats.Pacing): a slot of its own
    for each run, so it never keeps other students waiting long, and `progress` told between runs."""
    return Pacing(functools.partial(slot, what), progress)


class Throttle:
    """True at most once per `seconds` (and on the first call): for redrawing live progress inside a
    slot without spending the slot on drawing. Call `admission.checkpoint()` when it says no."""

    def __init__(self, seconds: float = 0.1):
        self.seconds, self._last = seconds, -math.inf

    def __call__(self) -> bool:
        now = time.monotonic()
        if now - self._last >= self.seconds:
            self._last = now
            return True
        return False


class _Recent:
    """The most recent call keys of one cached function (an LRU), to skip the queue for results the
    cache already holds. It remembers half as many keys as the cache keeps, so a key it remembers
    has almost surely not been evicted; a rare wrong guess only runs one computation unqueued."""

    def __init__(self, size: int):
        self.size = max(1, size)
        self._keys: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def hit(self, key) -> bool:
        with self._lock:
            if key in self._keys:
                self._keys.move_to_end(key)
                return True
            return False

    def add(self, key) -> None:
        with self._lock:
            self._keys[key] = None
            self._keys.move_to_end(key)
            while len(self._keys) > self.size:
                self._keys.popitem(last=False)


@st.cache_resource(show_spinner=False)
def _recent(name: str, size: int) -> _Recent:
    return _Recent(size)


def _key_part(value):
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


def cached(max_entries: int = 32, what: str = "this result"):
    """`st.cache_data(show_spinner=False, max_entries=...)` whose computations go through `slot()`.
    As with st.cache_data, parameters whose name starts with "_" are not part of the key."""
    def decorate(func):
        inner = st.cache_data(show_spinner=False, max_entries=max_entries)(func)
        signature = inspect.signature(func)
        name = f"{func.__code__.co_filename}:{func.__qualname__}"

        @functools.wraps(func)
        def call(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            key = tuple((k, _key_part(v)) for k, v in bound.arguments.items() if not k.startswith("_"))
            recent = _recent(name, max(1, max_entries // 2))
            if recent.hit(key):
                return inner(*args, **kwargs)
            with slot(what):
                result = inner(*args, **kwargs)
            recent.add(key)
            return result

        call.clear = inner.clear
        return call
    return decorate
