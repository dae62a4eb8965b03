"""The load test's short version (scripts/load_test.py --quick): a real server, four headless-Chromium
students at once through Home, The Serial Tax (greedy and seeded) and the race, one leaving a race
mid-generation. No errors, and every output is the one a single session or a sequential run gives.
No timing assertions: the full report (docs/load_test.md) is where capacity is measured."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from classroom.tools.serve import CHROMIUM

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"no Chromium at {CHROMIUM} (run scripts/ensure_chromium.sh)")


def test_four_students_at_once_get_errors_free_identical_outputs(tmp_path):
    out = tmp_path / "summary.json"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "load_test.py"), "--quick", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads(out.read_text())
    report = summary["report"]
    assert summary["sessions"] == 4, report
    assert summary["errors"] == 0, report
    assert summary["differing"] == 0, report
    greedy_ok, greedy_n = map(int, summary["greedy_identical"].split("/"))
    seeded_ok, seeded_n = map(int, summary["seeded_identical"].split("/"))
    assert greedy_ok == greedy_n >= 4 and seeded_ok == seeded_n >= 8, report
    assert summary["abandoned"] >= 1, report
    assert proc.returncode == 0, report
