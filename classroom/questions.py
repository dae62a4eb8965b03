"""The class's question bank: choice questions from assets/class_quiz.json, by id.

The file has the schema of assets/quiz.json's "choice" questions (id, kind, chapter, prompt, options,
answer, explanation). A question may also carry a "demo" object (a predict-the-demo question: the page
runs that demo after the vote); the store never reads it, the loader only keeps it, read-only. Such a
question may leave "answer" null, since the demo decides it; every other question names its right option.
"""
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from .errors import BadInput, UnknownQuestion

BANK_FILE = Path(__file__).resolve().parent.parent / "assets" / "class_quiz.json"
QUESTION_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")  # the store keeps ids in a 64-character column
MAX_OPTIONS = 8  # a histogram a room can read at a glance
MAX_BANK = 500


@dataclass(frozen=True)
class Question:
    id: str
    chapter: str  # the page that teaches it, e.g. "chapters/round_by_round.py"
    prompt: str  # markdown
    options: tuple[str, ...]
    answer: int | None  # index of the right option; None only for a demo question (the demo decides)
    explanation: str
    demo: Mapping | None = None  # predict-the-demo settings, read-only; None for a plain question


@dataclass(frozen=True)
class Bank:
    """Questions by id, in the file's order."""
    questions: tuple[Question, ...]

    def __post_init__(self):
        object.__setattr__(self, "_by_id", {q.id: q for q in self.questions})

    def ids(self) -> tuple[str, ...]:
        """Every question id, in order."""
        return tuple(q.id for q in self.questions)

    def get(self, question_id) -> Question:
        """The question with this id; UnknownQuestion when there is none."""
        question = self._by_id.get(question_id) if isinstance(question_id, str) else None
        if question is None:
            raise UnknownQuestion(f"there is no question {str(question_id)[:64]!r} in the question bank")
        return question


def question(raw) -> Question:
    """One question from its JSON object, validated (BadInput says what is wrong, and where)."""
    if not isinstance(raw, dict):
        raise BadInput(f"a question must be a JSON object, got {raw!r:.60}")
    qid = raw.get("id")
    if not isinstance(qid, str) or not QUESTION_ID.fullmatch(qid):
        raise BadInput(f"a question id must be 1-64 letters, digits, '.', '_' or '-', got {qid!r:.80}")
    where = f"question {qid!r}"
    if raw.get("kind") != "choice":
        raise BadInput(f"{where}: a class question has kind 'choice', got {raw.get('kind')!r:.40}")
    for key in ("chapter", "prompt", "explanation"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise BadInput(f"{where}: missing text field {key!r}")
    options = raw.get("options")
    if not isinstance(options, list) or not 2 <= len(options) <= MAX_OPTIONS \
            or not all(isinstance(o, str) and o.strip() for o in options):
        raise BadInput(f"{where}: needs 2 to {MAX_OPTIONS} text options")
    demo = raw.get("demo")
    if demo is not None and not isinstance(demo, dict):
        raise BadInput(f"{where}: demo must be an object when it is given")
    answer = raw.get("answer")
    if answer is None and demo is None:
        raise BadInput(f"{where}: answer may be null only in a question with a demo (the demo decides)")
    if answer is not None and (isinstance(answer, bool) or not isinstance(answer, int)
                               or not 0 <= answer < len(options)):
        raise BadInput(f"{where}: answer must be an option index in [0, {len(options)})")
    return Question(qid, raw["chapter"], raw["prompt"], tuple(options), answer, raw["explanation"],
                    MappingProxyType(dict(demo)) if demo is not None else None)


def bank_from(raw_questions) -> Bank:
    """A bank from a list of question objects (as in the file's "questions"), ids unique."""
    if not isinstance(raw_questions, list) or not 1 <= len(raw_questions) <= MAX_BANK:
        raise BadInput(f"a question bank is a list of 1 to {MAX_BANK} questions")
    questions = tuple(question(raw) for raw in raw_questions)
    if len({q.id for q in questions}) != len(questions):
        raise BadInput("question ids in a bank must be unique")
    return Bank(questions)


def load_bank(path: Path = BANK_FILE) -> Bank:
    """The bank of a class-quiz file (default: assets/class_quiz.json)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise BadInput(f"cannot read the class quiz file {path}: {err}") from err
    if not isinstance(data, dict):
        raise BadInput(f"{path}: expected an object with a 'questions' list")
    return bank_from(data.get("questions"))
