"""The settings sidebar, kept in step with the URL: the Streamlit half of ui/state/settings.py.

The settings live in three places kept in step: the sidebar widgets (keys "s_*"), `st.session_state`
(the widgets' own state, plus the validated `Settings` under "settings"), and the URL query
parameters, so that a teacher can share a link that reproduces a demo.
"""
import streamlit as st

from specdec_core.pairs import PAIRS
from specdec_core.policies import DEFAULT_ADAPTIVE, SIGNALS
from ui.state import tree_settings
from ui.state.rules import CUSTOM, ClassroomRules
from ui.state.settings import (
    ADAPTIVE_DEFAULT,
    DEFAULTS,
    FALLBACK_VOCAB,
    GAMMA_RANGE,
    POLICY_LABELS,
    PRESETS,
    SEED_RANGE,
    TEMPERATURE_RANGE,
    THRESHOLD_RANGE,
    TOP_P_RANGE,
    Settings,
    clamp_to_pair,
    clean_prompt,
    max_new_limit,
    settings_from_query,
)

# Settings field -> sidebar widget key.
WIDGET_KEYS = {"pair": "s_pair", "prompt": "s_prompt", "gamma": "s_gamma", "temperature": "s_temperature",
               "top_k": "s_top_k", "top_p": "s_top_p", "seed": "s_seed", "max_new_tokens": "s_max_new",
               "target": "s_target", "draft": "s_draft", "policy": "s_policy", "policy_max_gamma": "s_policy_max",
               "policy_threshold": "s_policy_threshold", "policy_signal": "s_policy_signal"}


def init_from_url(rules: ClassroomRules) -> None:
    """On a session's first run, copy the URL's settings (validated against the operator's `rules`) into the
    widgets' state."""
    if st.session_state.get("s_initialised"):
        return
    s, warnings = settings_from_query({k: st.query_params.get_all(k) for k in st.query_params},
                                      rules=rules)
    for name, key in WIDGET_KEYS.items():
        st.session_state[key] = getattr(s, name)
    st.session_state["s_warnings"] = warnings
    st.session_state["s_initialised"] = True


def _from_widgets(rules: ClassroomRules) -> Settings:
    values = {name: st.session_state.get(key, getattr(DEFAULTS, name)) for name, key in WIDGET_KEYS.items()}
    values["prompt"], _ = clean_prompt(values["prompt"], rules.max_prompt_chars)
    if values["pair"] != CUSTOM:
        values["target"] = values["draft"] = ""
    return Settings(**values)


def _clean_widget_prompt(rules: ClassroomRules) -> None:
    """Clean the prompt the browser sent before the text area is drawn (it may come from any client)."""
    raw = st.session_state.get("s_prompt")
    clean, notes = clean_prompt(raw, rules.max_prompt_chars)
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


CUSTOM_PICKERS = (("s_target", "Custom target (hub id)", 0), ("s_draft", "Custom drafter (hub id)", 1))


def _custom_defaults(rules: ClassroomRules) -> None:
    """Before the pair is loaded: a custom pair's two ids, kept within the operator's allow-list."""
    ids = list(rules.custom_allowlist)
    for key, _, default in CUSTOM_PICKERS:
        if st.session_state.get(key) not in ids:
            st.session_state[key] = ids[min(default, len(ids) - 1)]


def _custom_pickers(sb, rules: ClassroomRules) -> None:
    """Two menus over the operator's allow-list: a student picks hub ids, never types them."""
    for key, label, _ in CUSTOM_PICKERS:
        sb.selectbox(label, list(rules.custom_allowlist), key=key)


def _policy_widgets(sb, pair) -> None:
    """How each round's γ is chosen: constant (the paper, and the default) or an adaptive policy; the
    adaptive default is the one measured best on this machine for the drafter a page uses."""
    if st.session_state.get("s_policy") not in POLICY_LABELS:
        st.session_state["s_policy"] = DEFAULTS.policy
    sb.selectbox("Draft length", list(POLICY_LABELS), key="s_policy", format_func=POLICY_LABELS.get,
                 help="Constant: every round drafts γ. Adaptive policies choose each round's length as they go; "
                      "the output stays exactly the target's either way.")
    name = st.session_state["s_policy"]
    if name == "constant":
        return
    if name == ADAPTIVE_DEFAULT:
        sb.caption(_adaptive_defaults_text(pair))
    if name in ("heuristic", ADAPTIVE_DEFAULT):
        sb.caption("The γ slider above (outside *Advanced settings*) is where the heuristic schedule starts.")
    sb.slider("Longest round (max γ)", *GAMMA_RANGE, key="s_policy_max")
    if name in ("confidence", "hybrid", ADAPTIVE_DEFAULT):
        c1, c2 = sb.columns(2)
        c1.number_input("Confidence threshold", *THRESHOLD_RANGE, step=0.01, key="s_policy_threshold", format="%.3f",
                        help="Keep drafting while the drafter's confidence in its next token is at least this.")
        c2.selectbox("Signal", list(SIGNALS), key="s_policy_signal",
                     format_func={"margin": "top-1 − top-2", "top": "top probability"}.get)


