"""Arguments checked before any database is asked: right type, bounded size, the shape of a name.

Each check returns the value the store will use, or raises a ClassError subclass whose message says
what was expected; a hostile string is measured before it is searched, and never echoed at length.
"""
from .codes import is_token, normalize_code
from .errors import BadInput, BadOption, UnknownClass
from .questions import QUESTION_ID

MAX_ROUND = 5  # round 1 is the first vote, round 2 the revote after discussion; a few more are allowed


def _text(value, what: str, longest: int) -> str:
    if not isinstance(value, str):
        raise BadInput(f"{what} must be text, got {type(value).__name__}")
    if len(value) > longest:
        raise BadInput(f"{what} is too long ({len(value)} characters; at most {longest})")
    return value


def code(value) -> str:
    """A join code as the database stores it (upper case, no spaces); UnknownClass when it cannot be one."""
    normalized = normalize_code(_text(value, "the class code", 64))
    if normalized is None:
        raise UnknownClass(f"{value[:12]!r} is not a class code: a code is 6 letters and digits, as on the screen")
    return normalized


def student(value) -> str:
    """A student id's text; BadInput when it does not have the shape of one."""
    if not is_token(_text(value, "the student id", 64)):
        raise BadInput("a student id is letters, digits, '-' and '_' only")
    return value


def question_id(value) -> str:
    """A question id's text; BadInput when it does not have the shape of one."""
    if not QUESTION_ID.fullmatch(_text(value, "the question id", 64)):
        raise BadInput("a question id is 1-64 letters, digits, '.', '_' or '-'")
    return value


def whole(value, what: str) -> int:
    """An int (not a bool, not a float that happens to be whole)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"{what} must be a whole number, got {type(value).__name__}")
    return value


def round_(value) -> int:
    """A round number in 1..MAX_ROUND."""
    if not 1 <= whole(value, "the round") <= MAX_ROUND:
        raise BadInput(f"the round must be between 1 and {MAX_ROUND}")
    return value


def option(value, n_options: int) -> int:
    """An option index of a question with `n_options` options."""
    if not 0 <= whole(value, "the option") < n_options:
        raise BadOption(f"this question has options 0 to {n_options - 1} only")
    return value
