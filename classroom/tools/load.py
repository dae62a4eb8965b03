"""The class load command: one entry for every class-mode load run (see README.md beside it).

    python -m classroom.tools.load room   --phones 300 [--postgres]   a room on the app (room.py)
    python -m classroom.tools.load lesson --phones 300 [--postgres]   a whole lesson, reload and restart (room.py)
    python -m classroom.tools.load flood  [--url URL --code CODE]     one address joining in a loop, a minute
    python -m classroom.tools.load store  --students 60 [--postgres]  the store alone, several processes (crowd.py)

Exit status 0 only when the run's checks hold (every vote counted, nothing failed; see each mode).
"""
import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.parse
from contextlib import ExitStack
from pathlib import Path

import classroom
from classroom import web

from .crowd import run_room as store_room
from .pg import temporary_postgres
from .room import run_lesson, run_room, started


def bounded(low, high):
    """An argparse type: a number of low's type within [low, high]."""
    def parse(text):
        value = type(low)(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}")
        return value
    return parse


def flood(url: str, code: str, seconds: float) -> dict:
    """One client, one address, no cookie kept: POST a join in a loop for `seconds` (or until the class is
    full); counts the seats it took and the answers it got."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    body = json.dumps({"code": code})
    statuses: dict[int, int] = {}
    sample = {}
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        conn.request("POST", f"{web.PATH}/api/join", body=body, headers={"Content-Type": "application/json"})
        answer = conn.getresponse()
        raw = answer.read()
        statuses[answer.status] = statuses.get(answer.status, 0) + 1
        sample.setdefault(answer.status, raw[:200].decode(errors="replace"))
        if answer.status == 429 and b"full" in raw:
            break
    return {"seats": statuses.get(200, 0), "requests": sum(statuses.values()), "statuses": statuses,
            "seconds": round(time.monotonic() - start, 1), "answers": sample}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m classroom.tools.load", description=__doc__.split("\n\n")[0])
    modes = ap.add_subparsers(dest="mode", required=True)
    room = modes.add_parser("room", help="a room of phones on the app")
    room.add_argument("--phones", type=bounded(1, classroom.MAX_STUDENTS), default=60)
    room.add_argument("--questions", type=bounded(1, 12), default=3)
    room.add_argument("--change", type=bounded(0.0, 1.0), default=0.3, help="share of phones that change their vote")
    room.add_argument("--cpu-seconds", type=bounded(1.0, 120.0), default=20.0, help="the CPU windows")
    room.add_argument("--postgres", action="store_true", help="a throwaway PostgreSQL server, not a SQLite file")
    room.add_argument("--seed", type=int, default=0)
    lesson = modes.add_parser("lesson", help="a whole lesson: every question, the teacher's reload, a restart")
    lesson.add_argument("--phones", type=bounded(1, classroom.MAX_STUDENTS), default=300)
    lesson.add_argument("--questions", type=bounded(2, 100), default=None, help="default: the whole class quiz")
    lesson.add_argument("--change", type=bounded(0.0, 1.0), default=0.3)
    lesson.add_argument("--postgres", action="store_true")
    lesson.add_argument("--no-browser", action="store_true", help="no teacher's page reload (no Chromium)")
    lesson.add_argument("--seed", type=int, default=0)
    fl = modes.add_parser("flood", help="one address joining in a loop, its cookie dropped")
    fl.add_argument("--url", help="a running server (default: start the app on a temporary SQLite store)")
    fl.add_argument("--code", help="the class to flood (with --url)")
    fl.add_argument("--seconds", type=bounded(1.0, 120.0), default=60.0)
    store = modes.add_parser("store", help="the store alone: students vote from several OS processes at once")
    store.add_argument("--postgres", action="store_true")
    store.add_argument("--url", help="a SQLite URL (default: a temporary file)")
    store.add_argument("--students", type=bounded(1, 2000), default=60)
    store.add_argument("--processes", type=bounded(1, 16), default=5)
    store.add_argument("--change", type=bounded(0.0, 1.0), default=0.3)
    store.add_argument("--spread", type=bounded(0.0, 60.0), default=0.0, help="seconds to pace the room over")
    store.add_argument("--rooms", type=bounded(1, 10), default=3)
    store.add_argument("--timeout", type=bounded(5.0, 300.0), default=60.0)
    args = ap.parse_args(argv)

    if args.mode == "room":
        return 0 if run_room(args.phones, args.questions, args.change, args.cpu_seconds, args.postgres, args.seed) else 1
    if args.mode == "lesson":
        return 0 if run_lesson(args.phones, args.questions, args.change, args.postgres, not args.no_browser,
                               args.seed) else 1
    if args.mode == "flood":
        return run_flood(ap, args)
    return run_store(ap, args)


def run_flood(ap, args) -> int:
    if bool(args.url) != bool(args.code):
        ap.error("--url and --code go together")
    with ExitStack() as stack:
        url, code = args.url, args.code
        if not url:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="specdec-class-flood-"))
            db = f"sqlite:///{folder}/class.sqlite3"
            server = started(stack, db, Path(folder) / "server.log")
            store = classroom.open_store(db)
            stack.callback(store.close)
            url, code = server.url, store.create_class([store.bank.questions[0].id]).code
        load = os.getloadavg()[0]
        out = flood(url, code, args.seconds)
    print(f"join flood from one address, cookie dropped, {out['seconds']} s: {out['seats']} seats taken in "
          f"{out['requests']} requests; answers {out['statuses']}; load average {load:.2f}")
    for status, text in out["answers"].items():
        print(f"  {status}: {text}")
    return 0


def run_store(ap, args) -> int:
    with ExitStack() as stack:
        if args.postgres:
            url, backend = stack.enter_context(temporary_postgres()), "PostgreSQL (temporary server, fsync on)"
        elif args.url:
            if not args.url.startswith("sqlite:///"):
                ap.error("--url must be a SQLite file URL (PostgreSQL: --postgres)")
            url, backend = args.url, "SQLite"
        else:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="class-load-"))
            url, backend = f"sqlite:///{folder}/class.sqlite3", "SQLite (temporary file, WAL)"
        rooms = [store_room(url, args.students, args.processes, args.change, seed=i, spread=args.spread,
                            timeout=args.timeout).summary() for i in range(args.rooms)]
    print(f"{backend}: {args.students} students from {args.processes} processes, {args.change:.0%} change their vote, "
          f"spread {args.spread:g} s, {args.rooms} rooms; load average {os.getloadavg()[0]:.2f}")
    rate = [r["votes_per_s"] for r in rooms]
    print(f"votes/s               median {statistics.median(rate):8.1f}   range {min(rate):.1f}–{max(rate):.1f}")
    for name in ("join", "vote", "tally"):
        medians = [r[f"{name}_ms"]["median"] for r in rooms if f"{name}_ms" in r]
        maxima = [r[f"{name}_ms"]["max"] for r in rooms if f"{name}_ms" in r]
        if medians:
            print(f"{name:<6} latency (ms)   median {statistics.median(medians):8.1f}   max {max(maxima):.1f}"
                  f"   (room medians {min(medians):.1f}–{max(medians):.1f})")
    exact = all(r["exact"] for r in rooms)
    print(f"tally exact: {'yes' if exact else 'no'}   lost votes: {sum(r['lost'] for r in rooms)}   "
          f"votes sent: {sum(r['votes'] for r in rooms)}")
    for r in rooms:
        for error in r["errors"]:
            print("error:", error)
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
