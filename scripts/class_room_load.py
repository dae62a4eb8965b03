"""A room of N phones on one real server, driven the way the phone page talks to it (classroom/web: the
page, a join, a state poll every POLL_S with the ETag it holds, a vote as one POST), from threads of this
process: no browsers, so 60 phones fit beside the server on a small machine.

    .venv/bin/python scripts/class_room_load.py --phones 60 --questions 3          the full run (docs/class_mode.md)
    .venv/bin/python scripts/class_room_load.py --phones 4 --questions 1 --no-race a quick check (the tests)

It starts the app as `make run` does (tests/serve.py, SQLite class store in a temporary folder), and:
1. times a teacher's race (the Wall-Clock Race page in headless Chromium, Race pressed) alone;
2. N phones open the join link's page and join; the server's CPU over a window while they all wait,
   against the same window before they joined: the cost of a waiting phone;
3. the teacher (this process, through the class store, as the teacher's buttons do) runs each question:
   opens the vote, the phones see it, vote after a moment, some change their vote; reveal; the second
   vote (every phone votes again); reveal; next question. A second race runs while question 2 is open;
4. a third race alone, after the room (alone / with the room / alone: the machine's drift shows).

Reports the time from the teacher's move until each phone holds the new question (median, p95, max over
every phone and every vote opened), votes cast (accepted POSTs, changes included) and ballots counted by
the store against the phones' own last votes, the race's times, the server's CPU per phone, and the
machine's load average. Exit status 0 only when every vote counted, no phone missed a question and no
request failed.
"""
import argparse
import http.client
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import classroom  # noqa: E402
from classroom import web  # noqa: E402
from tests import serve  # noqa: E402
from ui.server import class_demos  # noqa: E402

SEE_TIMEOUT_S = 60  # a phone that has not seen a vote opened this long ago has missed it
RACE_TIMEOUT_MS = 600_000
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


class SimPhone(threading.Thread):
    """One phone: its own keep-alive connection and cookie; polls, sees each vote opened, votes after a
    moment (and with probability `change`, changes its vote a moment later)."""

    def __init__(self, index: int, host: str, port: int, code: str, poll_s: float, change: float, seed: int):
        super().__init__(daemon=True, name=f"phone-{index}")
        self.host, self.port, self.code, self.poll_s, self.change = host, port, code, poll_s, change
        self.rng = random.Random(seed)
        self.conn = http.client.HTTPConnection(host, port, timeout=60)
        self.cookie = None
        self.etag = None
        self.seen: dict[tuple[str, int], float] = {}  # (question, round) -> when this phone first held it open
        self.last_vote: dict[tuple[str, int], int] = {}  # the last accepted vote, per question and round
        self.planned: list[tuple[float, str, int, int]] = []  # (when, question, round, option)
        self.cast = 0  # accepted vote POSTs (changes included)
        self.errors: list[str] = []
        self.requests = 0
        self.stop = threading.Event()

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict | None]:
        headers = {"Accept": "application/json"}
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
            except (ConnectionError, http.client.HTTPException):
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

    def open_page(self) -> None:
        for path in (f"{web.PATH}?join={self.code}", f"{web.PATH}/phone.js", f"{web.PATH}/phone.css"):
            status, _ = self.call("GET", path)
            if status != 200:
                self.errors.append(f"GET {path}: {status}")

    def join_class(self) -> None:
        status, state = self.call("POST", f"{web.PATH}/api/join", {"code": self.code})
        if status != 200 or not state.get("joined"):
            self.errors.append(f"join: {status} {state}")
        else:
            self.look(state)

    def look(self, state: dict) -> None:
        """A state arrived: a vote this phone had not seen open is planned (a student reads, then taps)."""
        q = state.get("question")
        if not q or not state.get("open"):
            return
        key = (q["id"], state["round"])
        if key in self.seen:
            return
        now = time.monotonic()
        self.seen[key] = now
        options = len(q["options"])
        first = now + self.rng.uniform(0.5, 4.0)
        self.planned.append((first, q["id"], state["round"], self.rng.randrange(options)))
        if self.rng.random() < self.change:
            self.planned.append((first + self.rng.uniform(0.5, 3.0), q["id"], state["round"], self.rng.randrange(options)))
        self.planned.sort()

    def vote(self, question: str, round_: int, option: int) -> None:
        status, state = self.call("POST", f"{web.PATH}/api/vote",
                                  {"code": self.code, "question": question, "round": round_, "option": option})
        if status == 200:
            self.cast += 1
            self.last_vote[(question, round_)] = option
            self.look(state)
        elif status != 409:  # 409: the vote closed before this phone's tap (a late student), not an error
            self.errors.append(f"vote: {status} {state}")

    def busy(self) -> bool:
        return bool(self.planned)

    def run(self) -> None:
        next_poll = time.monotonic() + self.rng.uniform(0, self.poll_s)  # phones joined at different moments
        while not self.stop.is_set():
            now = time.monotonic()
            if self.planned and self.planned[0][0] <= min(now, next_poll):
                _, question, round_, option = self.planned.pop(0)
                self.vote(question, round_, option)
                continue
            if now >= next_poll:
                try:
                    status, state = self.call("GET", f"{web.PATH}/api/state?code={self.code}")
                    if status == 200:
                        self.look(state)
                    elif status != 304:
                        self.errors.append(f"state: {status} {state}")
                except OSError as err:
                    self.errors.append(f"state: {err}")
                next_poll += self.poll_s
                continue
            wake = min(next_poll, self.planned[0][0]) if self.planned else next_poll
            self.stop.wait(max(0.0, wake - time.monotonic()))
        self.conn.close()


