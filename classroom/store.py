"""The class store: a teacher opens votes on questions, students join with a code and vote, the room sees
counts. Every state a class has lives in the database, so a server restart loses nothing, and several
server processes (or threads of one) may share one store.

Every mutating call is one transaction that checks everything before it writes: a refused call (a
`ClassError`, or `PermissionError` for a wrong teacher key) leaves the database as it was.
"""
import csv
import io
import threading
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError

from . import checks, codes
from .engine import WRITE, make_engine
from .errors import BadInput, RoomLocked, TooManyRequests, UnknownClass, UnknownQuestion, UnknownStudent, VoteNotOpen
from .questions import Bank
from .schema import VERDICT_MAX, VOTE_KEY, class_questions, classes, ensure_schema, question_facts, students, votes

RETENTION = timedelta(days=30)  # a class, its students and its votes are deleted this long after creation
MAX_QUESTIONS = 100  # per class
MAX_STUDENTS = 500  # per class
MAX_CLASSES = 10_000  # live classes per store (older ones expire first)
VOTE_BURST, VOTE_WINDOW_S = 10, 10.0  # at most this many accepted votes per student per window
JOINS_PER_ADDRESS, JOIN_WINDOW_S = 5, 60.0  # default: seats one network address may take per class per window


@dataclass(frozen=True)
class ClassInfo:
    """A new class: the join code for the room, the teacher key for the teacher only."""
    code: str
    teacher_key: str = field(repr=False)  # kept out of logs and tracebacks


@dataclass(frozen=True)
class ClassState:
    """What the class page draws from: the class as the database has it now."""
    code: str
    question_ids: tuple[str, ...]
    question_id: str | None  # the current question (None before the first vote opens)
    round: int | None  # its current round
    open: bool  # whether votes are accepted now
    revealed: bool  # whether the room sees the current round's histogram
    students: int  # joined so far
    answers: int  # votes in the current question's current round
    locked: bool = False  # the teacher locked the room: no new seats


@dataclass(frozen=True)
class RoomFacts:
    """What the room may see of a class's questions beyond the votes, as the database has it now."""
    version: int  # one more after every change the room sees (Store.room_version)
    answer_shown: frozenset[str]  # questions whose right answer the teacher showed
    verdicts: dict[str, tuple[int, str]]  # predict-the-demo question -> (the option the demo decided, why)


def _upsert(dialect_insert):
    insert = dialect_insert(votes)
    return insert.on_conflict_do_update(index_elements=[votes.c[name] for name in VOTE_KEY],
                                        set_={"option": insert.excluded.option, "voted_at": insert.excluded.voted_at})


# The statements of a vote and a poll, built once: in a vote rush they run hundreds of times a second, and
# building a statement (SQLAlchemy's coercions, the upsert's `excluded` columns) cost more than running it.
UPSERT_VOTE = {"sqlite": _upsert(sqlite_insert), "postgresql": _upsert(pg_insert)}
CLASS_BY_CODE = select(classes).where(classes.c.code == bindparam("code"))
CLASS_QUERIES = {"plain": CLASS_BY_CODE, "lock": CLASS_BY_CODE.with_for_update(),
                 "share": CLASS_BY_CODE.with_for_update(read=True)}
VERSION_BY_CODE = select(classes.c.version).where(classes.c.code == bindparam("code"))
STUDENT_IN_CLASS = select(students).where(students.c.token == bindparam("token"),
                                          students.c.class_id == bindparam("class_id"))
STUDENT_IN_CLASS_LOCKED = STUDENT_IN_CLASS.with_for_update()
N_OPTIONS = select(class_questions.c.n_options).where(class_questions.c.class_id == bindparam("class_id"),
                                                      class_questions.c.question_id == bindparam("question_id"))
COUNT_VOTE = students.update().where(students.c.id == bindparam("who")).values(
    window_start=bindparam("start"), window_votes=bindparam("count"))


def record_vote(conn, values: dict) -> None:
    """Insert a vote, or replace the same student's earlier vote in the same question and round."""
    conn.execute(UPSERT_VOTE[conn.dialect.name], values)


