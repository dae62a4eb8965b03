"""What a waiting phone costs the server: N phones (headless Chromium at 390×844) open the join link's
phone page (classroom/web), join one class on a real server (`make run`'s way of starting it) and wait
on an open vote, polling as the page does; the server process's CPU is read
from /proc over a window, with no phone, then with the N phones waiting.

    .venv/bin/python scripts/class_phone_cpu.py --phones 4 --seconds 30

Prints the server's CPU (% of one core) idle and with the phones, the difference per phone, the number of
CPU cores and the load average (the machine is shared: read the figures beside it).
"""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import classroom  # noqa: E402
from classroom.tools import serve  # noqa: E402
from ui.server import class_demos  # noqa: E402

TIMEOUT_MS = 240_000
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` (and its waited-for children) so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / TICKS


def cpu_share(pid: int, seconds: float) -> float:
    """The process's CPU over the next `seconds`, as a share of one core."""
    before, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - before) / (time.monotonic() - t0)


def join_phone(browser, url: str, code: str):
    """A phone at 390×844 that joins class `code` and waits on its open vote."""
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = ctx.new_page()
    page.goto(f"{url}/phone?join={code}", timeout=TIMEOUT_MS)
    page.locator("#join-button").click(timeout=TIMEOUT_MS)
    page.locator("button[data-option]").first.wait_for(timeout=TIMEOUT_MS)
    return page


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--phones", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="specdec-phone-cpu-"))
    url = f"sqlite:///{tmp / 'class.sqlite3'}"
    store = classroom.open_store(url, bank=class_demos.bank())
    info = store.create_class([q.id for q in store.bank.questions if q.demo is None][:2])
    store.open_vote(info.code, info.teacher_key, store.state(info.code).question_ids[0])
    with serve.Server(tmp / "server.log", env={"SPECDEC_CLASS_DB": url}) as server, sync_playwright() as p:
        pid = server.proc.pid
        time.sleep(5)
        idle = cpu_share(pid, args.seconds)
        browser = p.chromium.launch(executable_path=serve.CHROMIUM, args=[*serve.CHROMIUM_ARGS, "--disable-dev-shm-usage"])
        phones = [join_phone(browser, server.url, info.code) for _ in range(args.phones)]
        time.sleep(5)
        load_before = os.getloadavg()[0]
        busy = cpu_share(pid, args.seconds)
        load_after = os.getloadavg()[0]
        joined = store.state(info.code).students
        browser.close()
    print(f"{len(phones)} phones waiting on an open vote ({joined} joined), {args.seconds:g} s windows, "
          f"{os.cpu_count()} CPU cores, load average {load_before:.1f} → {load_after:.1f}")
    print(f"server CPU: idle {idle:.1%} of a core, with the phones {busy:.1%}: "
          f"{(busy - idle) / max(args.phones, 1):.2%} of a core per waiting phone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
