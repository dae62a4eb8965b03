"""The settings every page shares (model pair, prompt, γ, sampling, seed and length) and the parsing
of untrusted values into them. Plain Python: no Streamlit here, so every rule is testable alone.

Values from a URL or a widget are untrusted: `settings_from_query` and `clean_prompt` clamp and clean
them and say, in words, what they changed. Which pairs may be picked and how much one request may ask
for is the operator's `ClassroomRules` (ui/state/rules.py), passed in; a link can never name a file, a directory
or a URL. ui/state/sidebar.py draws these settings and keeps them in step with the URL.
"""
import math
import unicodedata
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace

from specdec_core.pairs import PAIRS
from specdec_core.policies import POLICIES, SIGNALS, describe, make_policy
from specdec_core.request import GenerationRequest
from specdec_core.sampling_config import SamplingConfig
from ui.state.defaults import DEFAULT_GAMMA, DEFAULT_PROMPT, DEFAULT_TEMPERATURE
from ui.state.rules import CUSTOM, ClassroomRules, NotAllowed, check_custom_pair, looks_like_path_or_url

GAMMA_RANGE = (1, 16)  # the sidebar's γ; the core allows up to MAX_GAMMA = 32
# The policy setting that stands for the adaptive policy measured best here for the drafter in use
# (pairs.ModelPair.adaptive_policy); Settings.for_drafter resolves it.
ADAPTIVE_DEFAULT = "adaptive"
POLICY_LABELS = {"constant": "constant γ (the paper)", ADAPTIVE_DEFAULT: "adaptive default (measured best per drafter)",
                 "heuristic": "heuristic schedule (+2 / −1)",
                 "confidence": "confidence stop", "acceptance": "acceptance-driven",
                 "hybrid": "acceptance-driven + confidence stop", "calibrated": "calibrated stop (predicted acceptance)"}
THRESHOLD_RANGE = (0.0, 1.0)
TEMPERATURE_RANGE = (0.0, 2.0)  # 0 = greedy
TOP_P_RANGE = (0.01, 1.0)  # 1 = off
SEED_RANGE = (0, 2**31 - 1)
MAX_NEW_CAP = 200  # default of SPECDEC_MAX_NEW_TOKENS: keeps every page's generation within seconds on a CPU
MAX_PROMPT_CHARS = 1000  # default of SPECDEC_MAX_PROMPT_CHARS
FALLBACK_CONTEXT = 1024  # bounds before a pair is loaded (or when it cannot be)
FALLBACK_VOCAB = 50257

PRESETS = {
    "Romeo at the window": DEFAULT_PROMPT,
    "Hamlet's question": "HAMLET:\nTo be, or not to be, that is the question:",
    "A citizen speaks": "First Citizen:\nBefore we proceed any further, hear me speak.",
    "Enter the king": "KING HENRY V:\nOnce more unto the breach, dear friends, once more;",
    "A stage direction": "Enter MACBETH and BANQUO.\n\nMACBETH:\n",
}

# Settings field -> URL query parameter name.
QUERY_KEYS = {"pair": "pair", "prompt": "prompt", "gamma": "gamma", "temperature": "temp", "top_k": "top_k",
              "top_p": "top_p", "seed": "seed", "max_new_tokens": "max_new", "target": "target", "draft": "draft",
              "policy": "policy", "policy_max_gamma": "pmax", "policy_threshold": "pthr", "policy_signal": "psig"}
CUSTOM_ONLY = ("target", "draft")  # in the URL only when the pair is a custom one
ADAPTIVE_ONLY = ("policy", "policy_max_gamma", "policy_threshold", "policy_signal")  # only for an adaptive policy


