"""A fair quiz: neither the length, the position, nor the wording of an option gives the answer away;
no two questions test the same thing with the same numbers, and no class question repeats a practice
one; every number in a computed question's working is computed. The length and wording checks run on
both banks (the practice bank and the class quiz's concept questions); each check runs on the whole
question file (so it holds for questions added later) and on a planted violation that it must catch.
The figures of the explanations are recomputed in test_quiz_numbers.py."""
import json
import re
from collections import Counter

import pytest

from tests.prose import typed_numbers
from ui.content import quiz

MAX_SHARE = 1 / 3
ABSOLUTE = re.compile(r"\b(never|only|always|nothing|every|all|cannot|none|no|exactly|whatever)\b", re.I)
SEEDS = range(40)


def choice_questions(bank=None) -> list[quiz.Question]:
    return [q for q in (bank or quiz.load()) if q.kind == "choice"]


def fixture(qid: str, options, answer: int) -> quiz.Question:
    return quiz.Question(qid, "choice", "chapters/home.py", "?", ".", tuple(options), answer)


# --- length --------------------------------------------------------------------------------------
# Three strategies a student could play on length alone: pick the longest option, pick the shortest, or
# rule both out and guess between the rest. Each must win at most a third of a bank's questions (a
# random guess wins a quarter of the four-option ones).

BANKS = {"practice": lambda: choice_questions(), "class": lambda: quiz.class_quiz()}


def longest_is_right(q: quiz.Question) -> bool:
    """Whether the right option is strictly longer than every other option (ties give nothing away)."""
    right = len(q.options[q.answer_index])
    return all(right > len(o) for i, o in enumerate(q.options) if i != q.answer_index)


def shortest_is_right(q: quiz.Question) -> bool:
    """Whether the right option is strictly shorter than every other option."""
    right = len(q.options[q.answer_index])
    return all(right < len(o) for i, o in enumerate(q.options) if i != q.answer_index)


def length_counts(questions) -> dict[str, int]:
    """How many questions have the right option longest, shortest, or neither (by characters)."""
    longest = sum(map(longest_is_right, questions))
    shortest = sum(map(shortest_is_right, questions))
    return {"longest": longest, "shortest": shortest, "neither": len(questions) - longest - shortest}


def length_giveaways(questions) -> list[str]:
    """The length strategies that win more than their share: longest or shortest in more than a third of
    the questions, or neither in more than two thirds (then ruling out both extremes pays)."""
    counts, n = length_counts(questions), len(questions)
    limits = {"longest": MAX_SHARE, "shortest": MAX_SHARE,
              "neither": 2 * MAX_SHARE}
    return [f"{kind}: {counts[kind]} of {n}" for kind, share in limits.items() if counts[kind] > share * n]


@pytest.mark.parametrize("bank", BANKS)
def test_no_length_strategy_beats_a_third_of_the_questions(bank):
    choice = BANKS[bank]()
    assert len(choice) >= 10
    assert not length_giveaways(choice), "write distractors as long and as plausible as the answer"


def test_the_length_check_catches_an_answer_that_is_always_longest_shortest_or_in_between():
    longest = [fixture(f"q{i}", ("short", "the long right answer", "tiny"), 1) for i in range(6)]
    shortest = [fixture(f"q{i}", ("a longer one", "right", "another long one"), 1) for i in range(6)]
    middle = [fixture(f"q{i}", ("a", "right", "the longest of all"), 1) for i in range(6)]
    for planted, kind in ((longest, "longest"), (shortest, "shortest"), (middle, "neither")):
        assert [g.split(":")[0] for g in length_giveaways(planted)] == [kind]
    mixed = longest[:2] + shortest[:2] + middle[:2]
    assert length_counts(mixed) == {"longest": 2, "shortest": 2, "neither": 2} and not length_giveaways(mixed)
    tie = fixture("t", ("2", "3", "4"), 1)
    assert not longest_is_right(tie) and not shortest_is_right(tie)


# --- position ------------------------------------------------------------------------------------

def right_positions(questions, order) -> Counter:
    """How often the right answer is shown at each position, over every question and SEEDS."""
    return Counter(order(q, seed).index(q.answer_index) for q in questions for seed in SEEDS)


