"""The classroom rules of a shared server (set by its operator): which model pairs students may pick, whether custom hub
pairs are allowed (and which), and how much work one request may ask for.

The operator sets it with environment variables or the same keys in `.streamlit/secrets.toml`
(the app reads both; see `ui/server/operator.py`). Everything here is plain parsing and checking, so the
CLI and the tests can use it without Streamlit. Student input never reaches the file system: a
custom pair can only name hub ids from the operator's allow-list, and an allow-list entry that
looks like a path or a URL is dropped.
"""
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from specdec_core.pairs import PAIRS

CUSTOM = "custom"  # the pair name that stands for "a target and a draft from the allow-list"

# A Hugging Face hub id: "name" or "owner/name", letters, digits, "-", "_", "." (no "..", no
# leading "." or "-"). Everything a path or a URL needs (a second "/", "\", ":", "~", "%") is absent.
_HUB_PART = r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
HUB_ID = re.compile(rf"^{_HUB_PART}(?:/{_HUB_PART})?$")

KEYS = {  # setting -> (environment / secrets key, what it means)
    "pairs": ("SPECDEC_PAIRS", "comma-separated pair names students may pick; the first is the default"),
    "allow_custom": ("SPECDEC_ALLOW_CUSTOM", "1 to let students pick a custom pair from the allow-list"),
    "custom_allowlist": ("SPECDEC_CUSTOM_ALLOWLIST", "comma-separated hub ids a custom pair may use"),
    "max_concurrent": ("SPECDEC_MAX_CONCURRENT", "generations running at once; the rest wait in a queue"),
    "max_new_tokens": ("SPECDEC_MAX_NEW_TOKENS", "the most new tokens one generation may ask for"),
    "max_prompt_chars": ("SPECDEC_MAX_PROMPT_CHARS", "the longest prompt kept, in characters"),
    "max_lab_samples": ("SPECDEC_MAX_LAB_SAMPLES", "the largest K (samples per decoder) in Identical Outputs"),
    "max_rounds": ("SPECDEC_MAX_ROUNDS", "the most rounds per drafter in the α Dial's measurement"),
}
LIMITS = {  # integer settings: (default, smallest, largest accepted)
    "max_new_tokens": (200, 1, 1000),
    "max_prompt_chars": (1000, 1, 20_000),
    "max_lab_samples": (20_000, 100, 20_000),  # lab.MAX_K is the core's own ceiling
    "max_rounds": (200, 10, 1000),
    "max_concurrent": (None, 1, 64),  # default: see default_concurrency()
}


