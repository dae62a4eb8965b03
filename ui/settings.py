"""The settings every page shares: model pair, prompt, γ, sampling, seed and length.

They live in three places kept in step: the sidebar widgets (keys "s_*"), `st.session_state` (the
widgets' own state, plus the validated `Settings` under "settings"), and the URL query parameters,
so that a teacher can share a link that reproduces a demo. Values from a URL are untrusted:
`settings_from_query` clamps them into range and says, in words, what it changed.
"""
import math
from dataclasses import asdict, dataclass, replace
from typing import Mapping

import streamlit as st

from specdec_core.pairs import PAIRS
from specdec_core.sampling import SamplingConfig

GAMMA_RANGE = (1, 16)  # the sidebar's γ; the core allows up to MAX_GAMMA = 32
TEMPERATURE_RANGE = (0.0, 2.0)  # 0 = greedy
TOP_P_RANGE = (0.01, 1.0)  # 1 = off
SEED_RANGE = (0, 2**31 - 1)
MAX_NEW_CAP = 200  # keeps every page's generation within seconds on a CPU
MAX_PROMPT_CHARS = 1000
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
              "top_p": "top_p", "seed": "seed", "max_new_tokens": "max_new"}
# Settings field -> sidebar widget key.
WIDGET_KEYS = {"pair": "s_pair", "prompt": "s_prompt", "gamma": "s_gamma", "temperature": "s_temperature",
               "top_k": "s_top_k", "top_p": "s_top_p", "seed": "s_seed", "max_new_tokens": "s_max_new"}


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

    @property
    def sampling(self) -> SamplingConfig:
        return SamplingConfig(float(self.temperature), self.top_k or None,
                              float(self.top_p) if self.top_p < 1 else None)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

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
            out[QUERY_KEYS[name]] = f"{value:g}" if isinstance(value, float) else str(value)
        return out

    def signature(self) -> tuple:
        """A hashable identity, for knowing when a stored result is stale."""
        return tuple(asdict(self).values())


DEFAULTS = Settings()


def max_new_limit(context_length: int | None) -> int:
    """The largest max-new-tokens the sidebar offers for a pair with this context window."""
    return max(1, min(MAX_NEW_CAP, (context_length or FALLBACK_CONTEXT) - 1))


# --- parsing untrusted values ---------------------------------------------------------------------

def _last(raw):
    return raw[-1] if isinstance(raw, (list, tuple)) else raw


def _number(raw, label: str, lo, hi, default, integer: bool, warnings: list[str]):
    text = str(_last(raw)).strip()
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or (integer and value != int(value)):
        kind = "a whole number" if integer else "a finite number"
        warnings.append(f"The link's {label} `{text[:20]}` is not {kind}; using {default}.")
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
                        vocab_size: int | None = None) -> tuple[Settings, list[str]]:
    """Settings from URL query parameters (missing ones take the defaults), clamped into range,
    with one plain-words warning per value that was changed."""
    w: list[str] = []
    s = DEFAULTS
    q = {k: params[k] for k in params}
    if "pair" in q:
        pair = str(_last(q["pair"]))
        if pair in PAIRS:
            s = replace(s, pair=pair)
        else:
            w.append(f"The link asks for an unknown model pair `{pair[:40]}`; using `{DEFAULTS.pair}`.")
    if "prompt" in q:
        prompt = str(_last(q["prompt"]))
        if len(prompt) > MAX_PROMPT_CHARS:
            w.append(f"The link's prompt is {len(prompt)} characters; keeping the first {MAX_PROMPT_CHARS}.")
            prompt = prompt[:MAX_PROMPT_CHARS]
        s = replace(s, prompt=prompt)
    numeric = {
        "gamma": ("γ", *GAMMA_RANGE, True),
        "temperature": ("temperature", *TEMPERATURE_RANGE, False),
        "top_k": ("top-k", 0, vocab_size or FALLBACK_VOCAB, True),
        "top_p": ("top-p", *TOP_P_RANGE, False),
        "seed": ("seed", *SEED_RANGE, True),
        "max_new_tokens": ("max new tokens", 1, max_new_limit(context_length), True),
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
    values["prompt"] = str(values["prompt"] or "")[:MAX_PROMPT_CHARS]
    return Settings(**values)


def _apply_preset() -> None:
    label = st.session_state.get("s_preset")
    if label in PRESETS:
        st.session_state["s_prompt"] = PRESETS[label]
    st.session_state["s_preset"] = None  # behaves as a menu, not a mode


def _describe_pair(name: str) -> str:
    return f"{name} — {PAIRS[name].description}"


def sidebar(load_pair) -> tuple[Settings, object, str | None]:
    """Draw the shared settings in the sidebar. `load_pair(name)` returns (pair or None, error).
    Returns the validated settings, the loaded pair (None if it cannot be had) and the error."""
    sb = st.sidebar
    sb.selectbox("Model pair", list(PAIRS), key="s_pair", format_func=_describe_pair,
                 help="The bundled Shakespeare pair works offline; GPT-2 pairs need the models downloaded once.")
    pair, error = load_pair(st.session_state["s_pair"])
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
    sb.text_area("Prompt", key="s_prompt", max_chars=MAX_PROMPT_CHARS, height=90)
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
