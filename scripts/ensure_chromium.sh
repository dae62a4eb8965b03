#!/usr/bin/env bash
# Debian's Chromium for the real-browser tests (tests/e2e/test_browser.py drives it through Playwright's
# executable_path; Playwright's own browser download is never used). Installs it when it is missing.
set -euo pipefail
if [ -n "${SPECDEC_CHROMIUM:-}" ] || [ -x /usr/bin/chromium ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure_chromium: no apt-get here; install Chromium yourself and set SPECDEC_CHROMIUM=/path/to/chromium" \
         "(without it the browser tests are skipped)" >&2
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
echo "ensure_chromium: installing Debian's chromium (once)…" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
test -x /usr/bin/chromium