def default_concurrency(cpu_count: int | None = None, torch_threads: int = 1) -> int:
    """As many generations as there are cores for their torch threads (at least one)."""
    return max(1, (cpu_count or os.cpu_count() or 1) // max(1, torch_threads))


@dataclass(frozen=True)
class ClassroomRules:
    pairs: tuple[str, ...] = tuple(PAIRS)  # named pairs students may pick; the first is the default
    allow_custom: bool = False  # custom pairs are off unless the operator turns them on
    custom_allowlist: tuple[str, ...] = ()  # hub ids only
    max_concurrent: int = 1  # generations at once on this server
    max_new_tokens: int = LIMITS["max_new_tokens"][0]
    max_prompt_chars: int = LIMITS["max_prompt_chars"][0]
    max_lab_samples: int = LIMITS["max_lab_samples"][0]
    max_rounds: int = LIMITS["max_rounds"][0]
    problems: tuple[str, ...] = field(default=(), compare=False)  # what was ignored, for the server log

    @property
    def default_pair(self) -> str:
        return self.pairs[0]

    @property
    def custom_enabled(self) -> bool:
        return self.allow_custom and len(self.custom_allowlist) > 0

    @property
    def choices(self) -> tuple[str, ...]:
        """What the pair menu offers."""
        return self.pairs + ((CUSTOM,) if self.custom_enabled else ())


def is_hub_id(text: str) -> bool:
    """Whether `text` has the shape of a hub id ("gpt2", "org/model") and nothing of a path or URL."""
    return bool(HUB_ID.match(text)) and ".." not in text


def looks_like_path_or_url(text: str) -> bool:
    """Whether untrusted text tries to name a file, a directory or a URL."""
    t = text.strip()
    return (t.startswith((".", "~", "/", "\\")) or "://" in t or ":" in t or "\\" in t or t.count("/") > 1
            or "%2f" in t.lower() or "%5c" in t.lower())


def _items(raw) -> list[str]:
    if isinstance(raw, (list, tuple)):
        return [str(x).strip() for x in raw if str(x).strip()]
    return [x.strip() for x in str(raw).split(",") if x.strip()]


def _flag(raw) -> bool | None:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    return None


def rules_from(values: Mapping[str, object], cpu_count: int | None = None, torch_threads: int = 1) -> ClassroomRules:
    """ClassroomRules from operator settings (keys as in KEYS, values as strings, lists, numbers or bools).
    Anything unusable is left at its default and described in `problems`; it never raises."""
    problems: list[str] = []
    kw: dict = {}

    key = KEYS["pairs"][0]
    if values.get(key) not in (None, ""):
        wanted = _items(values[key])
        known = [p for p in dict.fromkeys(wanted) if p in PAIRS]
        for p in wanted:
            if p not in PAIRS:
                problems.append(f"{key}: unknown pair {p!r} ignored (known: {', '.join(PAIRS)})")
        if known:
            kw["pairs"] = tuple(known)
        else:
            problems.append(f"{key}: no known pair left; offering all of {', '.join(PAIRS)}")

    key = KEYS["allow_custom"][0]
    if key in values:
        flag = _flag(values[key])
        if flag is None:
            problems.append(f"{key}: {values[key]!r} is not 0/1; custom pairs stay off")
        kw["allow_custom"] = bool(flag)

    key = KEYS["custom_allowlist"][0]
    if values.get(key) not in (None, ""):
        ids = []
        for ref in _items(values[key]):
            if is_hub_id(ref):
                ids.append(ref)
            else:
                problems.append(f"{key}: {ref!r} is not a hub id (owner/name); paths and URLs are never allowed")
        kw["custom_allowlist"] = tuple(dict.fromkeys(ids))
    if kw.get("allow_custom") and not kw.get("custom_allowlist"):
        problems.append(f"{KEYS['allow_custom'][0]} is on but {KEYS['custom_allowlist'][0]} is empty: no custom pairs")

    for name, (default, lo, hi) in LIMITS.items():
        key = KEYS[name][0]
        if name == "max_concurrent":
            default = min(hi, default_concurrency(cpu_count, torch_threads))
        value = default
        if values.get(key) not in (None, ""):
            try:
                number = float(str(values[key]).strip())
            except ValueError:
                number = math.nan
            if not math.isfinite(number) or number != int(number):
                problems.append(f"{key}: {values[key]!r} is not a whole number; using {default}")
            elif not lo <= number <= hi:
                value = int(min(max(number, lo), hi))
                problems.append(f"{key}: {int(number)} is outside {lo}–{hi}; using {value}")
            else:
                value = int(number)
        kw[name] = value
    return ClassroomRules(**kw, problems=tuple(problems))


class NotAllowed(ValueError):
    """A request the operator's rules refuse (the message is safe to show a student)."""


def check_named_pair(name: str, rules: ClassroomRules) -> None:
    """Raise NotAllowed unless students may pick the pair `name`."""
    if name not in rules.pairs:
        raise NotAllowed(f"the pair {name[:60]!r} is not offered on this server "
                         f"(offered: {', '.join(rules.choices)})")


def check_custom_pair(target: str, draft: str, rules: ClassroomRules, root: Path | None = None) -> None:
    """Raise NotAllowed unless a custom pair of these two hub ids is allowed. A hub id that also
    names an existing local path (relative to `root`, default the working directory) is refused,
    because the loader would read the local files instead of the hub."""
    if not rules.custom_enabled:
        raise NotAllowed("custom pairs are switched off on this server")
    for role, ref in (("target", target), ("draft", draft)):
        if not ref:
            raise NotAllowed(f"a custom pair needs a {role} model: pick one from the list")
        if not is_hub_id(ref) or looks_like_path_or_url(ref):
            raise NotAllowed(f"the custom {role} must be a hub id from the server's list, not a path or URL")
        if ref not in rules.custom_allowlist:
            raise NotAllowed(f"the custom {role} {ref[:60]!r} is not on this server's list "
                             f"({', '.join(rules.custom_allowlist)})")
        if ((root or Path.cwd()) / ref).exists():
            raise NotAllowed(f"the hub id {ref!r} is also a local path on this server; refusing to load it")
