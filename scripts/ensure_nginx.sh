#!/usr/bin/env bash
# Debian's nginx for the proxy run (scripts/class_proxy_run.py, tests/e2e/test_class_proxy.py: nginx in front of
# two app processes on one PostgreSQL, started with its own configuration in a temporary folder; no system
# nginx is configured or left running). Installs it when missing; without it those tests are skipped.
set -euo pipefail
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure_nginx: no apt-get here; install nginx yourself (without it the proxy tests are skipped)" >&2
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
echo "ensure_nginx: installing Debian's nginx (once)…" >&2
$SUDO apt-get update -qq
# Debian's package may also start its own server on port 80 where a service manager runs: the tests never use it.
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nginx >/dev/null
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]