def position_giveaway(questions, order) -> bool:
    """Whether some position holds the right answer far more often than chance (1 / options)."""
    counts = right_positions(questions, order)
    total = sum(counts.values())
    return max(counts.values()) > 1.5 * total / min(len(q.options) for q in questions)


def test_options_are_shuffled_per_seed_and_attempt_so_a_position_says_nothing():
    choice = choice_questions()
    assert not position_giveaway(choice, quiz.option_order)
    for q in choice:
        assert sorted(quiz.option_order(q, 1)) == list(range(len(q.options)))
        assert quiz.option_order(q, 1) == quiz.option_order(q, 1)  # the same seed and attempt: the same order
    moved = sum(quiz.option_order(q, 1) != quiz.option_order(q, 2) for q in choice)
    assert moved >= len(choice) // 2  # the next attempt reorders most questions


def test_the_position_check_catches_unshuffled_options():
    in_file_order = lambda q, seed: list(range(len(q.options)))
    planted = [fixture(f"q{i}", ("a", "b", "c", "d"), 0) for i in range(8)]
    assert position_giveaway(planted, in_file_order)
    assert not position_giveaway(planted, quiz.option_order)


# --- wording: absolutes --------------------------------------------------------------------------

def absolute_giveaways(questions) -> list[str]:
    """Questions where every wrong option speaks in absolutes and the right one does not, plus a
    bank-wide check: right answers carry absolutes at least half as often as wrong options do."""
    lonely = [q.id for q in questions if not ABSOLUTE.search(q.options[q.answer_index])
              and all(ABSOLUTE.search(o) for i, o in enumerate(q.options) if i != q.answer_index)]
    right = sum(bool(ABSOLUTE.search(q.options[q.answer_index])) for q in questions) / len(questions)
    wrong = [bool(ABSOLUTE.search(o)) for q in questions for i, o in enumerate(q.options) if i != q.answer_index]
    return lonely + (["(bank: wrong options lean on absolutes)"] if right < 0.5 * sum(wrong) / len(wrong) else [])


@pytest.mark.parametrize("bank", BANKS)
def test_wrong_options_are_not_the_only_absolutes(bank):
    assert not absolute_giveaways(BANKS[bank]())


def test_the_absolutes_check_catches_hedged_answers_among_absolute_distractors():
    planted = [fixture(f"q{i}", ("It usually helps", "It never helps", "It only helps on GPUs", "Nothing changes"), 0)
               for i in range(4)]
    assert absolute_giveaways(planted)


# --- near-duplicates -----------------------------------------------------------------------------

def duplicates(bank) -> list[tuple[str, str]]:
    """Pairs of questions that test the same thing: numeric ones sharing their (alpha, gamma, c), or
    choice ones with the same right answer."""
    pairs = []
    numeric = [q for q in bank if q.kind == "numeric"]
    for i, a in enumerate(numeric):
        for b in numeric[i + 1:]:
            key = lambda q: tuple(dict(q.args).get(k) for k in ("alpha", "gamma", "c"))
            if a.function == b.function and dict(a.args) == dict(b.args) or (
                    None not in key(a) and key(a) == key(b)):
                pairs.append((a.id, b.id))
    answers = Counter(q.options[q.answer_index].lower() for q in bank if q.kind == "choice" and len(q.options[0]) > 2)
    pairs += [(text, "twice") for text, n in answers.items() if n > 1]
    return pairs


def test_no_two_questions_test_the_same_thing():
    assert not duplicates(quiz.load())


def test_the_duplicate_check_catches_the_same_numbers_asked_twice():
    a = quiz.Question("a", "numeric", "chapters/home.py", "?", ".", function="walltime_improvement",
                      args=(("alpha", 0.8), ("gamma", 4), ("c", 0.05)))
    b = quiz.Question("b", "numeric", "chapters/home.py", "?", ".", function="speedup",
                      args=(("alpha", 0.8), ("gamma", 4), ("c", 0.05), ("v", 2.0)))
    assert duplicates([a, b]) == [("a", "b")]
    same = [fixture(f"q{i}", ("From the residual", "From p", "From q"), 0) for i in range(2)]
    assert duplicates(same)


