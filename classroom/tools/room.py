"""A room of phones (phones.py) on the app started as `make run` starts it, the teacher's moves made
through the class store as the teacher's buttons make them; and a whole lesson of it.

    room    phones join in waves; the server's CPU while they wait on an open vote; the time until each
            phone holds the teacher's next vote; every phone votes, some change; a vote rush (every
            phone's vote sent within one second); tallies against the phones' own last votes
    lesson  every question of the class quiz: first vote, reveal, the right answer shown (every other
            question), the revote, reveal; the teacher's page reloaded (headless Chromium) and the
            server restarted in the middle; the server's memory at each question
"""
import os
import statistics
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import classroom

from . import serve
from .pg import temporary_postgres
from .phones import Phone, cpu_seconds, percentile, rss_mib

SEE_TIMEOUT_S = 60  # a phone that has not seen a vote opened this long ago has missed it
WAVE = 50  # phones joining at once


def load() -> float:
    return os.getloadavg()[0]


def until(check, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


@dataclass
class Room:
    """A class, its phones, the server they talk to, and what was seen."""
    store: classroom.Store
    info: classroom.ClassInfo
    server: serve.Server
    phones: list[Phone] = field(default_factory=list)
    opened: list[tuple[str, int, float]] = field(default_factory=list)  # (question, round, when)
    missed: int = 0
    lines: list[str] = field(default_factory=list)

    def say(self, line: str) -> None:
        print(line, flush=True)
        self.lines.append(line)

    def join(self, n: int, change: float, seed: int) -> None:
        """n phones open the page and join, WAVE at a time (each wave at once, from threads)."""
        port = self.server.port
        self.phones = [Phone(i, "127.0.0.1", port, self.info.code, change, seed * 100_000 + i) for i in range(n)]
        took: list[float] = []
        start = time.monotonic()
        for w in range(0, n, WAVE):
            wave = self.phones[w:w + WAVE]
            threads = [threading.Thread(target=lambda p=p: (p.open_page(), took.append(p.join_class()))) for p in wave]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        seconds = time.monotonic() - start
        joined = self.store.state(self.info.code).students
        self.say(f"join: {joined}/{n} phones in {seconds:.1f} s (waves of {WAVE}); join call median "
                 f"{statistics.median(took):.2f} s, p95 {percentile(took, 0.95):.2f} s, max {max(took):.2f} s")
        for phone in self.phones:
            phone.start()

    def open_vote(self, question: str, round_: int) -> list[float]:
        """The teacher opens a vote; returns the seconds until each phone held it."""
        when = time.monotonic()
        self.store.open_vote(self.info.code, self.info.teacher_key, question, round_)
        self.opened.append((question, round_, when))
        key = (question, round_)
        if not until(lambda: all(key in p.seen for p in self.phones), SEE_TIMEOUT_S):
            self.missed += sum(key not in p.seen for p in self.phones)
        return [p.seen[key] - when for p in self.phones if key in p.seen]

    def settle(self) -> None:
        """Until no phone has a vote left to send, and its answer is back."""
        until(lambda: not any(p.busy() for p in self.phones), SEE_TIMEOUT_S)
        time.sleep(0.5)

    def tallies(self) -> tuple[int, int, bool]:
        """(ballots counted by the store, ballots the phones hold, every tally exact)."""
        expected: dict = {}
        for p in self.phones:
            for key, option in p.last_vote.items():
                expected.setdefault(key, {}).setdefault(option, 0)
                expected[key][option] += 1
        counted, exact = 0, True
        for key in {(q, r) for q, r, _ in self.opened}:
            tally = self.store.tally(self.info.code, *key)
            counted += sum(tally.values())
            exact &= {o: n for o, n in tally.items() if n} == expected.get(key, {})
        return counted, sum(len(p.last_vote) for p in self.phones), exact

    def errors(self) -> list[str]:
        return [e for p in self.phones for e in p.errors]

    def stop(self) -> None:
        for phone in self.phones:
            phone.stop.set()
        for phone in self.phones:
            phone.join(10)


def delays_line(what: str, delays: list[float]) -> str:
    return (f"{what}: median {statistics.median(delays):.2f} s, p95 {percentile(delays, 0.95):.2f} s, "
            f"max {max(delays):.2f} s (n = {len(delays)})")


def backend(stack: ExitStack, postgres: bool) -> tuple[str, str]:
    """(store URL, its description): a throwaway PostgreSQL as `make test` starts it, or a SQLite file."""
    if postgres:
        return stack.enter_context(temporary_postgres()), "PostgreSQL (temporary server, fsync on)"
    folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="specdec-class-load-"))
    return f"sqlite:///{folder}/class.sqlite3", "SQLite (temporary file, WAL)"


def started(stack: ExitStack, url: str, log: Path, port: int | None = None) -> serve.Server:
    return stack.enter_context(serve.Server(log, port=port, env={"SPECDEC_CLASS_DB": url}, address="127.0.0.1"))


