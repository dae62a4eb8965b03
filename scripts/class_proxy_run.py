"""A small class through a real reverse proxy: PostgreSQL, two app processes (as `make run` starts them, both
on that database) and nginx in front (deploy/nginx-class.conf: websocket upgrade, one process per browser,
kept by a cookie), all on this machine's loopback; then a room in headless Chromium through nginx only.

The teacher starts a class and opens a vote; N phones (default 3) open the join link the teacher's page
shows (the phone page, classroom/web), join and vote (one changes its vote); the teacher's count, the
revealed counts on the teacher's page and on a projector, and the store's own tally must all agree with
the votes cast; both app processes must have served browsers, each browser always the same process, and
the teacher's and projector's Streamlit websockets must have passed through nginx. Prints which process
served whom, the tallies and the requests per process from nginx's log.

    .venv/bin/python scripts/class_proxy_run.py [--phones 3]

Needs Debian's nginx and PostgreSQL (scripts/ensure_nginx.sh, scripts/ensure_postgres.sh) and Chromium
(scripts/ensure_chromium.sh). Everything it starts listens on 127.0.0.1 and is stopped at the end.
"""
import argparse
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import classroom  # noqa: E402
from classroom.tools import serve  # noqa: E402
from classroom.tools.pg import temporary_postgres  # noqa: E402
from ui.server import class_demos  # noqa: E402
from ui.server.join_link import PUBLIC_URL_ENV  # noqa: E402

TEMPLATE = ROOT / "deploy" / "nginx-class.conf"
PHONES_MAX = 8  # browsers on this 2-core machine
PAGE_TIMEOUT_MS = 240_000  # a fresh app process's first page
SEEN_TIMEOUT_S = 60  # a polled view catching up with the store
LETTERS = "ABCDEFGH"
OPTION = "button[data-option]"  # the phone page's answer buttons (classroom/web/static/phone.js)


class NginxMissing(RuntimeError):
    """No nginx binary on this machine."""


def nginx_binary() -> str:
    """Debian's nginx (scripts/ensure_nginx.sh installs it)."""
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if not found:
        raise NginxMissing("no nginx: install Debian's nginx (scripts/ensure_nginx.sh does)")
    return found


def nginx_config(listen: str, run_dir: Path, app_ports: list[int]) -> str:
    """deploy/nginx-class.conf with this run's address, folder and app processes filled in."""
    servers = "\n".join(f"        server 127.0.0.1:{p};" for p in app_ports)
    pins = "\n".join(f'        "127.0.0.1:{p}" 127.0.0.1:{p};' for p in app_ports)
    text = TEMPLATE.read_text()
    for name, value in (("@APP_SERVERS@", servers), ("@APP_PINS@", pins), ("@LISTEN@", listen),
                        ("@RUN_DIR@", str(run_dir))):
        text = text.replace(name, value)
    assert "@" not in re.sub(r"#.*", "", text), "a placeholder of deploy/nginx-class.conf was left unfilled"
    return text


