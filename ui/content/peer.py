"""llama.cpp on the bundled pair, as `scripts/bench/llama_cpp_peer.py` recorded it (assets/llama_cpp_peer.json):
the one figure in the app not measured live, since llama.cpp does not run inside it. Shown in the
Wall-Clock Race's folds, always with when and on which processor it was taken."""
import json
from pathlib import Path

RECORD = Path(__file__).resolve().parents[2] / "assets" / "llama_cpp_peer.json"


def recorded(path: Path = RECORD) -> dict | None:
    """The saved side-by-side table, or None where none was saved."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