NUMBER = re.compile(r"\d+(?:\.\d+)?")
WORD = re.compile(r"[^\W\d_]{3,}")
STOPWORDS = {"the", "and", "what", "which", "does", "how", "why", "when", "from", "that", "this", "its", "with",
             "then", "can", "for", "are", "was", "one"}
MAX_PROMPT_OVERLAP = 0.4  # Jaccard overlap of prompt words above which two questions are the same question


def prompt_numbers(q: quiz.Question) -> list[float]:
    return sorted(float(n) for n in NUMBER.findall(q.prompt))


def prompt_words(q: quiz.Question) -> set[str]:
    return {w.lower() for w in WORD.findall(q.prompt)} - STOPWORDS


def cross_duplicates(class_bank, practice_bank) -> list[tuple[str, str]]:
    """Class questions a student has already met in the practice bank: the same numbers in the prompt (at
    least two of them), the same right answer, or mostly the same words in the prompt."""
    pairs = []
    for c in class_bank:
        for p in practice_bank:
            same_numbers = len(prompt_numbers(c)) >= 2 and prompt_numbers(c) == prompt_numbers(p)
            same_answer = p.kind == "choice" and c.options[c.answer_index].lower() == p.options[p.answer_index].lower()
            words_c, words_p = prompt_words(c), prompt_words(p)
            overlap = len(words_c & words_p) / max(1, len(words_c | words_p))
            if same_numbers or same_answer or overlap > MAX_PROMPT_OVERLAP:
                pairs.append((c.id, p.id))
    return pairs


def test_no_class_question_repeats_a_practice_question():
    assert cross_duplicates(quiz.class_quiz(), quiz.load()) == []


def test_the_cross_bank_check_catches_the_same_numbers_the_same_answer_and_the_same_words():
    practice = quiz.Question("p", "numeric", "chapters/home.py", "α = 0.8 and γ = 4: tokens per round?", ".",
                             function="expected_tokens", args=(("alpha", 0.8), ("gamma", 4)))
    renumbered = fixture("c1", ("About 3.36", "3.2"), 0)
    object.__setattr__(renumbered, "prompt", "With γ = 4 and α = 0.8, how many tokens does a round make?")
    reworded = fixture("c2", ("a", "b"), 0)
    object.__setattr__(reworded, "prompt", "α = 0.8 and γ = 4: tokens per round, on average?")
    assert cross_duplicates([renumbered, reworded], [practice]) == [("c1", "p"), ("c2", "p")]
    same_key = fixture("c3", ("From the residual", "From p"), 0)
    assert cross_duplicates([same_key], [fixture("p2", ("From q", "From the residual"), 1)]) == [("c3", "p2")]
    other = fixture("c4", ("x", "y"), 0)
    object.__setattr__(other, "prompt", "Why can a tree pay on a GPU?")
    assert cross_duplicates([other], [practice]) == []


# --- every number computed -----------------------------------------------------------------------

def raw_questions(path=quiz.QUIZ_FILE) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["questions"]


def typed_in_numeric(raw: list[dict]) -> dict[str, list[str]]:
    """Numbers typed into a numeric question's prompt or working rather than computed from its args."""
    out = {}
    for q in raw:
        if q["kind"] == "numeric":
            found = typed_numbers(q["prompt"]) + typed_numbers(q["explanation"])
            if found:
                out[q["id"]] = found
    return out


def test_numeric_questions_type_no_numbers():
    assert typed_in_numeric(raw_questions()) == {}


def test_the_number_check_catches_a_typed_working():
    planted = [{"id": "w", "kind": "numeric", "prompt": "α = {alpha}?",
                "explanation": "Speedup = E / (γc + 1) = 3.36 / (4 · 0.05 + 1) ≈ {answer:.2f}×."}]
    assert typed_in_numeric(planted) == {"w": ["3.36", "4", "0.05"]}


MACHINE_FACTS = re.compile(r"this (CPU|machine|laptop)|\d+-core|measured (here )?(above|below)", re.I)


@pytest.mark.parametrize("q", raw_questions(), ids=lambda q: q["id"])
def test_no_question_states_this_machines_facts_as_constants(q):
    text = " ".join([q["prompt"], q["explanation"], *q.get("options", [])])
    assert not MACHINE_FACTS.search(text), "a fact about the machine belongs on the page, measured"
