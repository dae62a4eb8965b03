"""The join link seen from a second machine: two network namespaces joined by a veth pair stand for the
server on the room's network (10.231.0.1) and a phone beside it (10.231.0.2). The app runs in the server's
namespace as `make run` starts it; a teacher's headless Chromium there opens http://localhost:PORT/class and
starts a class; the phone's headless Chromium, in the other namespace, opens the link the teacher's page
shows and must see the class's Join button. Then the same with a server that has no network beyond itself
(no route out): the teacher must see the warning and no QR code.

    sudo .venv/bin/python scripts/class_join_link_netns.py      # root: it makes and removes the namespaces

With $SPECDEC_SCREENSHOTS set, the teacher's screen of each case goes there (class-join-link-*.png).

Nothing leaves the machine: the namespaces reach only each other (the server's route out leads to the
phone's namespace, which forwards nothing). Everything it makes is removed at the end.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from classroom.tools import serve  # noqa: E402

SERVER_NS, PHONE_NS = "specdec-demo-server", "specdec-demo-phone"
SERVER_IP, PHONE_IP = "10.231.0.1", "10.231.0.2"
PORT = 8501
TIMEOUT_MS = 240_000


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=check, capture_output=True, text=True)


@contextmanager
def namespaces(route_out: bool):
    """The two namespaces and the veth between them; the server's default route (what Streamlit's
    get_internal_ip asks the kernel about) leads to the phone only when `route_out`."""
    for ns in (SERVER_NS, PHONE_NS):
        sh("ip", "netns", "del", ns, check=False)  # a leftover of an interrupted run
    try:
        for ns in (SERVER_NS, PHONE_NS):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "link", "add", "sdemo-srv", "netns", SERVER_NS, "type", "veth", "peer", "name", "sdemo-phone",
           "netns", PHONE_NS)
        for ns, dev, ip in ((SERVER_NS, "sdemo-srv", SERVER_IP), (PHONE_NS, "sdemo-phone", PHONE_IP)):
            sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
        if route_out:
            sh("ip", "-n", SERVER_NS, "route", "add", "default", "via", PHONE_IP)
        yield
    finally:
        for ns in (SERVER_NS, PHONE_NS):
            sh("ip", "netns", "del", ns, check=False)


def in_ns(ns: str, *args: str) -> list[str]:
    return ["ip", "netns", "exec", ns, *args]


@contextmanager
def app_in_server_ns(tmp: Path):
    """The app on PORT in the server's namespace, its class store a SQLite file of this run."""
    log = (tmp / "server.log").open("w")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT),
           "SPECDEC_CLASS_DB": f"sqlite:///{tmp / 'class.sqlite3'}"}
    env.pop("SPECDEC_PUBLIC_URL", None)
    proc = subprocess.Popen(in_ns(SERVER_NS, sys.executable, "-m", "ui.server.launch", "--server.headless", "true",
                                  "--server.port", str(PORT), "--browser.gatherUsageStats", "false"),
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 180
        while sh(*in_ns(SERVER_NS, "curl", "-sf", f"http://localhost:{PORT}/_stcore/health"), check=False).stdout != "ok":
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the app did not start:\n" + (tmp / "server.log").read_text()[-3000:])
            time.sleep(1)
        yield tmp / "server.log"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def browser_role(role: str, url: str) -> dict:
    """Run in a namespace: the teacher starts a class at `url` and reports the join panel; the phone opens
    `url` (the join link) and reports whether the class's Join button came."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=serve.CHROMIUM, args=serve.CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720} if role == "teacher" else
                                {"width": 390, "height": 844})
        page.goto(url, wait_until="domcontentloaded")
        if role == "phone":  # the phone page (classroom/web)
            page.wait_for_selector("#join-button", timeout=TIMEOUT_MS)
            return {"phone opened": page.url, "join button": page.locator("#join-button").inner_text()}
        page.wait_for_selector(".st-key-cm_start button", timeout=TIMEOUT_MS)
        serve.wait_idle(page, TIMEOUT_MS)
        page.locator(".st-key-cm_start button").click()
        page.wait_for_selector('.cm-join, [data-testid="stAlertContentWarning"]', timeout=TIMEOUT_MS)
        serve.wait_idle(page, TIMEOUT_MS, after_action=True)
        join = page.locator(".cm-join")
        text = join.inner_text() if join.count() else ""
        link = re.search(r"https?://\S+\?join=\S+", text)
        warnings = page.locator('[data-testid="stAlertContentWarning"]').all_inner_texts()
        qr = page.locator('.cm-join img[src^="data:image/svg+xml"]')
        if os.environ.get("SPECDEC_SCREENSHOTS"):
            shots = Path(os.environ["SPECDEC_SCREENSHOTS"])
            shots.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shots / f"class-join-link-{'qr' if qr.count() else 'warning'}.png"))
        return {"teacher opened": url, "join link": link.group(0) if link else None, "qr code": qr.count() == 1,
                "qr code carries": qr_text(qr) if qr.count() == 1 else None, "warnings": warnings}


def qr_text(img) -> str:
    """What the QR code on the page encodes, read back from a screenshot of it by zbarimg (Debian's
    zbar-tools), or a note where that is not installed."""
    if not shutil.which("zbarimg"):
        return "(not decoded: apt-get install zbar-tools)"
    with tempfile.TemporaryDirectory() as tmp:
        shot = Path(tmp) / "qr.png"
        img.screenshot(path=str(shot))
        done = sh("zbarimg", "--quiet", "--raw", str(shot), check=False)
        return done.stdout.strip() or f"(zbarimg read nothing: {done.stderr.strip()[:200]})"


def role_in_ns(ns: str, role: str, url: str) -> dict:
    done = sh(*in_ns(ns, sys.executable, __file__, "--role", role, url), check=False)
    if done.returncode:
        raise RuntimeError(f"{role} failed:\n{done.stdout}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def network_url(server_log: Path) -> str | None:
    found = re.search(r"Network URL:\s*(\S+)", server_log.read_text())
    return found.group(1) if found else None


def demo() -> dict:
    out = {}
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="specdec-netns-")))
        for name, route_out in (("on a network", True), ("no network", False)):
            run_dir = tmp / name.replace(" ", "-")
            run_dir.mkdir()
            with namespaces(route_out), app_in_server_ns(run_dir) as log:
                teacher = role_in_ns(SERVER_NS, "teacher", f"http://localhost:{PORT}/class")
                seen = {"streamlit's Network URL": network_url(log), **teacher}
                if teacher["join link"]:
                    seen.update(role_in_ns(PHONE_NS, "phone", teacher["join link"]))
                    seen["phone curl"] = sh(*in_ns(PHONE_NS, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                                   teacher["join link"]), check=False).stdout
                out[name] = seen
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--role", choices=("teacher", "phone"), help=argparse.SUPPRESS)
    ap.add_argument("url", nargs="?", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.role:
        print(json.dumps(browser_role(args.role, args.url)))
        return 0
    if os.geteuid() != 0:
        sys.exit("run as root: it makes two network namespaces (ip netns add)")
    seen = demo()
    print(json.dumps(seen, indent=2))
    lan, alone = seen["on a network"], seen["no network"]
    reached = (lan["join link"] or "").startswith(f"http://{SERVER_IP}:{PORT}/phone?join=") and lan.get("join button")
    qr_agrees = lan["qr code carries"] in (lan["join link"], "(not decoded: apt-get install zbar-tools)")
    warned = alone["join link"] is None and not alone["qr code"] and any("No join link" in w for w in alone["warnings"])
    ok = reached and qr_agrees and warned
    print("\nthe teacher opened localhost; the phone in the other namespace reached the link: " + ("yes" if ok else "NO"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
