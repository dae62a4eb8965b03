"""The training runs' log: each line time-stamped, printed and appended to the run folder's train.log."""
import time
from collections.abc import Callable
from pathlib import Path


def run_log(run: Path) -> Callable[[str], None]:
    """A `log(message)` for a run folder: prints the line and appends it, flushed, to run/train.log
    (so a background run can be followed with tail -f and survives being stopped)."""
    run.mkdir(parents=True, exist_ok=True)
    logfile = (run / "train.log").open("a")

    def log(msg: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {msg}"
        print(line, flush=True)
        logfile.write(line + "\n")
        logfile.flush()

    return log