class Race:
    """A teacher's race on the Wall-Clock Race page, in headless Chromium: page opened, Race pressed, the
    seconds until the race's chart is drawn and the page is idle."""

    def __init__(self, url: str, max_new: int):
        from playwright.sync_api import sync_playwright
        self.url, self.max_new = url, max_new
        self.playwright = sync_playwright().start()
        self.browser = self.playwright.chromium.launch(executable_path=serve.CHROMIUM,
                                                       args=[*serve.CHROMIUM_ARGS, "--disable-dev-shm-usage"])

    def run(self, seed: int) -> float:
        query = urllib.parse.urlencode({"temp": "1", "seed": seed, "max_new": self.max_new, "gamma": 4})
        ctx = self.browser.new_context(viewport={"width": 1280, "height": 900})
        try:
            page = ctx.new_page()
            page.goto(f"{self.url}/race?{query}", timeout=RACE_TIMEOUT_MS)
            page.wait_for_selector(".st-key-race_run button", timeout=RACE_TIMEOUT_MS)
            serve.wait_idle(page, RACE_TIMEOUT_MS)
            start = time.monotonic()
            page.locator(".st-key-race_run button").first.click()
            page.wait_for_selector(".st-key-race_chart", timeout=RACE_TIMEOUT_MS)
            serve.wait_idle(page, RACE_TIMEOUT_MS, after_action=True)
            return time.monotonic() - start
        finally:
            ctx.close()

    def close(self) -> None:
        self.browser.close()
        self.playwright.stop()


