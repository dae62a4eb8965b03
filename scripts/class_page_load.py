"""How fast the class page follows the teacher: N phones (headless Chromium at 390×844) join one class
on a real server and wait on the student view; the teacher (this script, through the class store, as the
teacher's buttons do) opens question after question; for each, the time until every phone shows the new
question's answer buttons, and the time until the projector's count shows a vote cast through the store.

    .venv/bin/python scripts/class_page_load.py --phones 10 --questions 5

No reload anywhere: every page learns of the change from its own polling fragment (chapters/class_room.py,
POLL_S). The report gives the median and the maximum over all phones and questions; docs/class_mode.md
quotes a run.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import classroom  # noqa: E402
from tests import serve  # noqa: E402
from ui.server import class_demos  # noqa: E402

TIMEOUT_S = 240  # the first page of a fresh server loads the models


def until(pages, check, timeout_s: float = TIMEOUT_S) -> list[float]:
    """Seconds until check(page) holds, for each page, all watched together."""
    start, seen = time.monotonic(), {}
    while len(seen) < len(pages) and time.monotonic() - start < timeout_s:
        for i, page in enumerate(pages):
            if i not in seen:
                try:
                    if check(page):
                        seen[i] = time.monotonic() - start
                except Exception:  # an element between two draws
                    pass
        pages[0].wait_for_timeout(25)
    if len(seen) < len(pages):
        raise TimeoutError(f"{len(pages) - len(seen)} page(s) did not follow within {timeout_s} s")
    return [seen[i] for i in range(len(pages))]


def describe(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f} s, max {max(values):.2f} s (n = {len(values)})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--phones", type=int, default=10)
    ap.add_argument("--questions", type=int, default=5)
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="specdec-class-page-"))
    url = f"sqlite:///{tmp / 'class.sqlite3'}"
    store = classroom.open_store(url, bank=class_demos.bank())
    ids = [q.id for q in store.bank.questions if q.demo is None][:args.questions]
    info = store.create_class(ids)
    next_q, counted = [], []
    with serve.Server(tmp / "server.log", env={"SPECDEC_CLASS_DB": url}) as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=serve.CHROMIUM, args=[*serve.CHROMIUM_ARGS, "--disable-dev-shm-usage"])
        phones = []
        for _ in range(args.phones):
            ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
            page = ctx.new_page()
            page.goto(f"{server.url}/class?join={info.code}", timeout=TIMEOUT_S * 1000)
            page.locator(".st-key-cm_join button").click(timeout=TIMEOUT_S * 1000)
            page.get_by_text("The question appears here").wait_for(timeout=TIMEOUT_S * 1000)
            phones.append(page)
            print(f"phone {len(phones)} joined", flush=True)
        projector = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        projector.goto(f"{server.url}/class?code={info.code}&view=projector", timeout=TIMEOUT_S * 1000)
        projector.get_by_text("Join now").wait_for(timeout=TIMEOUT_S * 1000)
        t0 = time.monotonic()
        voter = store.join(info.code)
        for qid in ids:
            store.open_vote(info.code, info.teacher_key, qid)  # what the teacher's "Open the vote" does
            next_q += until(phones, lambda pg, qid=qid: pg.locator(f".st-key-cm_opt_{qid}_1_0 button").count() > 0)
            store.vote(info.code, voter, qid, 0)
            counted += until([projector], lambda pg: pg.get_by_text("1 answer in").first.is_visible())
            store.close_vote(info.code, info.teacher_key)
        seconds = time.monotonic() - t0
        browser.close()
        server_log = server.log()
    print(f"{args.phones} phones and a projector polling every 1.5 s, {len(ids)} questions, {seconds:.0f} s, "
          f"{os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f}")
    print(f"a phone shows the next question: {describe(next_q)}")
    print(f"the projector's count shows a vote: {describe(counted)}")
    print(f"tracebacks in the server log: {server_log.count('Traceback')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