def run_room(phones: int, questions: int, change: float, cpu_s: float, postgres: bool, seed: int = 0) -> bool:
    """The room run (module docstring); True when every vote counted, no phone missed a vote, no request
    failed and the server logged no traceback."""
    with ExitStack() as stack:
        url, described = backend(stack, postgres)
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="specdec-class-log-")))
        server = started(stack, url, folder / "server.log")
        store = classroom.open_store(url)
        stack.callback(store.close)
        ids = [q.id for q in store.bank.questions if q.demo is None][:questions]
        room = Room(store, store.create_class(ids), server)
        pid = server.proc.pid
        room.say(f"{phones} phones, {described}, {os.cpu_count()} CPU cores; load average {load():.2f}")
        t0, c0 = time.monotonic(), cpu_seconds(pid)
        time.sleep(cpu_s)
        idle = (cpu_seconds(pid) - c0) / (time.monotonic() - t0)
        room.join(phones, change, seed)
        for p in room.phones:
            p.autovote = False
        seen = room.open_vote(ids[0], 1)
        time.sleep(2 * 1.5)
        t0, c0, l0 = time.monotonic(), cpu_seconds(pid), load()
        time.sleep(cpu_s)
        waiting = (cpu_seconds(pid) - c0) / (time.monotonic() - t0)
        room.say(f"waiting on an open vote: server CPU {waiting:.1%} of a core ({(waiting - idle) / phones:.3%} a "
                 f"phone; idle {idle:.1%}); load average {l0:.2f} → {load():.2f}")
        for p in room.phones:
            p.autovote = True
        moves = []
        for i, qid in enumerate(ids):
            rounds = (1, 2) if i + 1 < len(ids) else (1,)
            for round_ in rounds:
                if (i, round_) != (0, 1):
                    l0 = load()
                    seen += room.open_vote(qid, round_)
                    moves.append(l0)
                else:  # the first vote is open: the phones plan their votes now
                    for p in room.phones:
                        p.seen.pop((qid, 1), None)
                    room.store.close_vote(room.info.code, room.info.teacher_key)
                    room.opened.pop()
                    seen = room.open_vote(qid, 1)
                room.settle()
                if round_ == 2 or i + 1 < len(ids):
                    room.store.reveal(room.info.code, room.info.teacher_key)
                    time.sleep(1.0)
        room.say(delays_line("a phone holds the teacher's next vote", seen) + f"; missed {room.missed}")
        counted, held, exact = room.tallies()
        cast = sum(p.cast for p in room.phones)
        room.say(f"every phone votes, {change:.0%} change once: votes cast {cast}, ballots counted {counted} of "
                 f"{held} the phones hold; tallies exact: {'yes' if exact else 'no'}")
        # The rush: the last question's vote is open and voted; a revote, every phone's vote sent within 1 s.
        for p in room.phones:
            p.autovote = False
        room.open_vote(ids[-1], 2)
        time.sleep(1.5)
        acks_before = [len(p.acks) for p in room.phones]
        l0, start = load(), time.monotonic() + 1.0
        for p in room.phones:
            p.rush(start + p.rng.uniform(0, 1.0), ids[-1], 2, p.rng.randrange(2))
        room.settle()
        acks = [a for p, n in zip(room.phones, acks_before) for a in p.acks[n:]]
        sent = [s for s, _ in acks]
        counted, held, exact = room.tallies()
        rush_tally = sum(store.tally(room.info.code, ids[-1], 2).values())
        room.say(delays_line(f"vote rush ({len(acks)} votes sent within {max(sent) - min(sent):.2f} s): acknowledged",
                             [d for _, d in acks]) + f"; counted {rush_tally} of {phones}; load average {l0:.2f}")
        room.say(f"all votes: ballots counted {counted} of {held}; tallies exact: {'yes' if exact else 'no'}")
        room.stop()
        errors = room.errors()
        log = server.log()
        requests = sum(p.requests for p in room.phones)
        room.say(f"requests {requests}, failed {len(errors)}; tracebacks in the server log: {log.count('Traceback')}; "
                 f"load average {load():.2f}")
        for error in errors[:10]:
            room.say(f"error: {error}")
        return exact and counted == held and rush_tally == phones and not room.missed and not errors \
            and "Traceback" not in log