class Teacher(threading.Thread):
    """The teacher's moves through the store: each question's first vote, reveal, second vote, reveal.
    `opened` holds (question, round, when) of each vote opened; `middle` is set when question 2 opens."""

    def __init__(self, store, info, phones: list[SimPhone]):
        super().__init__(daemon=True, name="teacher")
        self.store, self.info, self.phones = store, info, phones
        self.opened: list[tuple[str, int, float]] = []
        self.middle = threading.Event()
        self.missed = 0
        self.error: BaseException | None = None

    def wait(self, check, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if check():
                return True
            time.sleep(0.05)
        return False

    def run(self) -> None:
        try:
            code, key = self.info.code, self.info.teacher_key
            for i, qid in enumerate(self.store.state(code).question_ids):
                for round_ in (1, 2):
                    when = time.monotonic()
                    self.store.open_vote(code, key, qid, round_)
                    self.opened.append((qid, round_, when))
                    if i == 1 and round_ == 1:
                        self.middle.set()
                    if not self.wait(lambda key=(qid, round_): all(key in p.seen for p in self.phones), SEE_TIMEOUT_S):
                        self.missed += sum((qid, round_) not in p.seen for p in self.phones)
                    self.wait(lambda: not any(p.busy() for p in self.phones), SEE_TIMEOUT_S)
                    time.sleep(0.3)  # the last votes' answers on their way back
                    self.store.reveal(code, key)
                    time.sleep(1.0)  # the room looks at the counts
            self.middle.set()
        except BaseException as err:  # reported by the main thread
            self.error = err
            self.middle.set()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--phones", type=int, default=60, help="phones in the room (1-300)")
    ap.add_argument("--questions", type=int, default=3, help="questions, each voted twice (1-12)")
    ap.add_argument("--change", type=float, default=0.3, help="share of phones that change their vote in a round")
    ap.add_argument("--cpu-seconds", type=float, default=20.0, help="the CPU windows (idle, then phones waiting)")
    ap.add_argument("--no-race", action="store_true", help="no teacher's race (no browser at all)")
    ap.add_argument("--max-new", type=int, default=60, help="tokens the race generates")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if not 1 <= args.phones <= 300 or not 1 <= args.questions <= 12 or not 0 <= args.change <= 1:
        ap.error("--phones 1-300, --questions 1-12, --change 0-1")

    tmp = Path(tempfile.mkdtemp(prefix="specdec-class-room-"))
    url = f"sqlite:///{tmp / 'class.sqlite3'}"
    store = classroom.open_store(url, bank=class_demos.bank())
    info = store.create_class([q.id for q in store.bank.questions if q.demo is None][:args.questions])
    races: dict[str, list[float]] = {"alone": [], "with the room": []}
    with serve.Server(tmp / "server.log", env={"SPECDEC_CLASS_DB": url}, address="127.0.0.1") as server:
        pid, port = server.proc.pid, server.port
        race = None if args.no_race else Race(server.url, args.max_new)
        try:
            if race:
                race.run(seed=1000)  # warm-up: the first race loads the pair
                races["alone"].append(race.run(seed=1001))
            t0, c0 = time.monotonic(), cpu_seconds(pid)
            time.sleep(args.cpu_seconds)
            idle = (cpu_seconds(pid) - c0) / (time.monotonic() - t0)
            phones = [SimPhone(i, "127.0.0.1", port, info.code, web.POLL_S, args.change, seed=args.seed * 1000 + i)
                      for i in range(args.phones)]
            for phone in phones:
                phone.open_page()
                phone.join_class()
            for phone in phones:
                phone.start()
            time.sleep(2 * web.POLL_S)
            load_before = os.getloadavg()[0]
            t0, c0 = time.monotonic(), cpu_seconds(pid)
            time.sleep(args.cpu_seconds)
            waiting = (cpu_seconds(pid) - c0) / (time.monotonic() - t0)
            t0, c0 = time.monotonic(), cpu_seconds(pid)
            teacher = Teacher(store, info, phones)
            teacher.start()
            teacher.middle.wait()
            if race and teacher.is_alive():
                races["with the room"].append(race.run(seed=1002))
            teacher.join()
            active = (cpu_seconds(pid) - c0) / (time.monotonic() - t0)
            room_seconds = time.monotonic() - t0
            load_after = os.getloadavg()[0]
            for phone in phones:
                phone.stop.set()
            for phone in phones:
                phone.join(10)
            if race:
                races["alone"].append(race.run(seed=1003))
        finally:
            if race:
                race.close()
        log = server.log()
    if teacher.error:
        raise teacher.error

    delays = [p.seen[(q, r)] - when for q, r, when in teacher.opened for p in phones if (q, r) in p.seen]
    per_move = [max(p.seen.get((q, r), float("inf")) for p in phones) - when for q, r, when in teacher.opened]
    expected = {}
    for p in phones:
        for (q, r), option in p.last_vote.items():
            expected.setdefault((q, r), {}).setdefault(option, 0)
            expected[(q, r)][option] += 1
    counted, exact = 0, True
    for q, r, _ in teacher.opened:
        tally = store.tally(info.code, q, r)
        counted += sum(tally.values())
        exact &= {o: n for o, n in tally.items() if n} == expected.get((q, r), {})
    ballots = sum(len(p.last_vote) for p in phones)
    cast = sum(p.cast for p in phones)
    errors = [e for p in phones for e in p.errors]
    requests = sum(p.requests for p in phones)
    print(f"{args.phones} phones, {args.questions} question(s) voted twice, {args.change:.0%} change their vote; "
          f"{os.cpu_count()} CPU cores, load average {load_before:.1f} → {load_after:.1f}; room {room_seconds:.0f} s, "
          f"{requests} requests")
    print(f"a phone holds the teacher's next vote: median {statistics.median(delays):.2f} s, "
          f"p95 {percentile(delays, 0.95):.2f} s, max {max(delays):.2f} s "
          f"(n = {len(delays)}; every phone, slowest per move: {', '.join(f'{d:.1f}' for d in per_move)} s); "
          f"missed {teacher.missed}")
    print(f"votes cast {cast} (accepted POSTs, changes included); ballots counted {counted} of {ballots} "
          f"the phones hold; tallies exact: {'yes' if exact else 'no'}")
    print(f"server CPU: idle {idle:.1%} of a core, {args.phones} phones waiting {waiting:.1%} "
          f"({(waiting - idle) / args.phones:.2%} per waiting phone), during the room {active:.1%} "
          f"({(active - idle) / args.phones:.2%} per phone{', the race included' if race else ''})")
    if race:
        alone, during = races["alone"], races["with the room"]
        slowdown = f"; slowdown {during[0] / statistics.mean(alone):.2f}× the mean alone" if during else ""
        print(f"teacher's race (max_new {args.max_new}): alone {', '.join(f'{s:.1f}' for s in alone)} s, "
              f"with the room {', '.join(f'{s:.1f}' for s in during) or '(the room ended first)'} s{slowdown}")
    print(f"request errors: {len(errors)}; tracebacks in the server log: {log.count('Traceback')}")
    for error in errors[:10]:
        print("error:", error)
    ok = exact and counted == ballots and not teacher.missed and not errors and "Traceback" not in log
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
