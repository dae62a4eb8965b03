"""The quiz: questions from a data file (assets/quiz.json), graded here.

Two kinds of question:
  choice   options, the index of the right one, an explanation;
  numeric  a prompt with {placeholders}, and `compute`: a function of `theory` (or `break_even_v`, built
           on it here) and its arguments. The right answer is computed, never typed into the data
           file, so it always agrees with the formulas the app draws; an answer within `tolerance`
           of it counts.
Every question names the chapter (page path) that teaches it.

A numeric question's prompt and explanation may also use {expected} (expected tokens per target pass at
its alpha and gamma), {accepted} (the accepted drafts among them) and {draft_cost} (gamma * c): the
working is computed too, never typed.
Choice options are shown in an order fixed by the seed, the attempt and the question (`option_order`),
so the position of the right answer says nothing.
"""
import hashlib
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

from specdec_core import theory


def break_even_v(alpha: float, gamma: int, c: float) -> float:
    """The verification cost v (in single target passes) at which a speculative round takes exactly as long
    as plain decoding of the tokens it yields: expected tokens - gamma * c. Above it speculation is slower."""
    return theory.expected_tokens(alpha, gamma) - gamma * c


QUIZ_FILE = Path(__file__).resolve().parents[2] / "assets" / "quiz.json"
# The theory functions a numeric question may call (nothing else is reachable from the data file).
FUNCTIONS = {
    "expected_tokens": theory.expected_tokens,
    "walltime_improvement": theory.walltime_improvement,
    "speedup": theory.speedup,
    "optimal_gamma": theory.optimal_gamma,
    "expected_operations_increase": theory.expected_operations_increase,
    "accepted_per_drafted": theory.accepted_per_drafted,
    "break_even_v": break_even_v,
}
DEFAULT_TOLERANCE = 0.01


@dataclass(frozen=True)
class Question:
    id: str
    kind: str  # "choice" | "numeric"
    chapter: str  # page path, e.g. "chapters/alpha_dial.py"
    prompt: str  # markdown, placeholders already filled in
    explanation: str
    options: tuple[str, ...] = ()
    answer_index: int | None = None  # choice
    function: str | None = None  # numeric
    args: tuple[tuple[str, float], ...] = ()
    tolerance: float = DEFAULT_TOLERANCE
    unit: str = ""

    @property
    def answer(self):
        """The right option's index (choice) or the number theory computes (numeric)."""
        if self.kind == "choice":
            return self.answer_index
        return float(FUNCTIONS[self.function](**dict(self.args)))

    def is_correct(self, given) -> bool:
        """Whether `given` (an option index, or a number) is right; None is never right."""
        if given is None:
            return False
        if self.kind == "choice":
            return int(given) == self.answer_index
        try:
            value = float(given)
        except (TypeError, ValueError):
            return False
        return math.isfinite(value) and abs(value - self.answer) <= self.tolerance

    def answer_text(self) -> str:
        if self.kind == "choice":
            return self.options[self.answer_index]
        value = self.answer
        shown = f"{value:.0f}" if float(value).is_integer() else f"{value:.2f}"
        return f"{shown}{self.unit}"