def _adaptive_defaults_text(pair) -> str:
    """Which policy the adaptive default is for each of the pair's drafters, and where that was measured."""
    if pair is None:
        return f"No pair loaded: the adaptive default is {POLICY_LABELS[DEFAULT_ADAPTIVE]}."
    names = {"draft": next(iter(pair.drafts)), **{k: d.name for k, d in pair.self_drafters.items()}}
    drafters = ["draft", *pair.self_drafters]
    parts = [f"{names.get(d, d)}: {POLICY_LABELS[pair.adaptive_policy(d)]}" for d in drafters]
    measured = [pair.adaptive_choices[d] for d in drafters if d in pair.adaptive_choices]
    source = (f"the one that measured best against every fixed γ (`specdec bench-policies --record`, "
              f"{measured[0]['when']})" if measured else "not measured for this pair, so the built-in choice")
    return "Adaptive default per drafter, " + source + ": " + "; ".join(parts) + "."


def sidebar(load_pair, rules: ClassroomRules) -> tuple[Settings, object, str | None]:
    """Draw the shared settings in the sidebar, within the operator's `rules`. `load_pair(name, target, draft)`
    returns (pair or None, error). Returns the validated settings, the loaded pair (None if it cannot be had)
    and the error."""
    sb = st.sidebar
    if st.session_state.get("s_pair") not in rules.choices:  # the operator's list changed under us
        st.session_state["s_pair"] = rules.default_pair
    if st.session_state["s_pair"] == CUSTOM:
        _custom_defaults(rules)
    # The pair is chosen under "Advanced settings" (drawn below); it is loaded first, since its context length and
    # vocabulary bound the other settings.
    pair, error = load_pair(*_from_widgets(rules).pair_args)
    if error:
        sb.error(error, icon=":material/cloud_off:")
    context = pair.context_length if pair is not None else None
    vocab = pair.vocab_size if pair is not None else None

    # Pair-dependent bounds: fix the stored values before the widgets are drawn with new limits.
    fixed, warnings = clamp_to_pair(_from_widgets(rules), context, vocab, rules)
    st.session_state["s_max_new"] = fixed.max_new_tokens
    st.session_state["s_top_k"] = fixed.top_k
    if warnings:
        st.session_state.setdefault("s_warnings", []).extend(warnings)

    # Up front: what a lesson changes (the prompt, γ, temperature).
    sb.selectbox("Prompt presets", list(PRESETS), index=None, key="s_preset", on_change=_apply_preset,
                 placeholder="Pick a preset line…")
    _clean_widget_prompt(rules)
    sb.text_area("Prompt", key="s_prompt", max_chars=rules.max_prompt_chars, height=90)
    sb.slider("γ — draft tokens per round", *GAMMA_RANGE, key="s_gamma")
    sb.slider("Temperature (0 = greedy)", *TEMPERATURE_RANGE, step=0.05, key="s_temperature",
              help="0 makes every choice the argmax: speculative decoding then reproduces greedy decoding exactly.")

    # The rest, folded: still in the URL like every setting.
    adv = sb.expander("Advanced settings", icon=":material/tune:")
    adv.selectbox("Model pair", list(rules.choices), key="s_pair", format_func=_describe_pair,
                  help="The bundled Shakespeare pair works offline; GPT-2 pairs need the models downloaded once.")
    if st.session_state["s_pair"] == CUSTOM:
        _custom_pickers(adv, rules)
    _policy_widgets(adv, pair)
    c1, c2 = adv.columns(2)
    c1.number_input("Top-k (0 = off)", 0, vocab or FALLBACK_VOCAB, step=1, key="s_top_k")
    c2.number_input("Top-p (1 = off)", *TOP_P_RANGE, step=0.05, key="s_top_p", format="%.2f")
    c3, c4 = adv.columns(2)
    c3.number_input("Seed", *SEED_RANGE, step=1, key="s_seed",
                    help="Each generation draws from its own generator seeded with this: same seed, same text.")
    c4.number_input("Max new tokens", 1, max_new_limit(context, rules), step=1, key="s_max_new")
    settings = _from_widgets(rules)
    st.session_state["settings"] = settings
    return settings, pair, error


PAGE_QUERY_KEYS = tree_settings.QUERY_KEYS  # owned (read, clamped, written) by one chapter: left as they are


def sync_url(settings: Settings) -> None:
    """Write the settings into the URL (only when they differ, so the browser history stays quiet)."""
    wanted = settings.to_query()
    wanted.update({k: st.query_params.get(k) for k in PAGE_QUERY_KEYS if k in st.query_params})
    if {k: st.query_params.get(k) for k in wanted} != wanted or set(st.query_params) - set(wanted):
        st.query_params.from_dict(wanted)


def show_warnings() -> None:
    """Show, once, what was changed in the settings that came from the URL or a pair switch."""
    for message in st.session_state.pop("s_warnings", []):
        st.warning(message, icon=":material/tune:")