class Store:
    """The class store on one database. Thread-safe: it holds the engine (a pool), the bank, and (SQLite)
    the lock its writing threads take turns on."""

    def __init__(self, url: str, bank: Bank, clock=time.time):
        self.engine = make_engine(url)
        # SQLite has one writer. Threads of this process take turns here, in order, rather than each
        # polling the database's lock with growing sleeps (its busy handler: the long tail of a vote rush).
        # Writers in other processes still wait through the busy timeout.
        self._one_writer = threading.Lock() if self.engine.dialect.name == "sqlite" else nullcontext()
        self.bank = bank
        self.clock = clock  # seconds since the epoch; tests pass their own
        try:
            with self._write() as conn:
                ensure_schema(conn)
        except BaseException:
            self.engine.dispose()  # a refused database (say, a newer schema) keeps no connection open
            raise

    @contextmanager
    def _transaction(self, write: bool):
        with self._one_writer if write else nullcontext(), self.engine.connect() as conn:
            if write:
                conn.execution_options(**WRITE)  # SQLite: BEGIN IMMEDIATE (see engine.py)
            with conn.begin():
                yield conn

    def _write(self):
        return self._transaction(write=True)

    def _read(self):
        return self._transaction(write=False)

    def close(self) -> None:
        """Close the pool's connections (the database is untouched)."""
        self.engine.dispose()

    # --- the class and its teacher -------------------------------------------------------------------

    def create_class(self, question_ids) -> ClassInfo:
        """A new class over these bank questions, in this order; expires old classes first."""
        if isinstance(question_ids, str) or not isinstance(question_ids, list | tuple):
            raise BadInput("question_ids must be a list of question ids")
        if not 1 <= len(question_ids) <= MAX_QUESTIONS:
            raise BadInput(f"a class has 1 to {MAX_QUESTIONS} questions")
        questions = [self.bank.get(checks.question_id(q)) for q in question_ids]
        if len({q.id for q in questions}) != len(questions):
            raise BadInput("a question appears twice in the class")
        key = codes.new_teacher_key()
        for _attempt in range(5):  # a join code that is already taken is drawn again
            try:
                with self._write() as conn:
                    self._expire(conn, self.clock())
                    if conn.execute(select(func.count()).select_from(classes)).scalar() >= MAX_CLASSES:
                        raise TooManyRequests("this server holds as many classes as it can: try again later")
                    code = codes.new_code()
                    class_id = conn.execute(classes.insert().values(
                        code=code, teacher_hash=codes.hash_key(key), created_at=self.clock(),
                        vote_open=False, revealed=False)).inserted_primary_key[0]
                    conn.execute(class_questions.insert(), [
                        {"class_id": class_id, "position": i, "question_id": q.id, "n_options": len(q.options)}
                        for i, q in enumerate(questions)])
                return ClassInfo(code, key)
            except IntegrityError:
                continue
        raise TooManyRequests("could not draw a free class code: try again")

    def check_teacher(self, code, teacher_key) -> None:
        """Nothing when `teacher_key` is this class's key; PermissionError otherwise."""
        with self._read() as conn:
            self._teacher_class(conn, code, teacher_key, lock=False)

    def open_vote(self, code, teacher_key, question_id, round=1) -> None:
        """Make this question current and open its round (round 2 after round 1: the revote after
        discussion); hides any revealed histogram. Earlier votes of that round are kept."""
        with self._write() as conn:
            row = self._teacher_class(conn, code, teacher_key)
            self._n_options(conn, row.id, question_id)
            conn.execute(classes.update().where(classes.c.id == row.id).values(
                question_id=question_id, round=checks.round_(round), vote_open=True, revealed=False,
                version=classes.c.version + 1))

    def close_vote(self, code, teacher_key) -> None:
        """Stop accepting votes for the current question and round (no-op when none is open)."""
        with self._write() as conn:
            row = self._teacher_class(conn, code, teacher_key)
            conn.execute(classes.update().where(classes.c.id == row.id).values(vote_open=False,
                                                                                version=classes.c.version + 1))

    def reveal(self, code, teacher_key) -> None:
        """Show the current round's histogram to the room; closes the vote, so what the room sees is
        final. Opening the next vote hides it again (as does `hide`)."""
        with self._write() as conn:
            row = self._teacher_class(conn, code, teacher_key)
            if row.question_id is None:
                raise VoteNotOpen("no question has been opened yet: there is nothing to reveal")
            conn.execute(classes.update().where(classes.c.id == row.id).values(vote_open=False, revealed=True,
                                                                                version=classes.c.version + 1))

    def hide(self, code, teacher_key) -> None:
        """Take the histogram off the room's screen (the votes are kept)."""
        with self._write() as conn:
            row = self._teacher_class(conn, code, teacher_key)
            conn.execute(classes.update().where(classes.c.id == row.id).values(revealed=False,
                                                                                version=classes.c.version + 1))

    def show_answer(self, code, teacher_key, question_id) -> None:
        """Let the room see this question's right answer (before the second vote, which shows it anyway)."""
        with self._write() as conn:
            row = self._teacher_class(conn, code, teacher_key)
            self._n_options(conn, row.id, question_id)
            self._set_facts(conn, row.id, question_id, answer_shown=True)

    def record_verdict(self, code, teacher_key, question_id, option, why) -> None:
        """A predict-the-demo question's verdict, once its demo has run: the option it decided and a
        sentence saying why (the room sees both; a later run replaces them)."""
        checks.whole(option, "the verdict's option")
        if not isinstance(why, str) or len(why) > VERDICT_MAX:
            raise BadInput(f"a verdict is a sentence of at most {VERDICT_MAX} characters")
        with self._write() as conn:
            row = self._teacher_class(conn, code, teacher_key)
            checks.option(option, self._n_options(conn, row.id, question_id))
            self._set_facts(conn, row.id, question_id, verdict_option=option, verdict_text=why)

    # --- students --------------------------------------------------------------------------------------

    def join(self, code) -> str:
        """A new student of this class: the opaque student id its votes carry."""
        return self._join(code, None, None)

    def join_from(self, code, address, per_window: int = JOINS_PER_ADDRESS) -> str:
        """A new student joining from the network address `address` (the phone page's join): refused
        (TooManyRequests) when this address already took `per_window` seats of this class in the last
        JOIN_WINDOW_S seconds. Only a keyed hash of the address is stored."""
        if not isinstance(address, str) or not address or len(address) > 256:
            raise BadInput("the address a phone joins from must be a short text")
        return self._join(code, address, checks.whole(per_window, "the joins per address"))

    def _join(self, code, address, per_window) -> str:
        with self._write() as conn:
            row = self._class(conn, code, lock=True)
            if row.locked:
                raise RoomLocked("the teacher has locked this class: no new phones can join now. "
                                 "Ask the teacher to unlock it")
            joined = conn.execute(select(func.count()).select_from(students)
                                  .where(students.c.class_id == row.id)).scalar()
            if joined >= MAX_STUDENTS:
                raise TooManyRequests(f"this class is full ({MAX_STUDENTS} students)")
            token, now = codes.new_student_id(), self.clock()
            seen_from = None if address is None else codes.hash_address(row.teacher_hash, address)
            if seen_from is not None:
                recent = conn.execute(select(func.count()).select_from(students).where(
                    students.c.class_id == row.id, students.c.joined_from == seen_from,
                    students.c.joined_at > now - JOIN_WINDOW_S)).scalar()
                if recent >= per_window:
                    raise TooManyRequests(f"too many phones joined from your network in the last minute "
                                          f"(at most {per_window}): wait a minute and try again, or ask the teacher")
            conn.execute(students.insert().values(class_id=row.id, token=token, joined_at=now,
                                                  window_start=now, window_votes=0, joined_from=seen_from))
            return token

    def lock(self, code, teacher_key, locked=True) -> None:
        """Lock the room (no new student may join; the seated keep voting), or unlock it (`locked=False`)."""
        if not isinstance(locked, bool):
            raise BadInput("locked must be True or False")
        with self._write() as conn:
            row = self._teacher_class(conn, code, teacher_key)
            conn.execute(classes.update().where(classes.c.id == row.id).values(locked=locked))

    def vote(self, code, student_id, question_id, option, round=1) -> None:
        """Record this student's answer to the open round; a second vote in the same round replaces
        the first. Refused (nothing written) unless that question and round are open now."""
        student_id, question_id = checks.student(student_id), checks.question_id(question_id)
        round = checks.round_(round)
        checks.whole(option, "the option")
        with self._write() as conn:
            row = self._class(conn, code, share=True)
            # Locked: two votes of one student in two processes must not both pass the rate check.
            who = conn.execute(STUDENT_IN_CLASS_LOCKED, {"token": student_id, "class_id": row.id}).first()
            if who is None:
                raise UnknownStudent("this student has not joined this class: join again with the code")
            checks.option(option, self._n_options(conn, row.id, question_id))
            if not (row.vote_open and row.question_id == question_id and row.round == round):
                raise VoteNotOpen("this vote is not open: wait for the teacher to open it")
            now = self.clock()
            fresh = now - who.window_start >= VOTE_WINDOW_S
            if not fresh and who.window_votes >= VOTE_BURST:
                raise TooManyRequests(f"too many votes at once: at most {VOTE_BURST} every "
                                      f"{VOTE_WINDOW_S:g} seconds; your last vote counts")
            conn.execute(COUNT_VOTE, {"who": who.id, "start": now if fresh else who.window_start,
                                      "count": 1 if fresh else who.window_votes + 1})
            record_vote(conn, {"class_id": row.id, "question_id": question_id, "round": round,
                               "student_id": who.id, "option": option, "voted_at": now})

    # --- what the room and the teacher see -----------------------------------------------------------

    def state(self, code) -> ClassState:
        """The class now: questions, current question and round, open, revealed, students, answers."""
        with self._read() as conn:
            row = self._class(conn, code)
            ids = tuple(conn.execute(select(class_questions.c.question_id).where(class_questions.c.class_id == row.id)
                                     .order_by(class_questions.c.position)).scalars())
            joined = conn.execute(select(func.count()).select_from(students)
                                  .where(students.c.class_id == row.id)).scalar()
            answers = 0
            if row.question_id is not None:
                answers = conn.execute(select(func.count()).select_from(votes).where(
                    votes.c.class_id == row.id, votes.c.question_id == row.question_id,
                    votes.c.round == row.round)).scalar()
            return ClassState(row.code, ids, row.question_id, row.round, bool(row.vote_open), bool(row.revealed),
                              joined, answers, bool(row.locked))

    def room_version(self, code) -> int:
        """The class's change counter: one more after every change the room sees (open, close, reveal,
        hide, an answer shown, a verdict). One indexed read: a phone asks it before anything else."""
        with self._read() as conn:
            version = conn.execute(VERSION_BY_CODE, {"code": checks.code(code)}).scalar()
        if version is None:
            raise UnknownClass("no class has this code (it may have ended): check the code on the screen")
        return version

    def facts(self, code) -> RoomFacts:
        """The answers shown and the demo verdicts of this class, with its change counter."""
        with self._read() as conn:
            row = self._class(conn, code)
            rows = conn.execute(select(question_facts).where(question_facts.c.class_id == row.id)).all()
        return RoomFacts(row.version, frozenset(r.question_id for r in rows if r.answer_shown),
                         {r.question_id: (r.verdict_option, r.verdict_text) for r in rows if r.verdict_option is not None})

    def check_student(self, code, student_id) -> None:
        """Nothing when `student_id` joined this class; UnknownStudent otherwise."""
        student_id = checks.student(student_id)
        with self._read() as conn:
            self._student(conn, self._class(conn, code).id, student_id)

    def ballot(self, code, student_id, question_id, round=1) -> int | None:
        """This student's vote (the option) in this question and round, None before any."""
        student_id, question_id, round = checks.student(student_id), checks.question_id(question_id), checks.round_(round)
        with self._read() as conn:
            row = self._class(conn, code)
            who = self._student(conn, row.id, student_id)
            return conn.execute(select(votes.c.option).where(
                votes.c.class_id == row.id, votes.c.question_id == question_id, votes.c.round == round,
                votes.c.student_id == who.id)).scalar()

    def tally(self, code, question_id, round=1) -> dict[int, int]:
        """Votes per option index for this question and round, every option present (0 when unvoted)."""
        question_id, round = checks.question_id(question_id), checks.round_(round)
        with self._read() as conn:
            row = self._class(conn, code)
            counts = dict.fromkeys(range(self._n_options(conn, row.id, question_id)), 0)
            counts.update(conn.execute(
                select(votes.c.option, func.count()).where(votes.c.class_id == row.id, votes.c.question_id == question_id,
                                                          votes.c.round == round).group_by(votes.c.option)).all())
            return counts

    def export_csv(self, code, teacher_key) -> str:
        """The class's counts as CSV (question, round, option, count): every question, every round
        that has a vote, every option. Counts only: no student id ever leaves the store."""
        with self._read() as conn:
            row = self._teacher_class(conn, code, teacher_key, lock=False)
            questions = conn.execute(select(class_questions.c.question_id, class_questions.c.n_options)
                                     .where(class_questions.c.class_id == row.id)
                                     .order_by(class_questions.c.position)).all()
            counts = {(q, r, o): n for q, r, o, n in conn.execute(
                select(votes.c.question_id, votes.c.round, votes.c.option, func.count())
                .where(votes.c.class_id == row.id).group_by(votes.c.question_id, votes.c.round, votes.c.option))}
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["question", "round", "option", "count"])
        for question_id, n_options in questions:
            for round in sorted({r for q, r, _ in counts if q == question_id}):
                writer.writerows([question_id, round, o, counts.get((question_id, round, o), 0)]
                                 for o in range(n_options))
        return out.getvalue()

    def expire(self, now: datetime | None = None) -> int:
        """Delete every class created more than RETENTION before `now` (default: the store's clock),
        with its students and votes; returns how many classes went. create_class runs it too."""
        with self._write() as conn:
            return self._expire(conn, self.clock() if now is None else now.timestamp())

    # --- inside a transaction --------------------------------------------------------------------------

    def _class(self, conn, code, lock=False, share=False):
        # PostgreSQL row locks order the votes against open/close; SQLite's BEGIN IMMEDIATE does
        query = CLASS_QUERIES["lock" if lock else "share" if share else "plain"]
        row = conn.execute(query, {"code": checks.code(code)}).first()
        if row is None:
            raise UnknownClass("no class has this code (it may have ended): check the code on the screen")
        return row

    def _teacher_class(self, conn, code, teacher_key, lock=True):
        row = self._class(conn, code, lock=lock)
        if not codes.key_matches(teacher_key, row.teacher_hash):
            raise PermissionError("this is not the teacher key of this class")
        return row

    def _student(self, conn, class_id, token, lock=False):
        params = {"token": token, "class_id": class_id}
        who = conn.execute(STUDENT_IN_CLASS_LOCKED if lock else STUDENT_IN_CLASS, params).first()
        if who is None:
            raise UnknownStudent("this student has not joined this class: join again with the code")
        return who

    def _set_facts(self, conn, class_id, question_id, **values) -> None:
        """Insert or update this question's facts row, and count the change for the room."""
        key = {"class_id": class_id, "question_id": question_id}
        updated = conn.execute(question_facts.update().where(question_facts.c.class_id == class_id,
                                                             question_facts.c.question_id == question_id).values(**values))
        if updated.rowcount == 0:  # the class row is locked (BEGIN IMMEDIATE / FOR UPDATE): no racing insert
            conn.execute(question_facts.insert().values(**{"answer_shown": False, **key, **values}))
        conn.execute(classes.update().where(classes.c.id == class_id).values(version=classes.c.version + 1))

    def _n_options(self, conn, class_id, question_id) -> int:
        n = conn.execute(N_OPTIONS, {"class_id": class_id, "question_id": checks.question_id(question_id)}).scalar()
        if n is None:
            raise UnknownQuestion(f"the question {question_id!r} is not in this class")
        return n

    def _expire(self, conn, now: float) -> int:
        old = select(classes.c.id).where(classes.c.created_at < now - RETENTION.total_seconds())
        for table in (votes, students, class_questions, question_facts):  # children first: no reliance on ON DELETE CASCADE
            conn.execute(delete(table).where(table.c.class_id.in_(old)))
        return conn.execute(delete(classes).where(classes.c.id.in_(old))).rowcount
