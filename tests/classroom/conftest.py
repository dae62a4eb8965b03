"""The class store's fixtures: a small question bank of the tests' own, a clock the tests move, and a
store on each backend: a SQLite file, and a real PostgreSQL server started once per session (as the
`postgres` OS user, in a temporary folder, on a free port) with a fresh database per test."""
import itertools

import pytest
from sqlalchemy import create_engine, text

import classroom
from classroom.tools.pg import PostgresMissing, temporary_postgres
from tests.classroom.support import BANK_RAW

BANKS = itertools.count()


class Clock:
    """Seconds since the epoch that move only when a test says so."""

    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def bank():
    return classroom.bank_from(BANK_RAW)


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture(scope="session")
def pg_server():
    """The URL of a throwaway PostgreSQL server for the whole session (skipped, with the reason, without one)."""
    try:
        with temporary_postgres(durable=False) as url:
            yield url
    except PostgresMissing as err:
        pytest.skip(f"PostgreSQL tests skipped: {err}")


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    """A database URL with nothing in it yet, on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'class.sqlite3'}"
    server = request.getfixturevalue("pg_server")
    name = f"t{next(BANKS)}_{tmp_path.name.lower()[:40]}".replace("-", "_")
    admin = create_engine(server.replace("postgresql://", "postgresql+psycopg://"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return server.rsplit("/", 1)[0] + "/" + name


@pytest.fixture
def store(url, bank, clock):
    s = classroom.open_store(url, bank=bank, clock=clock)
    yield s
    s.close()
