"""The settings every page shares: model pair, prompt, γ, sampling, seed and length.

They live in three places kept in step: the sidebar widgets (keys "s_*"), `st.session_state` (the
widgets' own state, plus the validated `Settings` under "settings"), and the URL query parameters,
so that a teacher can share a link that reproduces a demo. Values from a URL or a widget are
untrusted: `settings_from_query` and `clean_prompt` clamp and clean them and say, in words, what they
changed. Which pairs may be picked and how much one request may ask for is the operator's policy
(`ui/operator.py`); a link can never name a file, a directory or a URL.
"""
import math
import unicodedata
from dataclasses import asdict, dataclass, replace
from typing import Mapping

import streamlit as st

from specdec_core.pairs import PAIRS
from .classroom import CUSTOM, NotAllowed, Policy, check_custom_pair, looks_like_path_or_url
from specdec_core.sampling import SamplingConfig

from . import operator

GAMMA_RANGE = (1, 16)  # the sidebar's γ; the core allows up to MAX_GAMMA = 32
TEMPERATURE_RANGE = (0.0, 2.0)  # 0 = greedy
TOP_P_RANGE = (0.01, 1.0)  # 1 = off
SEED_RANGE = (0, 2**31 - 1)
MAX_NEW_CAP = 200  # default of SPECDEC_MAX_NEW_TOKENS: keeps every page's generation within seconds on a CPU
MAX_PROMPT_CHARS = 1000  # default of SPECDEC_MAX_PROMPT_CHARS
FALLBACK_CONTEXT = 1024  # bounds before a pair is loaded (or when it cannot be)
FALLBACK_VOCAB = 50257

PRESETS = {
    "Romeo at the window": "ROMEO:\nBut soft, what light through yonder window breaks?",
    "Hamlet's question": "HAMLET:\nTo be, or not to be, that is the question:",
    "A citizen speaks": "First Citizen:\nBefore we proceed any further, hear me speak.",
    "Enter the king": "KING HENRY V:\nOnce more unto the breach, dear friends, once more;",
    "A stage direction": "Enter MACBETH and BANQUO.\n\nMACBETH:\n",
}

# Settings field -> URL query parameter name.
QUERY_KEYS = {"pair": "pair", "prompt": "prompt", "gamma": "gamma", "temperature": "temp", "top_k": "top_k",
              "top_p": "top_p", "seed": "seed", "max_new_tokens": "max_new", "target": "target", "draft": "draft"}
CUSTOM_ONLY = ("target", "draft")  # in the URL only when the pair is a custom one
# Settings field -> sidebar widget key.
WIDGET_KEYS = {"pair": "s_pair", "prompt": "s_prompt", "gamma": "s_gamma", "temperature": "s_temperature",
               "top_k": "s_top_k", "top_p": "s_top_p", "seed": "s_seed", "max_new_tokens": "s_max_new",
               "target": "s_target", "draft": "s_draft"}


@dataclass(frozen=True)
class Settings:
    pair: str = "shakespeare"  # a key of specdec_core.pairs.PAIRS
    prompt: str = PRESETS["Romeo at the window"]
    gamma: int = 4  # draft tokens per round
    temperature: float = 1.0  # 1 = the target's own distribution; 0 = greedy
    top_k: int = 0  # 0 = off
    top_p: float = 1.0  # 1 = off
    seed: int = 0  # every generation gets its own generator seeded with this
    max_new_tokens: int = 40
    target: str = ""  # custom pairs only: hub ids from the operator's allow-list
    draft: str = ""

    @property
    def sampling(self) -> SamplingConfig:
        return SamplingConfig.from_controls(self.temperature, self.top_k, self.top_p)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    @property
    def effective_seed(self) -> int:
        """The seed as far as results depend on it: greedy decoding draws no random numbers, so every
        greedy request uses 0 here and a class at temperature 0 shares one cached result per prompt."""
        return 0 if self.greedy else self.seed

    def describe_sampling(self) -> str:
        if self.greedy:
            return "greedy (temperature 0)"
        parts = [f"temperature {self.temperature:g}"]
        if self.top_k:
            parts.append(f"top-k {self.top_k}")
        if self.top_p < 1:
            parts.append(f"top-p {self.top_p:g}")
        return "sampling, " + ", ".join(parts)

    def to_query(self) -> dict[str, str]:
        """The URL query parameters that reproduce these settings."""
        out = {}
        for name, value in asdict(self).items():
            if name in CUSTOM_ONLY and self.pair != CUSTOM:
                continue
            out[QUERY_KEYS[name]] = f"{value:g}" if isinstance(value, float) else str(value)
        return out

    @property
    def pair_args(self) -> tuple[str, str, str]:
        """(name, target, draft) for models.get_pair."""
        return (self.pair, self.target, self.draft) if self.pair == CUSTOM else (self.pair, "", "")

    def signature(self) -> tuple:
        """A hashable identity, for knowing when a stored result is stale."""
        return tuple(asdict(self).values())


