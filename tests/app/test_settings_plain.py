"""The settings and the classroom rules are plain Python: they import, parse and clamp without Streamlit."""
import math
import subprocess
import sys
from pathlib import Path

import pytest

from ui.state import settings
from ui.state.settings import Settings, settings_from_query

ROOT = Path(__file__).resolve().parents[2]


def test_settings_and_classroom_rules_import_without_streamlit():
    code = ("import sys; sys.modules['streamlit'] = None\n"  # any import of streamlit now fails
            "from ui.state.settings import settings_from_query\n"
            "from ui.state.rules import rules_from\n"
            "rules = rules_from({'SPECDEC_MAX_NEW_TOKENS': '50'})\n"
            "s, w = settings_from_query({'max_new': '80', 'gamma': '3'}, rules=rules)\n"
            "assert (s.max_new_tokens, s.gamma) == (50, 3) and len(w) == 1, (s, w)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("raw, expected", [
    ({"gamma": "0"}, 1), ({"gamma": "16"}, 16), ({"gamma": "17"}, 16), ({"gamma": ["3", "5"]}, 5),
    ({"gamma": "2.5"}, Settings().gamma), ({"gamma": "inf"}, Settings().gamma)])
def test_settings_from_query_gamma(raw, expected):
    s, warnings = settings_from_query(raw)
    assert s.gamma == expected
    assert bool(warnings) == (raw["gamma"] not in ("16", ["3", "5"]))


def test_settings_from_query_bounds():
    s, w = settings_from_query({"temp": "-1", "seed": str(2**31), "prompt": "x" * 5000, "max_new": "300"},
                               context_length=64)
    assert s.temperature == 0.0 and s.seed == 2**31 - 1 and len(s.prompt) == settings.MAX_PROMPT_CHARS
    assert s.max_new_tokens == 63 and len(w) == 4
    s, w = settings_from_query({"temp": "1e999", "top_p": "nan"})
    assert math.isfinite(s.temperature) and s.top_p == 1.0 and len(w) == 2
    assert settings_from_query({}) == (Settings(), [])


def test_the_apps_defaults_are_the_cores_documented_lab_run():
    """The app's defaults live in ui/state/defaults.py; Identical Outputs' lab story needs them to be the
    core's documented run (the exact rule passes, every broken rule fails)."""
    from specdec_core.analysis import lab
    from ui.state import defaults, settings
    assert (defaults.DEFAULT_PROMPT, defaults.DEFAULT_GAMMA, defaults.DEFAULT_TEMPERATURE) == (
        lab.DOCUMENTED_PROMPT, lab.DOCUMENTED_GAMMA, lab.DOCUMENTED_TEMPERATURE)
    assert settings.DEFAULTS.prompt == lab.DOCUMENTED_PROMPT in settings.PRESETS.values()
    assert (settings.DEFAULTS.gamma, settings.DEFAULTS.sampling) == (lab.DOCUMENTED_GAMMA, lab.DOCUMENTED_SAMPLING)


def test_settings_give_the_request_they_ask_for():
    """Pages ask the core through one frozen request, not five primitives."""
    s = Settings(temperature=0.0, seed=7, max_new_tokens=12)
    r = s.request([5, 6, 7])
    assert (r.prompt_ids, r.max_new_tokens, r.sampling, r.eos_token_id) == ((5, 6, 7), 12, s.sampling, None)
    assert r.seed == s.effective_seed == 0  # greedy: one seed for all, so a class shares one cached result
    assert hash(r) == hash(Settings(temperature=0.0, seed=8, max_new_tokens=12).request((5, 6, 7)))
    assert s.request([5], 3, "model").max_new_tokens == 3 and s.request([5], 3, "model").eos_token_id == "model"
