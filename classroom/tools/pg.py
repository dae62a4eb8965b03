"""A throwaway PostgreSQL server for the tests and the load script: initdb in a temporary folder, one
server on a free port of 127.0.0.1 with trust authentication, stopped and deleted on exit.

PostgreSQL refuses to run as root, so as root the server runs as the `postgres` OS user (runuser).
Never for production: trust authentication and, with `durable=False`, no fsync.
"""
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path


class PostgresMissing(RuntimeError):
    """No PostgreSQL server binaries (initdb, pg_ctl) on this machine."""


def bin_dir() -> Path:
    """The folder holding initdb and pg_ctl (Debian's versioned folder first, then PATH)."""
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.access(Path(candidate) / "initdb", os.X_OK) and os.access(Path(candidate) / "pg_ctl", os.X_OK):
            return Path(candidate)
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(initdb).resolve().parent
    raise PostgresMissing("no PostgreSQL server binaries (initdb, pg_ctl): install Debian's postgresql "
                          "(scripts/ensure_postgres.sh does)")


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def temporary_postgres(durable: bool = True):
    """Yields the URL of a fresh PostgreSQL server (database `postgres`, user `postgres`); stops it and
    deletes its files afterwards. `durable=False` turns fsync off: faster, for tests only."""
    bins = bin_dir()
    as_root = os.geteuid() == 0
    if as_root:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError as err:
            raise PostgresMissing("running as root and there is no `postgres` user to run the server as") from err
    folder = Path(tempfile.mkdtemp(prefix="specdec-pg-"))
    if as_root:
        os.chown(folder, owner.pw_uid, owner.pw_gid)
    prefix = ["runuser", "-u", "postgres", "--"] if as_root else []

    def run(*args):
        subprocess.run(prefix + [str(a) for a in args], check=True, capture_output=True, timeout=120, cwd=folder)

    data, port = folder / "data", free_port()
    options = f"-p {port} -c listen_addresses=127.0.0.1 -k {folder} -c max_connections=200"
    if not durable:
        options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    try:
        try:
            run(bins / "initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
            run(bins / "pg_ctl", "-D", data, "-o", options, "-l", folder / "server.log", "-w", "-t", "60", "start")
        except subprocess.CalledProcessError as err:
            log = folder / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"temporary PostgreSQL did not start: {err.stderr.decode(errors='replace')[-2000:]}"
                               f"\n{tail}") from err
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            run(bins / "pg_ctl", "-D", data, "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