def reload_teacher(url: str, code: str, key: str) -> str:
    """The teacher's page opened, the class resumed with its code and key, reloaded and resumed again,
    in headless Chromium; returns the "Students joined" the page shows after the reload."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=serve.CHROMIUM, args=[*serve.CHROMIUM_ARGS, "--disable-dev-shm-usage"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            shown = ""
            for _ in range(2):  # open, then a reload: each time the session starts afresh and resumes
                page.goto(f"{url}/class", timeout=120_000) if not shown else page.reload(timeout=120_000)
                serve.wait_idle(page, 120_000)
                page.get_by_text("Resume a class after a reload").click()
                page.get_by_label("Class code", exact=True).fill(code)
                page.get_by_label("Teacher key", exact=True).fill(key)
                page.get_by_role("button", name="Resume the class").click()
                metric = page.locator('[data-testid="stMetric"]', has_text="Students joined")
                metric.wait_for(timeout=120_000)
                shown = metric.locator('[data-testid="stMetricValue"]').inner_text()
            return shown
        finally:
            browser.close()


def run_lesson(phones: int, questions: int | None, change: float, postgres: bool, browser: bool = True,
               seed: int = 0) -> bool:
    """The lesson run (module docstring); True when every ballot counted exactly, every phone held every
    vote (none stuck on an old question after the restart), no request failed outside the restart, no
    traceback was logged, and the server's memory grew at most 10% from its second question to its last."""
    with ExitStack() as stack:
        url, described = backend(stack, postgres)
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="specdec-class-log-")))
        server = serve.Server(folder / "server-1.log", env={"SPECDEC_CLASS_DB": url}, address="127.0.0.1")
        server.wait_healthy()
        store = classroom.open_store(url)
        stack.callback(store.close)
        ids = [q.id for q in store.bank.questions if q.demo is None][:questions]
        room = Room(store, store.create_class(ids), server)
        code, key = room.info.code, room.info.teacher_key
        room.say(f"lesson: {phones} phones, {len(ids)} questions, {described}; load average {load():.2f}")
        room.join(phones, change, seed)
        store.lock(code, key)  # the room is in
        middle = len(ids) // 2
        rss: list[tuple[int, int, float]] = []  # (question number, server process number, MiB)
        seen_all: list[float] = []
        logs = []
        process = 1
        outage = 0
        try:
            for i, qid in enumerate(ids):
                if i == middle:
                    if browser:
                        shown = reload_teacher(server.url, code, key)
                        room.say(f"the teacher's page reloaded at question {i + 1}: it shows {shown} students joined")
                        if shown != str(phones):
                            room.errors_extra = [f"teacher's page shows {shown} joined"]
                    for p in room.phones:
                        p.down = True
                    logs.append(server.log())
                    server.stop()
                    down = time.monotonic()
                    server = serve.Server(folder / "server-2.log", port=server.port, env={"SPECDEC_CLASS_DB": url},
                                          address="127.0.0.1")
                    server.wait_healthy()
                    process += 1
                    time.sleep(2 * 1.5)  # every phone polls the new server at least once
                    for p in room.phones:
                        p.down = False
                    outage = sum(len(p.outage) for p in room.phones)
                    stuck = sum(p.question != (ids[i - 1], 2) for p in room.phones)
                    room.say(f"server restarted after question {i}: down {time.monotonic() - down:.0f} s, "
                             f"{outage} requests failed while it was down; phones still on question {i} round 2: "
                             f"{phones - stuck} of {phones}")
                rss.append((i + 1, process, rss_mib(server.proc.pid)))
                for round_ in (1, 2):
                    seen_all += room.open_vote(qid, round_)
                    room.settle()
                    room.store.reveal(code, key)
                    if round_ == 1 and i % 2 == 0:
                        room.store.show_answer(code, key, qid)
                    time.sleep(0.5)
                stuck = sum(p.question != (qid, 2) for p in room.phones)
                if stuck:
                    room.say(f"question {i + 1}: {stuck} phones do not show its revote")
            rss.append((len(ids) + 1, process, rss_mib(server.proc.pid)))
        finally:
            room.stop()
            logs.append(server.log())
            server.stop()
        room.say(delays_line("a phone holds the teacher's next vote", seen_all) + f"; missed {room.missed}")
        counted, held, exact = room.tallies()
        expected = len(ids) * 2 * phones
        cast = sum(p.cast for p in room.phones)
        room.say(f"ballots: expected {expected} (every phone, every question, both rounds), the phones hold {held}, "
                 f"the store counts {counted}; votes cast {cast} (changes included); tallies exact: "
                 f"{'yes' if exact else 'no'}")
        room.say("server RSS (MiB) at the start of each question and after the last, * process 2 (after the restart): "
                 + ", ".join(f"q{q}:{m:.0f}" + ("*" if n == 2 else "") for q, n, m in rss))
        growth = []
        for n in (1, 2):
            series = [m for _, pn, m in rss if pn == n]
            if len(series) >= 3:
                growth.append((n, series[1], series[-1], series[-1] / series[1] - 1))
        for n, first, last, g in growth:
            room.say(f"process {n}: RSS {first:.0f} MiB at its second question → {last:.0f} MiB at its last "
                     f"reading: {g:+.1%}")
        errors = room.errors() + getattr(room, "errors_extra", [])
        tracebacks = sum(log.count("Traceback") for log in logs)
        room.say(f"requests {sum(p.requests for p in room.phones)}, failed outside the restart {len(errors)} "
                 f"(during it {outage}); tracebacks in the server logs: {tracebacks}; load average {load():.2f}")
        for error in errors[:10]:
            room.say(f"error: {error}")
        return (exact and counted == held == expected and not room.missed and not errors and not tracebacks
                and all(g <= 0.10 for *_, g in growth))