@contextmanager
def running_nginx(port: int, app_ports: list[int], run_dir: Path):
    """nginx on `port` of 127.0.0.1 in front of `app_ports`; yields (its URL, its access log). Stopped
    gracefully (SIGQUIT), so the log holds every request, the websockets' too, before the caller reads it."""
    binary = nginx_binary()
    run_dir.chmod(0o755)  # nginx's workers (user nobody when started as root) write its temporary files there
    conf = run_dir / "nginx.conf"
    conf.write_text(nginx_config(f"127.0.0.1:{port}", run_dir, app_ports))
    checked = subprocess.run([binary, "-t", "-p", str(run_dir), "-c", str(conf)], capture_output=True, text=True)
    if checked.returncode:
        raise RuntimeError(f"nginx refused the configuration:\n{checked.stderr}")
    proc = subprocess.Popen([binary, "-p", str(run_dir), "-c", str(conf), "-g", "daemon off;"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"nginx did not start: {proc.stderr.read().decode(errors='replace')}") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}", run_dir / "access.log"
    finally:
        proc.send_signal(signal.SIGQUIT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- a room in Chromium, through the proxy ------------------------------------------------------------------

def press(page, key: str) -> None:
    page.locator(f".st-key-{key} button").first.click()


def metric(page, label: str) -> str:
    return page.locator(f'[data-testid="stMetric"]:has-text("{label}") [data-testid="stMetricValue"]').first.inner_text()


def until(check, what: str, timeout_s: float = SEEN_TIMEOUT_S):
    """Poll `check()` until it gives something true (an element between two draws may raise); its value."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception:  # an element between two draws
            pass
        time.sleep(0.2)
    raise AssertionError(f"{what}: not seen within {timeout_s:.0f} s")


def counts_caption(page) -> str:
    """The revealed counts as the page writes them under the histogram ("First vote: A 0, B 2, …")."""
    captions = page.locator('[data-testid="stCaptionContainer"]').all_inner_texts()
    return next(t for t in captions if t.startswith("Counts per option"))


def pinned_app(context) -> str:
    """The app process nginx pinned this browser to (its cookie)."""
    return next(c["value"] for c in context.cookies() if c["name"] == "specdec_app")


def phone_joins(context, link: str):
    """A phone opens the join link (the phone page, classroom/web) and joins; the page once it shows the
    vote's options."""
    page = context.new_page()
    page.goto(link, wait_until="domcontentloaded")
    page.locator("#join-button").click(timeout=PAGE_TIMEOUT_MS)
    page.wait_for_selector(OPTION, timeout=PAGE_TIMEOUT_MS)
    return page


def phone_votes(page, option: int) -> None:
    page.locator(f'{OPTION}[data-option="{option}"]').click()
    page.get_by_text(f"Your answer is in: {LETTERS[option]}").wait_for(timeout=PAGE_TIMEOUT_MS)


def run_room(proxy: str, phones: int, browser) -> dict:
    """The room through `proxy`: what each view showed and which process served whom."""
    teacher_ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    phone_ctxs = [browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
                  for _ in range(phones)]
    projector_ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        teacher = teacher_ctx.new_page()
        teacher.goto(f"{proxy}/class", wait_until="domcontentloaded")
        teacher.wait_for_selector(".st-key-cm_start button", timeout=PAGE_TIMEOUT_MS)
        serve.wait_idle(teacher, PAGE_TIMEOUT_MS)
        press(teacher, "cm_start")
        teacher.wait_for_selector(".cm-code", timeout=PAGE_TIMEOUT_MS)
        code = re.sub(r"\s", "", teacher.locator(".cm-code").inner_text())
        link = re.search(r"https?://\S+\?join=\S+", teacher.locator(".cm-join").inner_text()).group(0)
        press(teacher, "cm_open")
        teacher.wait_for_selector(".st-key-cm_close button", timeout=PAGE_TIMEOUT_MS)

        pages = [phone_joins(ctx, link) for ctx in phone_ctxs]
        options = teacher.locator('[data-testid="stMain"] .cm-question li').count()
        votes = [(i + 1) % options for i in range(phones)]  # B, C, … in turn
        for page, option in zip(pages, votes):
            phone_votes(page, option)
        votes[0] = (votes[0] + 1) % options  # the first phone changes its mind: its vote is replaced
        phone_votes(pages[0], votes[0])
        expected = {i: votes.count(i) for i in range(options)}

        joined = until(lambda: metric(teacher, "Students joined") == str(phones) and phones, "every phone joined")
        answers = until(lambda: metric(teacher, "Answers in this vote") == str(phones) and phones, "every vote counted")
        press(teacher, "cm_close")
        teacher.wait_for_selector(".st-key-cm_reveal button", timeout=PAGE_TIMEOUT_MS)
        press(teacher, "cm_reveal")
        teacher_counts = until(lambda: counts_caption(teacher), "the counts on the teacher's page")
        projector = projector_ctx.new_page()
        projector.goto(f"{proxy}/class?code={code}&view=projector", wait_until="domcontentloaded")
        projector_counts = until(lambda: counts_caption(projector), "the counts on the projector")
        served = {"teacher": pinned_app(teacher_ctx), "projector": pinned_app(projector_ctx),
                  **{f"phone {i + 1}": pinned_app(ctx) for i, ctx in enumerate(phone_ctxs)}}
        return {"code": code, "join link": link, "votes": votes, "expected": expected, "joined": joined,
                "answers": answers, "teacher counts": teacher_counts, "projector counts": projector_counts,
                "served by": served}
    finally:
        for ctx in (teacher_ctx, projector_ctx, *phone_ctxs):
            ctx.close()


def requests_per_app(access_log: Path) -> dict[str, dict[str, int]]:
    """From nginx's log: per app process, the requests it served, the websockets it held (status 101), and
    the requests of a browser pinned to another process that it served all the same ("off pin": none if sticky)."""
    per_app: dict[str, Counter] = {}
    for line in access_log.read_text().splitlines():
        found = re.search(r'" (\d{3}) upstream=(\S+) pin="([^"]*)"', line)
        if not found or found.group(2) == "-":
            continue
        status, app, pin = found.groups()
        counts = per_app.setdefault(app, Counter({"requests": 0, "websockets": 0, "off pin": 0}))
        counts["requests"] += 1
        counts["websockets"] += status == "101"
        counts["off pin"] += pin not in ("", "-") and pin != app  # nginx logs an unset cookie as "-"
    return {app: dict(counts) for app, counts in sorted(per_app.items())}


def summary_of(tally: dict[int, int]) -> str:
    return "First vote: " + ", ".join(f"{LETTERS[i]} {n}" for i, n in sorted(tally.items()))


def run(phones: int = 3, log_dir: Path | None = None) -> dict:
    """PostgreSQL, two app processes and nginx on this machine, and a room of `phones` through nginx.
    Returns what was seen; raises AssertionError where a view, the store or the proxy disagrees."""
    from playwright.sync_api import sync_playwright

    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="specdec-proxy-")))
        logs = log_dir or tmp
        db_url = stack.enter_context(temporary_postgres(durable=False))
        store = classroom.open_store(db_url, bank=class_demos.bank())  # the schema, before two processes race for it
        stack.callback(store.close)
        ports = [serve.free_port(), serve.free_port()]
        proxy_port = serve.free_port()
        env = {classroom.ENV_VAR: db_url, PUBLIC_URL_ENV: f"http://127.0.0.1:{proxy_port}"}
        apps = [serve.Server(logs / f"app-{p}.log", port=p, env=env, address="127.0.0.1") for p in ports]
        for app in apps:
            stack.callback(app.stop)
        for app in apps:
            app.wait_healthy()
        nginx_dir = tmp / "nginx"
        nginx_dir.mkdir()
        with running_nginx(proxy_port, ports, nginx_dir) as (proxy, access_log):
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=serve.CHROMIUM, args=serve.CHROMIUM_ARGS)
                try:
                    seen = run_room(proxy, phones, browser)
                finally:
                    browser.close()
        # nginx has stopped: its log is complete
        seen["proxy"] = proxy
        seen["requests per app"] = requests_per_app(access_log)
        state = store.state(seen["code"])
        seen["store tally"] = store.tally(seen["code"], state.question_id, 1)
        seen["apps"] = [f"127.0.0.1:{p}" for p in ports]
        if log_dir:
            shutil.copy(access_log, log_dir / "nginx-access.log")
    return seen


