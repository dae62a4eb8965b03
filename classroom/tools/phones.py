"""A phone as the phone page talks to the server, in a thread: its own keep-alive connection and cookie,
a state poll every POLL_S with the ETag it holds, a vote as one POST; no browser, so hundreds fit beside
the server on a small machine. Each phone sends its own address in X-Forwarded-For: a room behind a
proxy on the server's machine (uvicorn believes that header from loopback only, FORWARDED_ALLOW_IPS's
default), so the seats-per-address limit sees a room of phones, not one address.

Also the measures the load runs take of the server process: CPU seconds and resident memory (/proc).
"""
import http.client
import json
import os
import random
import threading
import time
from pathlib import Path

from classroom import web

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process `pid` has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mib(pid: int) -> float:
    """Resident memory of process `pid` in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def percentile(values: list[float], q: float) -> float:
    """The q-quantile of `values` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def phone_address(index: int) -> str:
    """A distinct private address per phone: 10.a.b.c."""
    return f"10.{index // 62500 % 256}.{index // 250 % 250}.{index % 250 + 1}"


class Phone(threading.Thread):
    """One phone. Once started it polls; when it sees a vote open it plans a vote (after 0.5-4 s, and with
    probability `change` a changed vote a moment later) unless `autovote` is off; `rush` plans one vote
    at a given moment. Keeps what it saw, its last accepted vote per question and round, its errors."""

    def __init__(self, index: int, host: str, port: int, code: str, change: float = 0.3, seed: int = 0):
        super().__init__(daemon=True, name=f"phone-{index}")
        self.host, self.port, self.code, self.change = host, port, code, change
        self.address = phone_address(index)
        self.rng = random.Random(seed)
        self.conn = http.client.HTTPConnection(host, port, timeout=60)
        self.cookie = None
        self.etag = None
        self.autovote = True
        self.question: tuple[str, int] | None = None  # the (question, round) the phone shows now
        self.seen: dict[tuple[str, int], float] = {}  # (question, round) -> when this phone first held it open
        self.last_vote: dict[tuple[str, int], int] = {}  # the last accepted vote, per question and round
        self.planned: list[tuple[float, str, int, int]] = []  # (when, question, round, option)
        self.acks: list[tuple[float, float]] = []  # (sent, seconds until the vote's answer) of each accepted vote
        self.cast = 0  # accepted vote POSTs (changes included)
        self.errors: list[str] = []
        self.outage: list[str] = []  # failures while the server was known to be down (a restart)
        self.down = False
        self.sending = False  # a vote is on its way (taken off `planned`, its answer not back yet)
        self.requests = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict | None]:
        headers = {"Accept": "application/json", "X-Forwarded-For": self.address}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self.cookie:
            headers["Cookie"] = self.cookie
        if method == "GET" and self.etag and path.startswith(f"{web.PATH}/api/"):
            headers["If-None-Match"] = self.etag
        for attempt in range(2):  # a keep-alive connection the server closed is opened again once
            try:
                self.conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
                response = self.conn.getresponse()
                raw = response.read()
                break
            except (ConnectionError, http.client.HTTPException, TimeoutError):
                self.conn.close()
                if attempt:
                    raise
        self.requests += 1
        cookie = response.getheader("Set-Cookie")
        if cookie:
            self.cookie = cookie.split(";", 1)[0]
        if response.status == 304 or not path.startswith(f"{web.PATH}/api/"):
            return response.status, None
        if response.getheader("ETag"):
            self.etag = response.getheader("ETag")
        return response.status, json.loads(raw)

    def fail(self, what: str) -> None:
        (self.outage if self.down else self.errors).append(what)

    def open_page(self) -> None:
        for path in (f"{web.PATH}?join={self.code}", f"{web.PATH}/phone.js", f"{web.PATH}/phone.css"):
            status, _ = self.call("GET", path)
            if status != 200:
                self.fail(f"GET {path}: {status}")

    def join_class(self) -> float:
        """Join; returns the seconds the join call took."""
        start = time.monotonic()
        status, state = self.call("POST", f"{web.PATH}/api/join", {"code": self.code})
        took = time.monotonic() - start
        if status != 200 or not state.get("joined"):
            self.fail(f"join: {status} {state}")
        else:
            self.look(state)
        return took

    def look(self, state: dict) -> None:
        """A state arrived: a vote this phone had not seen open is noted, and a vote planned."""
        q = state.get("question")
        self.question = (q["id"], state["round"]) if q else None
        if not q or not state.get("open"):
            return
        key = (q["id"], state["round"])
        with self.lock:
            if key in self.seen:
                return
            now = time.monotonic()
            self.seen[key] = now
            if not self.autovote:
                return
            options = len(q["options"])
            first = now + self.rng.uniform(0.5, 4.0)
            self.planned.append((first, q["id"], state["round"], self.rng.randrange(options)))
            if self.rng.random() < self.change:
                self.planned.append((first + self.rng.uniform(0.5, 3.0), q["id"], state["round"],
                                     self.rng.randrange(options)))
            self.planned.sort()

    def rush(self, when: float, question: str, round_: int, option: int) -> None:
        """Vote at monotonic time `when`."""
        with self.lock:
            self.planned.append((when, question, round_, option))
            self.planned.sort()

    def vote(self, question: str, round_: int, option: int) -> None:
        sent = time.monotonic()
        status, state = self.call("POST", f"{web.PATH}/api/vote",
                                  {"code": self.code, "question": question, "round": round_, "option": option})
        if status == 200:
            self.acks.append((sent, time.monotonic() - sent))
            self.cast += 1
            self.last_vote[(question, round_)] = option
            self.look(state)
        elif status != 409:  # 409: the vote closed before this phone's tap (a late student), not an error
            self.fail(f"vote: {status} {state}")

    def busy(self) -> bool:
        return bool(self.planned) or self.sending

    def run(self) -> None:
        next_poll = time.monotonic() + self.rng.uniform(0, web.POLL_S)  # phones joined at different moments
        while not self.stop.is_set():
            now = time.monotonic()
            try:
                if self.planned and self.planned[0][0] <= min(now, next_poll):
                    with self.lock:
                        _, question, round_, option = self.planned.pop(0)
                        self.sending = True
                    try:
                        self.vote(question, round_, option)
                    finally:
                        self.sending = False
                    continue
                if now >= next_poll:
                    next_poll += web.POLL_S
                    status, state = self.call("GET", f"{web.PATH}/api/state?code={self.code}")
                    if status == 200:
                        self.look(state)
                    elif status != 304:
                        self.fail(f"state: {status} {state}")
                    continue
            except (OSError, http.client.HTTPException) as err:
                self.fail(f"{type(err).__name__}: {err}")
                next_poll = max(next_poll, time.monotonic() + web.POLL_S)
                continue
            wake = min(next_poll, self.planned[0][0]) if self.planned else next_poll
            self.stop.wait(max(0.0, wake - time.monotonic()))
        self.conn.close()