DEFAULTS = Settings()


def max_new_limit(context_length: int | None, policy: Policy | None = None) -> int:
    """The largest max-new-tokens the sidebar offers for a pair with this context window."""
    cap = (policy or operator.policy()).max_new_tokens
    return max(1, min(cap, (context_length or FALLBACK_CONTEXT) - 1))


# --- parsing untrusted values ---------------------------------------------------------------------

def _last(raw):
    return raw[-1] if isinstance(raw, (list, tuple)) else raw


def shown(text, limit: int = 40) -> str:
    """Untrusted text quoted for a message: printable characters only, no backticks (so it cannot end
    the code span and turn into markdown), at most `limit` characters."""
    text = str(text)
    quoted = "".join(ch if ch.isprintable() and ch != "`" else "?" for ch in text[:limit])
    return f"`{quoted}`" + ("…" if len(text) > limit else "")


def clean_prompt(raw, limit: int | None = None) -> tuple[str, list[str]]:
    """A prompt safe to tokenize and show: line breaks normalised, control characters (NUL and the
    like) and lone surrogates removed, at most `limit` characters. Returns it with what was changed."""
    limit = limit or operator.policy().max_prompt_chars
    text = "" if raw is None else str(raw)
    notes = []
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    kept = "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cs"))
    if len(kept) != len(text):
        removed = len(text) - len(kept)
        notes.append(f"The prompt contained {removed} control character{'s' * (removed != 1)} (such as NUL) "
                     "that cannot be shown or typed; they were removed.")
    if len(kept) > limit:
        notes.append(f"The prompt was {len(kept):,} characters long; only the first {limit:,} are kept.")
        kept = kept[:limit]
    return kept, notes


def _pair_from_query(q: dict, policy: Policy, w: list[str]) -> dict:
    """The pair (and, for a custom pair, its two hub ids) a link asks for, if this server allows it."""
    default = {"pair": policy.default_pair, "target": "", "draft": ""}
    if "pair" not in q:
        return default
    pair = str(_last(q["pair"]))
    fallback = f"using `{policy.default_pair}`"
    if pair == CUSTOM:
        target, draft = (str(_last(q.get(k, ""))) for k in ("target", "draft"))
        try:
            check_custom_pair(target, draft, policy)
        except NotAllowed as err:
            w.append(f"The link asks for a custom pair, but {err}; {fallback}.")
            return default
        return {"pair": CUSTOM, "target": target, "draft": draft}
    if pair in policy.pairs:
        return {**default, "pair": pair}
    if looks_like_path_or_url(pair):
        w.append(f"The link's model pair {shown(pair)} looks like a file path or a web address. A link can only "
                 f"choose one of this server's pairs ({', '.join(policy.choices)}); {fallback}.")
    elif pair in PAIRS:
        w.append(f"The model pair {shown(pair)} is not offered on this server; {fallback}.")
    else:
        w.append(f"The link asks for an unknown model pair {shown(pair)}; {fallback}.")
    return default