def _question(raw: dict, chapters: set[str] | None) -> Question:
    qid = raw.get("id")
    if not isinstance(qid, str) or not qid:
        raise ValueError(f"a question has no id: {raw!r:.80}")
    where = f"question {qid!r}"
    for key in ("kind", "chapter", "prompt", "explanation"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise ValueError(f"{where}: missing text field {key!r}")
    if chapters is not None and raw["chapter"] not in chapters:
        raise ValueError(f"{where}: unknown chapter {raw['chapter']!r}")
    if raw["kind"] == "choice":
        options = raw.get("options")
        if not isinstance(options, list) or len(options) < 2 or not all(isinstance(o, str) for o in options):
            raise ValueError(f"{where}: a choice question needs at least two text options")
        answer = raw.get("answer")
        if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < len(options):
            raise ValueError(f"{where}: answer must be an option index in [0, {len(options)})")
        return Question(qid, "choice", raw["chapter"], raw["prompt"], raw["explanation"], tuple(options), answer)
    if raw["kind"] == "numeric":
        compute = raw.get("compute") or {}
        fn, args = compute.get("function"), compute.get("args")
        if fn not in FUNCTIONS:
            raise ValueError(f"{where}: compute.function must be one of {sorted(FUNCTIONS)}, got {fn!r}")
        if not isinstance(args, dict) or not all(isinstance(v, (int, float)) for v in args.values()):
            raise ValueError(f"{where}: compute.args must map argument names to numbers")
        tolerance = raw.get("tolerance", DEFAULT_TOLERANCE)
        if not isinstance(tolerance, (int, float)) or tolerance < 0:
            raise ValueError(f"{where}: tolerance must be a number >= 0")
        try:
            prompt = raw["prompt"].format(**args, **derived(args))
            explanation = raw["explanation"].format(**args, **derived(args), answer=float(FUNCTIONS[fn](**args)))
        except (KeyError, IndexError, ValueError) as err:
            raise ValueError(f"{where}: a placeholder in the prompt or explanation does not match: {err}") from err
        return Question(qid, "numeric", raw["chapter"], prompt, explanation, function=fn,
                        args=tuple(args.items()), tolerance=float(tolerance), unit=str(raw.get("unit", "")))
    raise ValueError(f"{where}: kind must be 'choice' or 'numeric', got {raw['kind']!r}")


def derived(args: dict) -> dict:
    """Intermediate figures a numeric explanation may show, computed from its arguments."""
    out = {}
    if "alpha" in args and "gamma" in args:
        out["expected"] = theory.expected_tokens(args["alpha"], args["gamma"])
        out["accepted"] = out["expected"] - 1  # every round ends with one token that is not a draft
    if "gamma" in args and "c" in args:
        out["draft_cost"] = args["gamma"] * args["c"]
    return out


def load(path: Path = QUIZ_FILE, chapters=None) -> list[Question]:
    """The questions of a quiz file, validated (ValueError says what is wrong, and where).
    `chapters`: the page paths a question may link to (None: not checked)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"cannot read the quiz file {path}: {err}") from err
    raw = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{path}: expected an object with a non-empty 'questions' list")
    allowed = set(chapters) if chapters is not None else None
    questions = [_question(q, allowed) for q in raw]
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: question ids must be unique")
    return questions


def class_quiz(chapters=None) -> list[Question]:
    """The class quiz's concept questions (assets/class_quiz.json, loaded and checked by classroom), for
    taking alone: the predict-the-demo ones need a live demo to decide them, so they are left out.
    `chapters`: the page paths a question may link to (None: not checked)."""
    import classroom  # the class store's loader; imported here so the practice quiz does not need it
    try:
        bank = classroom.load_bank()
    except classroom.BadInput as err:
        raise ValueError(str(err)) from err
    questions = [Question(q.id, "choice", q.chapter, q.prompt, q.explanation, q.options, q.answer)
                 for q in bank.questions if q.demo is None]
    if chapters is not None and (stray := [q.id for q in questions if q.chapter not in set(chapters)]):
        raise ValueError(f"class quiz questions link to no chapter: {stray}")
    return questions


def shuffled(questions: list[Question], seed: int) -> list[Question]:
    """The questions in an order fixed by the seed (the same seed, the same order)."""
    order = list(questions)
    random.Random(seed).shuffle(order)
    return order


def option_order(q: Question, seed: int) -> list[int]:
    """The option indices of a choice question in the order to show them: fixed by `seed` (the quiz's
    seed and attempt) and the question's id, so each question is shuffled on its own."""
    digest = hashlib.sha256(f"{seed}:{q.id}".encode()).digest()
    order = list(range(len(q.options)))
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
    return order


def score(questions: list[Question], answers: dict) -> tuple[int, int]:
    """(right answers, questions) for answers given as {question id: option index or number}."""
    return sum(q.is_correct(answers.get(q.id)) for q in questions), len(questions)
