"""The class store's tables (SQLAlchemy Core), created and upgraded by the app itself.

Times are seconds since the epoch (a float), the same on SQLite and PostgreSQL. The votes table's
primary key (class, question, round, student) is what makes a second vote replace the first: the store
writes votes with an upsert on that key, and a plain second insert is refused by the database.
`schema_version` holds one row; `ensure_schema` creates what is missing and runs each upgrade step
from the stored version to SCHEMA_VERSION, inside one transaction.
"""
from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    UniqueConstraint,
    select,
    text,
)

from .errors import ClassError

SCHEMA_VERSION = 3

VERDICT_MAX = 500  # characters of a demo's verdict sentence
metadata = MetaData()

schema_version = Table(
    "schema_version", metadata,
    Column("id", Integer, primary_key=True),  # always 1: one row
    Column("version", Integer, nullable=False),
)

classes = Table(
    "classes", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("code", String(6), nullable=False, unique=True),
    Column("teacher_hash", String(64), nullable=False),  # SHA-256 of the teacher key, never the key
    Column("created_at", Float, nullable=False, index=True),  # expire() deletes by age
    Column("question_id", String(64)),  # the current question (None before the first vote opens)
    Column("round", Integer),  # the current round of it
    Column("vote_open", Boolean, nullable=False, default=False),
    Column("revealed", Boolean, nullable=False, default=False),
    # One more after every change the room sees (a vote opened, closed, revealed, hidden, an answer shown,
    # a demo's verdict): a phone that already has this version has nothing new to fetch.
    Column("version", Integer, nullable=False, default=0),
    Column("locked", Boolean, nullable=False, default=False),  # the teacher locked the room: no new seats
)

class_questions = Table(
    "class_questions", metadata,
    Column("class_id", Integer, ForeignKey("classes.id", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("question_id", String(64), nullable=False),
    # Kept here so a class in progress survives an edit of the bank file.
    Column("n_options", Integer, nullable=False),
    PrimaryKeyConstraint("class_id", "question_id"),
    UniqueConstraint("class_id", "position"),
)

students = Table(
    "students", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("class_id", Integer, ForeignKey("classes.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("token", String(64), nullable=False, unique=True),  # the opaque student id handed out
    Column("joined_at", Float, nullable=False),
    # The rate limit's window lives in the database, so it holds across server processes.
    Column("window_start", Float, nullable=False),
    Column("window_votes", Integer, nullable=False, default=0),
    # A keyed hash of the network address a phone joined from (None: joined through the store's API), so
    # one address takes only a few seats a minute; the address itself is never stored.
    Column("joined_from", String(64)),
)

votes = Table(
    "votes", metadata,
    Column("class_id", Integer, ForeignKey("classes.id", ondelete="CASCADE"), nullable=False),
    Column("question_id", String(64), nullable=False),
    Column("round", Integer, nullable=False),
    Column("student_id", Integer, ForeignKey("students.id", ondelete="CASCADE"), nullable=False),
    Column("option", Integer, nullable=False),
    Column("voted_at", Float, nullable=False),
    # One vote per student per question and round: the key an upsert replaces on.
    PrimaryKeyConstraint("class_id", "question_id", "round", "student_id", name="votes_one_per_student"),
)
Index("votes_by_student", votes.c.student_id)

# What the room may see of a question beyond its votes: whether the teacher showed the right answer, and
# a predict-the-demo question's verdict once the demo has run. A row only once one of them is set.
question_facts = Table(
    "question_facts", metadata,
    Column("class_id", Integer, ForeignKey("classes.id", ondelete="CASCADE"), nullable=False),
    Column("question_id", String(64), nullable=False),
    Column("answer_shown", Boolean, nullable=False, default=False),
    Column("verdict_option", Integer),  # the option the demo decided (None: no verdict yet)
    Column("verdict_text", String(VERDICT_MAX)),  # the sentence that says why
    PrimaryKeyConstraint("class_id", "question_id", name="question_facts_one_per_question"),
)


def _add_version_column(conn) -> None:
    """Version 1 to 2: the classes' change counter (question_facts is new: create_all makes it)."""
    conn.execute(text("ALTER TABLE classes ADD COLUMN version INTEGER NOT NULL DEFAULT 0"))


def _add_lock_and_join_address(conn) -> None:
    """Version 2 to 3: a class's lock, and the address hash each phone joined from."""
    conn.execute(text("ALTER TABLE classes ADD COLUMN locked BOOLEAN NOT NULL DEFAULT FALSE"))
    conn.execute(text("ALTER TABLE students ADD COLUMN joined_from VARCHAR(64)"))


# Upgrade steps: UPGRADES[v](conn) takes a version-v database to v + 1.
UPGRADES: dict = {1: _add_version_column, 2: _add_lock_and_join_address}

VOTE_KEY = ("class_id", "question_id", "round", "student_id")


def ensure_schema(conn) -> int:
    """Create missing tables and upgrade an older schema, in the caller's (write) transaction; returns
    the version now stored. A database written by a newer app is refused rather than guessed at."""
    if conn.dialect.name == "postgresql":
        # Several server processes may start at once: one creates the tables, the others wait here.
        conn.execute(text("SELECT pg_advisory_xact_lock(7305501)"))
    metadata.create_all(conn, checkfirst=True)
    stored = conn.execute(select(schema_version.c.version).where(schema_version.c.id == 1)).scalar()
    if stored is None:
        conn.execute(schema_version.insert().values(id=1, version=SCHEMA_VERSION))
        return SCHEMA_VERSION
    if stored > SCHEMA_VERSION:
        raise ClassError(f"the class database has schema version {stored}, newer than this app's "
                         f"{SCHEMA_VERSION}: update the app, or point SPECDEC_CLASS_DB at another database")
    for version in range(stored, SCHEMA_VERSION):
        UPGRADES[version](conn)
    conn.execute(schema_version.update().where(schema_version.c.id == 1).values(version=SCHEMA_VERSION))
    return SCHEMA_VERSION
