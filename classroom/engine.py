"""From a database URL to a SQLAlchemy engine that several threads and processes can write through.

SQLite (the embedded default) runs in WAL mode (synchronous=NORMAL) with a busy timeout, so readers never block the writer
and writers from several server processes wait for each other instead of failing; a write transaction
starts with BEGIN IMMEDIATE, taking the write lock before it reads, so two processes never both read a
row and then race to update it. PostgreSQL is reached through psycopg 3.
"""
import os
from pathlib import Path

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError

from .errors import BadInput

DEFAULT_DB_FILE = Path(__file__).resolve().parent.parent / "data" / "classroom.sqlite3"
ENV_VAR = "SPECDEC_CLASS_DB"  # the operator's setting: any SQLAlchemy URL
BUSY_TIMEOUT_S = 30  # how long a SQLite writer waits for another process's write to finish
WRITE = {"classroom_write": True}  # execution option: this transaction will write


def default_url() -> str:
    """The operator's SPECDEC_CLASS_DB, else a SQLite file in the app's data folder."""
    return os.environ.get(ENV_VAR) or f"sqlite:///{DEFAULT_DB_FILE}"


def driver_url(url: str):
    """`url` parsed, with a plain postgresql:// (or postgres://) URL mapped to the psycopg driver."""
    try:
        parsed = make_url(url)
    except (ArgumentError, TypeError, ValueError):
        # Not echoed: a mistyped URL may still hold a password.
        raise BadInput("SPECDEC_CLASS_DB (or the URL given) is not a database URL, e.g. "
                       "sqlite:///path/to/classroom.sqlite3 or postgresql://user@host/dbname") from None
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def make_engine(url: str) -> Engine:
    """An engine for `url` (SQLite file or PostgreSQL), tuned for many short write transactions."""
    parsed = driver_url(url)
    if parsed.get_backend_name() == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            raise BadInput("the class store needs a SQLite file (an in-memory database is one per connection)")
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(parsed, connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False})
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    if parsed.get_backend_name() != "postgresql":
        raise BadInput(f"the class store runs on SQLite or PostgreSQL, not {parsed.get_backend_name()!r}")
    return create_engine(parsed, pool_pre_ping=True)


def _sqlite_connect(dbapi_connection, _record):
    # Let SQLAlchemy's "begin" event issue BEGIN itself (pysqlite's own implicit BEGIN is deferred).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_S * 1000}")
    cursor.execute("PRAGMA journal_mode = WAL")
    # WAL's recommended durability: a commit is safe from a crash or restart of the app, and waits for no
    # fsync (the log is synced at checkpoints). Only a power cut or OS crash may lose the last commits.
    # Every vote waits its turn for SQLite's one writer, so an fsync per vote was most of a rush's wait.
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.close()


def _sqlite_begin(conn):
    immediate = conn.get_execution_options().get("classroom_write", False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
