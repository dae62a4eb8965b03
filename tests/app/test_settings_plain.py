"""The settings and the classroom policy are plain Python: they import, parse and clamp without Streamlit."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_settings_and_policy_import_without_streamlit():
    code = ("import sys; sys.modules['streamlit'] = None\n"  # any import of streamlit now fails
            "from ui.settings import settings_from_query\n"
            "from ui.classroom import policy_from\n"
            "policy = policy_from({'SPECDEC_MAX_NEW_TOKENS': '50'})\n"
            "s, w = settings_from_query({'max_new': '80', 'gamma': '3'}, policy=policy)\n"
            "assert (s.max_new_tokens, s.gamma) == (50, 3) and len(w) == 1, (s, w)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