def problems(seen: dict) -> list[str]:
    """Where the views, the store and the proxy's log disagree with the votes cast and the two processes."""
    found = []
    want_link = f"{seen['proxy']}/phone?join={seen['code']}"
    if seen["join link"] != want_link:
        found.append(f"the join link is {seen['join link']}, not the proxy's {want_link}")
    want = summary_of(seen["expected"])
    for view in ("teacher counts", "projector counts"):
        if want not in seen[view]:
            found.append(f"{view}: {seen[view]!r} does not say {want!r}")
    if seen["store tally"] != seen["expected"]:
        found.append(f"the store's tally {seen['store tally']} is not the votes cast {seen['expected']}")
    if set(seen["served by"].values()) != set(seen["apps"]):
        found.append(f"the browsers were not spread over both processes: {seen['served by']}")
    for app in seen["apps"]:
        served = seen["requests per app"].get(app, {})
        if served.get("requests", 0) < 1:
            found.append(f"{app} served no request through the proxy: {seen['requests per app']}")
        if served.get("off pin", 0):
            found.append(f"{app} served {served['off pin']} requests of browsers pinned to another process (not sticky)")
    websockets = sum(served.get("websockets", 0) for served in seen["requests per app"].values())
    if websockets < 2:  # the teacher's and the projector's Streamlit sessions (a phone page has none)
        found.append(f"{websockets} websockets through the proxy, not the teacher's and the projector's")
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phones", type=int, default=3, choices=range(1, PHONES_MAX + 1), metavar=f"1..{PHONES_MAX}",
                    help="phones in the room (default 3)")
    ap.add_argument("--logs", type=Path, help="a folder to keep the app processes' and nginx's logs in")
    args = ap.parse_args(argv)
    if args.logs:
        args.logs.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    seen = run(args.phones, args.logs)
    print(json.dumps(seen, indent=2, default=str))
    found = problems(seen)
    print(f"\n{args.phones} phones, a teacher and a projector through nginx on two app processes and PostgreSQL "
          f"in {time.monotonic() - started:.0f} s: " + ("everything agrees" if not found else "PROBLEMS"))
    for problem in found:
        print(f"  - {problem}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