@dataclass(frozen=True)
class Settings:
    pair: str = "shakespeare"  # a key of specdec_core.pairs.PAIRS
    prompt: str = DEFAULT_PROMPT  # the app's defaults (ui/state/defaults.py)
    gamma: int = DEFAULT_GAMMA  # draft tokens per round
    temperature: float = DEFAULT_TEMPERATURE  # 1 = the target's own distribution; 0 = greedy
    top_k: int = 0  # 0 = off
    top_p: float = 1.0  # 1 = off
    seed: int = 0  # every generation gets its own generator seeded with this
    max_new_tokens: int = 40
    target: str = ""  # custom pairs only: hub ids from the operator's allow-list
    draft: str = ""
    policy: str = "constant"  # how each round's γ is chosen: a key of POLICIES, or ADAPTIVE_DEFAULT
    policy_max_gamma: int = 12  # adaptive policies: the longest round
    policy_threshold: float = 0.02  # confidence stop: draft while the drafter's confidence stays at or above
    policy_signal: str = "margin"  # confidence stop: "top" probability or top-1 − top-2 "margin"

    def for_drafter(self, pair, drafter: str = "draft") -> "Settings":
        """These settings with the adaptive default resolved to the policy that measured best here for
        `drafter` ("draft", the pair's default drafter, or a key of pair.self_drafters); any other
        policy setting comes back unchanged."""
        return replace(self, policy=pair.adaptive_policy(drafter)) if self.policy == ADAPTIVE_DEFAULT else self

    @property
    def draft_policy(self):
        """The draft-length policy these settings ask for (constant γ unless the sidebar chose another);
        the adaptive default must be resolved for a drafter first (`for_drafter`)."""
        if self.policy == ADAPTIVE_DEFAULT:
            raise ValueError("the adaptive default depends on the drafter: resolve it with for_drafter(pair, drafter)")
        return make_policy(self.policy, self.gamma, self.policy_max_gamma, self.policy_threshold, self.policy_signal)

    def describe_policy(self, pair=None, drafter: str = "draft") -> str:
        """The policy in words; the adaptive default is resolved for `drafter` of `pair` and says so."""
        if self.policy != ADAPTIVE_DEFAULT:
            return describe(self.draft_policy)
        if pair is None:
            return POLICY_LABELS[ADAPTIVE_DEFAULT]
        return f"{describe(self.for_drafter(pair, drafter).draft_policy)} (the adaptive default for this drafter)"

    @property
    def policy_args(self) -> tuple:
        """(name, gamma, max gamma, threshold, signal): hashable, for cached page functions."""
        return (self.policy, self.gamma, self.policy_max_gamma, float(self.policy_threshold), self.policy_signal)

    @property
    def sampling(self) -> SamplingConfig:
        return SamplingConfig.from_controls(self.temperature, self.top_k, self.top_p)

    def request(self, prompt_ids=(), max_new_tokens: int | None = None,
                eos_token_id: int | str | None = None) -> GenerationRequest:
        """What these settings ask the core for, about `prompt_ids`: one frozen, hashable object (so a page
        can cache on it; without a prompt, the template of an analysis that runs many prompts).
        `max_new_tokens` overrides the sidebar's (a chapter's own shorter run); eos stops nothing unless
        given, as every measured figure counts max_new_tokens tokens; the seed is the `effective_seed`
        (greedy requests share one)."""
        return GenerationRequest(prompt_ids, self.max_new_tokens if max_new_tokens is None else max_new_tokens,
                                 self.sampling, self.effective_seed, eos_token_id)

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
            if name in ADAPTIVE_ONLY and self.policy == "constant":  # links from before policies stay as they were
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
DEFAULT_RULES = ClassroomRules()  # a server with no operator settings


def current() -> Settings:
    """The validated settings of this script run (the frame stores them before the page runs)."""
    import streamlit as st  # the one touch of Streamlit, at call time: importing this module needs none
    return st.session_state.get("settings", DEFAULTS)


def max_new_limit(context_length: int | None, rules: ClassroomRules = DEFAULT_RULES) -> int:
    """The largest max-new-tokens the sidebar offers for a pair with this context window."""
    return max(1, min(rules.max_new_tokens, (context_length or FALLBACK_CONTEXT) - 1))


# --- parsing untrusted values ---------------------------------------------------------------------

def _last(raw):
    return raw[-1] if isinstance(raw, (list, tuple)) else raw


def shown(text, limit: int = 40) -> str:
    """Untrusted text quoted for a message: printable characters only, no backticks (so it cannot end
    the code span and turn into markdown), at most `limit` characters."""
    text = str(text)
    quoted = "".join(ch if ch.isprintable() and ch != "`" else "?" for ch in text[:limit])
    return f"`{quoted}`" + ("…" if len(text) > limit else "")


