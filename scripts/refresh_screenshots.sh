#!/usr/bin/env bash
# Refresh docs/screenshots/ (shown in the README) from a real-browser run over every chapter and class mode.
set -euo pipefail
cd "$(dirname "$0")/.."
out="tmp/screenshots"
rm -rf "$out"
SPECDEC_SCREENSHOTS="$out" .venv/bin/python -m pytest -q tests/e2e/test_browser.py tests/e2e/test_class_mode.py
mkdir -p docs/screenshots
rm -f docs/screenshots/*.png
cp "$out"/[0-9]*.png "$out"/class-projector-1280.png "$out"/class-student-390.png docs/screenshots/
ls docs/screenshots
