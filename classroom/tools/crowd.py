"""A simulated room, for the concurrency test and scripts/class_load.py: students join one class and vote
from several OS processes at once (each with its own store on the same URL, as several server processes
would), some changing their vote, while the teacher opens round 1, closes it, opens the revote (round 2)
and the projector polls the tally. Bounded: every wait has a timeout and every worker a deadline.
"""
import multiprocessing
import queue
import random
import statistics
import threading
import time
from dataclasses import dataclass, field

from classroom.questions import Bank, bank_from
from classroom.store import Store

QUESTION = {"id": "crowd-q", "kind": "choice", "chapter": "chapters/home.py", "prompt": "Which one?",
            "options": ["A", "B", "C", "D"], "answer": 0, "explanation": "A load test's question."}
ROUNDS = (1, 2)


@dataclass
class Report:
    """What a room measured: counts, the tally against the votes the students last cast, latencies (s)."""
    students: int
    processes: int
    seconds: float = 0.0
    votes: int = 0  # accepted vote calls (changes included)
    expected: dict = field(default_factory=dict)  # round -> {option: count} from the students' last votes
    tallies: dict = field(default_factory=dict)  # round -> the store's tally
    latencies: dict = field(default_factory=lambda: {"join": [], "vote": [], "tally": []})
    errors: list = field(default_factory=list)

    @property
    def exact(self) -> bool:
        """Whether every round's tally equals the students' last votes."""
        return not self.errors and self.tallies == self.expected

    @property
    def lost(self) -> int:
        """Votes the students cast last that the tally does not hold (negative: counted twice)."""
        return sum(sum(self.expected[r].values()) - sum(self.tallies.get(r, {}).values()) for r in self.expected)

    def summary(self) -> dict:
        """Medians and maxima in milliseconds, throughput, and the verdicts."""
        out = {"students": self.students, "processes": self.processes, "seconds": round(self.seconds, 2),
               "votes": self.votes, "votes_per_s": round(self.votes / self.seconds, 1) if self.seconds else 0.0}
        for name, values in self.latencies.items():
            if values:
                out[f"{name}_ms"] = {"n": len(values), "median": round(1000 * statistics.median(values), 1),
                                     "max": round(1000 * max(values), 1)}
        out.update(exact=self.exact, lost=self.lost, errors=self.errors[:5])
        return out


def _student_votes(rng: random.Random, change: float) -> list[int]:
    """The options one student sends in one round: one, or two when the student changes their mind."""
    first = rng.randrange(len(QUESTION["options"]))
    if rng.random() < change:
        return [first, (first + 1 + rng.randrange(len(QUESTION["options"]) - 1)) % len(QUESTION["options"])]
    return [first]


def _worker(url, code, n_students, seed, change, spread, barrier, results, timeout):
    """One process's students: join, vote in round 1, wait for the revote, vote in round 2. With `spread`
    seconds, each of the three phases is paced over about a third of it (0: everyone at once)."""
    out = {"join": [], "vote": [], "last": {r: [] for r in ROUNDS}, "votes": 0, "errors": []}
    try:
        store = Store(url, Bank(()))  # workers never create a class: no bank needed
        rng = random.Random(seed)
        gap = spread / (len(ROUNDS) + 1) / max(1, n_students)

        def pause():
            if gap:
                time.sleep(rng.uniform(0, 2 * gap))

        barrier.wait(timeout)  # every process starts at once
        ids = []
        for _ in range(n_students):
            pause()
            start = time.perf_counter()
            ids.append(store.join(code))
            out["join"].append(time.perf_counter() - start)
        for round in ROUNDS:
            for sid in ids:
                pause()
                sent = _student_votes(rng, change)
                for option in sent:
                    start = time.perf_counter()
                    store.vote(code, sid, QUESTION["id"], option, round=round)
                    out["vote"].append(time.perf_counter() - start)
                    out["votes"] += 1
                out["last"][round].append(sent[-1])
            barrier.wait(timeout)  # this round's votes are in
            if round != ROUNDS[-1]:
                barrier.wait(timeout)  # the teacher has opened the next round
        store.close()
    except Exception as err:  # reported to the parent, which counts the room as not exact
        out["errors"].append(f"{type(err).__name__}: {err}")
        barrier.abort()
    results.put(out)


def _next_result(results, workers, timeout: float) -> dict | None:
    """The next worker's result, or None once `timeout` has passed or every worker has ended without
    sending one (a worker that died does not keep the teacher waiting out the whole timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        everyone_ended = not any(w.is_alive() for w in workers)
        try:
            return results.get(timeout=1.0)
        except queue.Empty:
            if everyone_ended:
                return None
    return None


def run_room(url: str, students: int = 60, processes: int = 5, change: float = 0.3, seed: int = 0,
             spread: float = 0.0, timeout: float = 60.0) -> Report:
    """Run a room on the store at `url`; returns its Report. The teacher and projector are this process.
    `change`: the share of students who change their vote in a round; `spread`: seconds over which the
    joins and both rounds' votes are paced (0: all at once, the worst case)."""
    store = Store(url, bank_from([QUESTION]))
    info = store.create_class([QUESTION["id"]])
    report = Report(students, processes)
    report.expected = {r: dict.fromkeys(range(len(QUESTION["options"])), 0) for r in ROUNDS}
    store.open_vote(info.code, info.teacher_key, QUESTION["id"], round=1)
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter per worker, as a separate server would be
    barrier, results = ctx.Barrier(processes + 1), ctx.Queue()
    shares = [students // processes + (i < students % processes) for i in range(processes)]
    workers = [ctx.Process(target=_worker, args=(url, info.code, n, seed * 1000 + i, change, spread, barrier, results,
                                                      timeout))
               for i, n in enumerate(shares)]
    for w in workers:
        w.start()
    polling = threading.Event()

    def projector(round):  # the room's screen refreshing while votes arrive
        while not polling.wait(0.05):
            start = time.perf_counter()
            store.tally(info.code, QUESTION["id"], round=round)
            report.latencies["tally"].append(time.perf_counter() - start)

    try:
        barrier.wait(timeout)
        started = time.perf_counter()
        for round in ROUNDS:
            polling.clear()
            screen = threading.Thread(target=projector, args=(round,), daemon=True)
            screen.start()
            barrier.wait(timeout)
            polling.set()
            screen.join()
            store.close_vote(info.code, info.teacher_key)
            if round != ROUNDS[-1]:
                store.open_vote(info.code, info.teacher_key, QUESTION["id"], round=round + 1)
                barrier.wait(timeout)
        report.seconds = time.perf_counter() - started
    except threading.BrokenBarrierError:
        report.errors.append("a worker failed or the room timed out")
    finally:
        polling.set()
        for _ in workers:
            out = _next_result(results, workers, timeout)
            if out is None:
                report.errors.append("a worker sent no result")
                continue
            report.latencies["join"] += out["join"]
            report.latencies["vote"] += out["vote"]
            report.votes += out["votes"]
            report.errors += out["errors"]
            for round, last in out["last"].items():
                for option in last:
                    report.expected[round][option] += 1
        for w in workers:
            w.join(timeout)
            if w.is_alive():
                w.terminate()
    report.tallies = {r: store.tally(info.code, QUESTION["id"], round=r) for r in ROUNDS}
    store.close()
    return report