def clean_prompt(raw, limit: int = MAX_PROMPT_CHARS) -> tuple[str, list[str]]:
    """A prompt safe to tokenize and show: line breaks normalised, control characters (NUL and the
    like) and lone surrogates removed, at most `limit` characters. Returns it with what was changed."""
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


def _pair_from_query(q: dict, rules: ClassroomRules, w: list[str]) -> dict:
    """The pair (and, for a custom pair, its two hub ids) a link asks for, if this server allows it."""
    default = {"pair": rules.default_pair, "target": "", "draft": ""}
    if "pair" not in q:
        return default
    pair = str(_last(q["pair"]))
    fallback = f"using `{rules.default_pair}`"
    if pair == CUSTOM:
        target, draft = (str(_last(q.get(k, ""))) for k in ("target", "draft"))
        try:
            check_custom_pair(target, draft, rules)
        except NotAllowed as err:
            w.append(f"The link asks for a custom pair, but {err}; {fallback}.")
            return default
        return {"pair": CUSTOM, "target": target, "draft": draft}
    if pair in rules.pairs:
        return {**default, "pair": pair}
    if looks_like_path_or_url(pair):
        w.append(f"The link's model pair {shown(pair)} looks like a file path or a web address. A link can only "
                 f"choose one of this server's pairs ({', '.join(rules.choices)}); {fallback}.")
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
                        vocab_size: int | None = None, rules: ClassroomRules = DEFAULT_RULES) -> tuple[Settings, list[str]]:
    """Settings from URL query parameters (missing ones take the defaults), clamped into range and to
    the operator's classroom rules, with one plain-words warning per value that was changed."""
    w: list[str] = []
    q = {k: params[k] for k in params}
    s = replace(DEFAULTS, **_pair_from_query(q, rules, w))
    if "prompt" in q:
        prompt, notes = clean_prompt(_last(q["prompt"]), rules.max_prompt_chars)
        w += [n.replace("The prompt", "The link's prompt", 1) for n in notes]
        s = replace(s, prompt=prompt)
    if "policy" in q:
        name = str(_last(q["policy"]))
        if name in POLICIES or name == ADAPTIVE_DEFAULT:
            s = replace(s, policy=name)
        else:
            w.append(f"The link asks for an unknown draft-length policy {shown(name)}; using constant γ.")
    if "psig" in q:
        signal = str(_last(q["psig"]))
        if signal in SIGNALS:
            s = replace(s, policy_signal=signal)
        else:
            w.append(f"The link's confidence signal {shown(signal)} is not one of {', '.join(SIGNALS)}; "
                     f"using {DEFAULTS.policy_signal}.")
    numeric = {
        "gamma": ("γ", *GAMMA_RANGE, True),
        "policy_max_gamma": ("longest round (max γ)", *GAMMA_RANGE, True),
        "policy_threshold": ("confidence threshold", *THRESHOLD_RANGE, False),
        "temperature": ("temperature", *TEMPERATURE_RANGE, False),
        "top_k": ("top-k", 0, vocab_size or FALLBACK_VOCAB, True),
        "top_p": ("top-p", *TOP_P_RANGE, False),
        "seed": ("seed", *SEED_RANGE, True),
        "max_new_tokens": ("max new tokens", 1, max_new_limit(context_length, rules), True),
    }
    for name, (label, lo, hi, integer) in numeric.items():
        key = QUERY_KEYS[name]
        if key in q:
            s = replace(s, **{name: _number(q[key], label, lo, hi, getattr(DEFAULTS, name), integer, w)})
    return s, w


def clamp_to_pair(s: Settings, context_length: int | None, vocab_size: int | None,
                  rules: ClassroomRules = DEFAULT_RULES) -> tuple[Settings, list[str]]:
    """Bring the pair-dependent settings (max new tokens, top-k) inside a newly loaded pair's bounds."""
    w = []
    limit = max_new_limit(context_length, rules)
    if s.max_new_tokens > limit:
        w.append(f"Max new tokens lowered from {s.max_new_tokens} to {limit} to fit this pair's context window.")
        s = replace(s, max_new_tokens=limit)
    vocab = vocab_size or FALLBACK_VOCAB
    if s.top_k > vocab:
        w.append(f"Top-k lowered from {s.top_k} to this pair's vocabulary size, {vocab}.")
        s = replace(s, top_k=vocab)
    return s, w
