#!/usr/bin/env bash
# Refresh docs/screenshots/ (shown in the README) from a real-browser run over every chapter.
set -euo pipefail
cd "$(dirname "$0")/.."
out="tmp/screenshots"
rm -rf "$out"
SPECDEC_SCREENSHOTS="$out" .venv/bin/python -m pytest -q tests/e2e/test_browser.py
mkdir -p docs/screenshots
rm -f docs/screenshots/*.png
cp "$out"/*.png docs/screenshots/
ls docs/screenshots
