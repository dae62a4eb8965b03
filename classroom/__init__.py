"""Class mode's store: a teacher opens votes on questions, a room of students joins with a short code and
votes from their phones, the projector shows counts. SQLite by default, PostgreSQL through a URL.

    store = open_store()                      # SPECDEC_CLASS_DB, else data/classroom.sqlite3
    info = store.create_class(["q1", "q2"])   # info.code for the room, info.teacher_key for the teacher
    me = store.join(info.code)                # the phone page calls join_from(code, address): a few seats per address
    store.lock(info.code, info.teacher_key)   # no new seats (locked=False unlocks)
    store.open_vote(info.code, info.teacher_key, "q1")
    store.vote(info.code, me, "q1", option=2)
    store.tally(info.code, "q1")              # {0: 0, 1: 0, 2: 1, 3: 0}
    store.facts(info.code)                    # answers shown, demo verdicts (RoomFacts)

Refusals are ClassError (a ValueError) subclasses with plain-words messages; a wrong teacher key is a
PermissionError. A refused call writes nothing.
"""
from pathlib import Path

from .engine import ENV_VAR, default_url
from .errors import (
    BadInput,
    BadOption,
    ClassError,
    RoomLocked,
    TooManyRequests,
    UnknownClass,
    UnknownQuestion,
    UnknownStudent,
    VoteNotOpen,
)
from .questions import BANK_FILE, Bank, Question, bank_from, load_bank
from .store import (
    JOIN_WINDOW_S,
    JOINS_PER_ADDRESS,
    MAX_CLASSES,
    MAX_QUESTIONS,
    MAX_STUDENTS,
    RETENTION,
    ClassInfo,
    ClassState,
    RoomFacts,
    Store,
)


def open_store(url: str | None = None, bank: Bank | Path | None = None, clock=None) -> Store:
    """A store on `url` (any SQLAlchemy URL; postgresql:// goes through psycopg). None: the operator's
    SPECDEC_CLASS_DB, else a SQLite file in the app's data folder. `bank`: a Bank, a class-quiz file,
    or None for assets/class_quiz.json. `clock`: seconds since the epoch (tests; default time.time).
    Creates or upgrades the schema. Share one store per process: it is thread-safe."""
    if bank is None or isinstance(bank, str | Path):
        bank = load_bank(BANK_FILE if bank is None else Path(bank))
    kwargs = {} if clock is None else {"clock": clock}
    return Store(default_url() if url is None else url, bank, **kwargs)


__all__ = [
    "open_store", "default_url", "ENV_VAR", "Store", "ClassInfo", "ClassState", "RoomFacts", "Bank", "Question", "load_bank",
    "bank_from", "BANK_FILE", "RETENTION", "JOINS_PER_ADDRESS", "JOIN_WINDOW_S", "MAX_STUDENTS", "MAX_QUESTIONS", "MAX_CLASSES",
    "ClassError", "BadInput", "BadOption", "RoomLocked", "TooManyRequests", "UnknownClass", "UnknownQuestion", "UnknownStudent",
    "VoteNotOpen",
]