def _number(raw, label: str, lo, hi, default, integer: bool, warnings: list[str]):
    text = str(_last(raw)).strip()
    try:
        value = float(text[:400])  # a longer number is no number a page could use
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or (integer and value != int(value)):
        kind = "a whole number" if integer else "a finite number"
        warnings.append(f"The link's {label} {shown(text, 20)} is not {kind}; using {default}.")
        return default
    if integer:
        value = int(value)
    if value < lo or value > hi:
        clamped = min(max(value, lo), hi)
        fmt = (lambda x: f"{int(x):d}") if integer else (lambda x: f"{x:g}")
        warnings.append(f"The link's {label} {fmt(value)} is outside {fmt(lo)}–{fmt(hi)}; using {fmt(clamped)}.")
        value = clamped
    return int(value) if integer else float(value)


def settings_from_query(params: Mapping[str, object], context_length: int | None = None,
                        vocab_size: int | None = None, policy: Policy | None = None) -> tuple[Settings, list[str]]:
    """Settings from URL query parameters (missing ones take the defaults), clamped into range and to
    the operator's policy, with one plain-words warning per value that was changed."""
    policy = policy or operator.policy()
    w: list[str] = []
    q = {k: params[k] for k in params}
    s = replace(DEFAULTS, **_pair_from_query(q, policy, w))
    if "prompt" in q:
        prompt, notes = clean_prompt(_last(q["prompt"]), policy.max_prompt_chars)
        w += [n.replace("The prompt", "The link's prompt", 1) for n in notes]
        s = replace(s, prompt=prompt)
    numeric = {
        "gamma": ("γ", *GAMMA_RANGE, True),
        "temperature": ("temperature", *TEMPERATURE_RANGE, False),
        "top_k": ("top-k", 0, vocab_size or FALLBACK_VOCAB, True),
        "top_p": ("top-p", *TOP_P_RANGE, False),
        "seed": ("seed", *SEED_RANGE, True),
        "max_new_tokens": ("max new tokens", 1, max_new_limit(context_length, policy), True),
    }
    for name, (label, lo, hi, integer) in numeric.items():
        key = QUERY_KEYS[name]
        if key in q:
            s = replace(s, **{name: _number(q[key], label, lo, hi, getattr(DEFAULTS, name), integer, w)})
    return s, w


def clamp_to_pair(s: Settings, context_length: int | None, vocab_size: int | None) -> tuple[Settings, list[str]]:
    """Bring the pair-dependent settings (max new tokens, top-k) inside a newly loaded pair's bounds."""
    w = []
    limit = max_new_limit(context_length)
    if s.max_new_tokens > limit:
        w.append(f"Max new tokens lowered from {s.max_new_tokens} to {limit} to fit this pair's context window.")
        s = replace(s, max_new_tokens=limit)
    vocab = vocab_size or FALLBACK_VOCAB
    if s.top_k > vocab:
        w.append(f"Top-k lowered from {s.top_k} to this pair's vocabulary size, {vocab}.")
        s = replace(s, top_k=vocab)
    return s, w


# --- session state and the URL ---------------------------------------------------------------------

def init_from_url() -> None:
    """On a session's first run, copy the URL's settings (validated) into the widgets' state."""
    if st.session_state.get("s_initialised"):
        return
    s, warnings = settings_from_query({k: st.query_params.get_all(k) for k in st.query_params})
    for name, key in WIDGET_KEYS.items():
        st.session_state[key] = getattr(s, name)
    st.session_state["s_warnings"] = warnings
    st.session_state["s_initialised"] = True


def current() -> Settings:
    """The validated settings of this run (set by the frame before the page runs)."""
    return st.session_state.get("settings", DEFAULTS)


def _from_widgets() -> Settings:
    values = {name: st.session_state.get(key, getattr(DEFAULTS, name)) for name, key in WIDGET_KEYS.items()}
    values["prompt"], _ = clean_prompt(values["prompt"])
    if values["pair"] != CUSTOM:
        values["target"] = values["draft"] = ""
    return Settings(**values)


def _clean_widget_prompt() -> None:
    """Clean the prompt the browser sent before the text area is drawn (it may come from any client)."""
    raw = st.session_state.get("s_prompt")
    clean, notes = clean_prompt(raw)
    if notes or (raw is not None and clean != raw):
        st.session_state["s_prompt"] = clean
        st.session_state.setdefault("s_warnings", []).extend(notes)


