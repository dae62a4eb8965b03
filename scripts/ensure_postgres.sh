#!/usr/bin/env bash
# Debian's PostgreSQL server binaries for the class store's tests (tests/classroom/ start a throwaway server
# with initdb and pg_ctl through classroom/tools/pg.py; no server is left running, none is configured).
# Installs them when initdb is missing; without them the PostgreSQL half of those tests is skipped.
set -euo pipefail
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure_postgres: no apt-get here; install the PostgreSQL server (initdb, pg_ctl) yourself" \
         "(without it the class store's PostgreSQL tests are skipped)" >&2
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
echo "ensure_postgres: installing Debian's postgresql (once)…" >&2
$SUDO apt-get update -qq
# Debian may also create (and start) its own "main" cluster on port 5432: the tests never use it.
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >/dev/null
ls /usr/lib/postgresql/*/bin/initdb >/dev/null
