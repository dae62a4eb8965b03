"""Which adaptive draft-length policy measured best for each drafter of a bundled pair, as
`specdec bench-policies --drafter NAME --record` wrote it; the pages offer that one as the adaptive
default for that drafter.

The record is a JSON file beside the pair's models: drafter ("draft" for the pair's default drafter,
or a key of its self_drafters) -> {"policy", "score", "settings", "command", "when", "precision"}.
A missing record leaves every drafter on policies.DEFAULT_ADAPTIVE; an unreadable one does too, with a note.
"""
import json
from pathlib import Path

from .policies import ADAPTIVE


def read_record(path: str | Path) -> tuple[dict[str, dict], list[str]]:
    """The record at `path` (drafter -> entry) and notes on what could not be used; ({}, []) when
    there is no file. Entries naming a policy that is not adaptive are dropped with a note."""
    path = Path(path)
    if not path.exists():
        return {}, []
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as err:
        return {}, [f"the adaptive-policy record {path.name} cannot be read ({err}): every drafter gets the "
                    "built-in adaptive default"]
    record, notes = {}, []
    for drafter, entry in data.items():
        if isinstance(entry, dict) and entry.get("policy") in ADAPTIVE:
            record[drafter] = entry
        else:
            notes.append(f"the adaptive-policy record {path.name} has no usable policy for {drafter!r}: "
                         "it gets the built-in adaptive default")
    return record, notes


def write_choice(path: str | Path, drafter: str, entry: dict) -> dict[str, dict]:
    """Put `entry` (its "policy" one of policies.ADAPTIVE) as `drafter`'s choice into the record at
    `path`, keeping the other drafters' entries; returns the whole record as written."""
    if entry.get("policy") not in ADAPTIVE:
        raise ValueError(f"the recorded policy must be an adaptive one, {ADAPTIVE}, got {entry.get('policy')!r}")
    path = Path(path)
    record, _ = read_record(path)
    record[drafter] = entry
    path.write_text(json.dumps(dict(sorted(record.items())), indent=1) + "\n")
    return record
