"""A class's load on the class store: N students (default 60) join one class and vote from several OS
processes at once, some changing their vote, while the teacher opens round 1, closes it and opens the
revote, and the projector polls the tally. Prints votes/s, the median and max latency of join, vote and
tally, whether the tallies are exact and how many votes were lost; repeated (default 3 rooms) so a slow
moment of the machine shows up as spread.

    python scripts/class_load.py                      # a temporary SQLite file
    python scripts/class_load.py --postgres           # a temporary PostgreSQL server (initdb/pg_ctl here)
    python scripts/class_load.py --url postgresql://user@127.0.0.1:5432/db
    python scripts/class_load.py --spread 10          # the room paced over ~10 s instead of all at once

Only local: `--url` must name a server on this machine. Bounded: at most 2000 students, 16 processes,
10 rooms, and every room times out after --timeout seconds.
"""
import argparse
import json
import statistics
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from classroom.engine import driver_url  # noqa: E402
from tests.classroom.crowd import run_room  # noqa: E402
from tests.pg import temporary_postgres  # noqa: E402

LOCAL_HOSTS = {None, "", "localhost", "127.0.0.1", "::1"}


def bounded(low, high):
    """An argparse type: a number of low's type within [low, high]."""
    def parse(text):
        value = type(low)(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}")
        return value
    return parse


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--url", help="a local store URL (default: a temporary SQLite file)")
    where.add_argument("--postgres", action="store_true", help="start a temporary PostgreSQL server for the run")
    parser.add_argument("--students", type=bounded(1, 2000), default=60)
    parser.add_argument("--processes", type=bounded(1, 16), default=5)
    parser.add_argument("--change", type=bounded(0.0, 1.0), default=0.3, help="share of students who change their vote")
    parser.add_argument("--spread", type=bounded(0.0, 60.0), default=0.0, help="seconds to pace the room over (0: all at once)")
    parser.add_argument("--rooms", type=bounded(1, 10), default=3, help="rooms run one after another (repetitions)")
    parser.add_argument("--timeout", type=bounded(5.0, 300.0), default=60.0)
    parser.add_argument("--json", action="store_true", help="print every room's summary as JSON too")
    args = parser.parse_args(argv)
    with ExitStack() as stack:
        if args.postgres:
            url, backend = stack.enter_context(temporary_postgres()), "PostgreSQL (temporary server, fsync on)"
        elif args.url:
            if driver_url(args.url).host not in LOCAL_HOSTS:
                parser.error("--url must name a database on this machine")
            url, backend = args.url, driver_url(args.url).get_backend_name()
        else:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="class-load-"))
            url, backend = f"sqlite:///{folder}/class.sqlite3", "SQLite (temporary file, WAL)"
        rooms = [run_room(url, args.students, args.processes, args.change, seed=i, spread=args.spread,
                          timeout=args.timeout).summary() for i in range(args.rooms)]
    print(f"{backend}: {args.students} students from {args.processes} processes, {args.change:.0%} change their vote, "
          f"spread {args.spread:g} s, {args.rooms} rooms")
    if args.json:
        for room in rooms:
            print(json.dumps(room))
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
          f"votes sent: {sum(r['votes'] for r in rooms)}   seconds per room: "
          f"{', '.join(str(r['seconds']) for r in rooms)}")
    for r in rooms:
        for error in r["errors"]:
            print("error:", error)
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