def _apply_preset() -> None:
    label = st.session_state.get("s_preset")
    if label in PRESETS:
        st.session_state["s_prompt"] = PRESETS[label]
    st.session_state["s_preset"] = None  # behaves as a menu, not a mode


def _describe_pair(name: str) -> str:
    if name == CUSTOM:
        return "custom — a target and a drafter from this server's list of hub models"
    return f"{name} — {PAIRS[name].description}"


def _custom_pickers(sb, policy: Policy) -> None:
    """Two menus over the operator's allow-list: a student picks hub ids, never types them."""
    ids = list(policy.custom_allowlist)
    for key, label, default in (("s_target", "Custom target (hub id)", 0), ("s_draft", "Custom drafter (hub id)", 1)):
        if st.session_state.get(key) not in ids:
            st.session_state[key] = ids[min(default, len(ids) - 1)]
        sb.selectbox(label, ids, key=key)


def sidebar(load_pair) -> tuple[Settings, object, str | None]:
    """Draw the shared settings in the sidebar. `load_pair(name, target, draft)` returns (pair or None,
    error). Returns the validated settings, the loaded pair (None if it cannot be had) and the error."""
    sb = st.sidebar
    policy = operator.policy()
    if st.session_state.get("s_pair") not in policy.choices:  # the operator's list changed under us
        st.session_state["s_pair"] = policy.default_pair
    sb.selectbox("Model pair", list(policy.choices), key="s_pair", format_func=_describe_pair,
                 help="The bundled Shakespeare pair works offline; GPT-2 pairs need the models downloaded once.")
    if st.session_state["s_pair"] == CUSTOM:
        _custom_pickers(sb, policy)
    pair, error = load_pair(*_from_widgets().pair_args)
    if error:
        sb.error(error, icon=":material/cloud_off:")
    context = pair.context_length if pair is not None else None
    vocab = pair.vocab_size if pair is not None else None

    # Pair-dependent bounds: fix the stored values before the widgets are drawn with new limits.
    fixed, warnings = clamp_to_pair(_from_widgets(), context, vocab)
    st.session_state["s_max_new"] = fixed.max_new_tokens
    st.session_state["s_top_k"] = fixed.top_k
    if warnings:
        st.session_state.setdefault("s_warnings", []).extend(warnings)

    sb.selectbox("Prompt presets", list(PRESETS), index=None, key="s_preset", on_change=_apply_preset,
                 placeholder="Pick a preset line…")
    _clean_widget_prompt()
    sb.text_area("Prompt", key="s_prompt", max_chars=policy.max_prompt_chars, height=90)
    sb.slider("γ — draft tokens per round", *GAMMA_RANGE, key="s_gamma")
    sb.slider("Temperature (0 = greedy)", *TEMPERATURE_RANGE, step=0.05, key="s_temperature",
              help="0 makes every choice the argmax: speculative decoding then reproduces greedy decoding exactly.")
    c1, c2 = sb.columns(2)
    c1.number_input("Top-k (0 = off)", 0, vocab or FALLBACK_VOCAB, step=1, key="s_top_k")
    c2.number_input("Top-p (1 = off)", *TOP_P_RANGE, step=0.05, key="s_top_p", format="%.2f")
    c3, c4 = sb.columns(2)
    c3.number_input("Seed", *SEED_RANGE, step=1, key="s_seed",
                    help="Each generation draws from its own generator seeded with this: same seed, same text.")
    c4.number_input("Max new tokens", 1, max_new_limit(context), step=1, key="s_max_new")
    settings = _from_widgets()
    st.session_state["settings"] = settings
    return settings, pair, error


def sync_url(settings: Settings) -> None:
    """Write the settings into the URL (only when they differ, so the browser history stays quiet)."""
    wanted = settings.to_query()
    if {k: st.query_params.get(k) for k in wanted} != wanted or set(st.query_params) - set(wanted):
        st.query_params.from_dict(wanted)


def show_warnings() -> None:
    """Show, once, what was changed in the settings that came from the URL or a pair switch."""
    for message in st.session_state.pop("s_warnings", []):
        st.warning(message, icon=":material/tune:")
