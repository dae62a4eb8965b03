"""The app served as `make run` serves it, for the browser tests and the scripts that drive it
(scripts/app_bench.py, scripts/load_test.py): one way to start `streamlit run app.py` on a local port,
wait until it is healthy, and stop it; and how a headless Chromium is launched and waits for a
script run to end (Streamlit's own end-to-end suite does the same).

    with Server(log_path=tmp / "server.log") as server:     # a free port, HF_HUB_OFFLINE=1
        page.goto(server.url) ...

Nothing here imports Streamlit or Playwright: a page object is whatever Playwright hands the caller.
"""
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
CHROMIUM = os.environ.get("SPECDEC_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"  # Debian's
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'  # a script run has ended
START_TIMEOUT_S = 120  # a fresh server imports torch and transformers before it answers
SHUTDOWN_TIMEOUT_S = 20


class ServerDidNotStart(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`streamlit run app.py` on a local port (default: a free one), headless, its output in `log_path`.
    `file_watcher="none"` as the browser tests and the load test run it; None leaves it to the shipped
    .streamlit/config.toml (as `make run` does). `env` is added to this process's environment, with
    HF_HUB_OFFLINE=1 and the repository on PYTHONPATH. Started as `make run` starts it (ui/server/launch.py:
    the heavy imports before the server answers); `preload=False` is plain `streamlit run`, for comparing."""

    def __init__(self, log_path: Path, port: int | None = None, env: dict | None = None,
                 address: str | None = None, file_watcher: str | None = "none", preload: bool = True):
        self.port, self.log_path = port or free_port(), Path(log_path)
        self.url = f"http://{address or 'localhost'}:{self.port}"
        start = ["-m", "ui.server.launch"] if preload else ["-m", "streamlit", "run", "app.py"]
        args = [sys.executable, *start, "--server.headless", "true",
                "--server.port", str(self.port), "--browser.gatherUsageStats", "false"]
        if address:
            args += ["--server.address", address]
        if file_watcher:
            args += ["--server.fileWatcherType", file_watcher]
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(args, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT,
                                     env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), **(env or {})})

    def wait_healthy(self, timeout_s: float = START_TIMEOUT_S) -> "Server":
        """Poll /_stcore/health until it says ok; ServerDidNotStart (with the log's tail) otherwise."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.read().decode().strip() == "ok":
                        return self
            except OSError:
                pass
            time.sleep(0.5)
        raise ServerDidNotStart(f"streamlit did not become healthy on port {self.port}:\n{self.log()[-3000:]}")

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=SHUTDOWN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()

    def __enter__(self) -> "Server":
        try:
            return self.wait_healthy()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()


RUN_NUMBER_JS = ("() => Math.max(0, ...Array.from(document.querySelectorAll('.specdec-run[data-run]'), "
                 "e => Number(e.dataset.run)))")  # the latest run the page has drawn (ui.widgets.layout.run_marker); 0: none


def run_number(page) -> int:
    """The number of the latest script run the page has drawn (0 before the first)."""
    return page.evaluate(RUN_NUMBER_JS)


def wait_idle(page, timeout_ms: int, after_action: bool = False, after_run: int | None = None) -> None:
    """Wait until the page's script has run to the end; after an action, the run that it caused.

    A page counts its runs (ui.widgets.layout.run_marker). Each wait remembers in the page the number it ended
    on; after an action (`after_action`, or `after_run`: a number read with run_number before it) the
    wait is for a larger number drawn and then an idle page. No time window: on a loaded machine a
    rerun may start seconds after the click, and a starved browser may never show it as running."""
    seen = after_run if after_run is not None else (
        page.evaluate("() => window.__specdecSeenRun || 0") if after_action else 0)
    page.wait_for_function(f"seen => ({RUN_NUMBER_JS})() > seen && "
                           f"document.querySelector({IDLE!r}) !== null", arg=seen, timeout=timeout_ms)
    page.evaluate(f"() => {{ window.__specdecSeenRun = ({RUN_NUMBER_JS})(); }}")
