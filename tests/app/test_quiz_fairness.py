"""A fair quiz: the length of an option must not give the answer away (a test-wise student who always
picks the longest option should not pass). Runs on the whole question file, so it also holds for
questions added later."""
from ui import quiz

MAX_SHARE_LONGEST_RIGHT = 1 / 3


def longest_is_right(q: quiz.Question) -> bool:
    """Whether the right option is strictly longer than every other option (ties give nothing away)."""
    right = len(q.options[q.answer_index])
    return all(right > len(o) for i, o in enumerate(q.options) if i != q.answer_index)


def test_the_longest_option_is_right_in_at_most_a_third_of_the_choice_questions():
    choice = [q for q in quiz.load() if q.kind == "choice"]
    assert choice
    giveaways = [q.id for q in choice if longest_is_right(q)]
    assert len(giveaways) <= MAX_SHARE_LONGEST_RIGHT * len(choice), (
        f"the longest option is right in {len(giveaways)} of {len(choice)} choice questions: {giveaways}; "
        "write distractors as long and as plausible as the answer")


def test_the_check_sees_a_giveaway():
    q = quiz.Question("q", "choice", "chapters/home.py", "?", ".", ("short", "the long right answer", "tiny"), 1)
    tie = quiz.Question("t", "choice", "chapters/home.py", "?", ".", ("2", "3", "4"), 1)
    assert longest_is_right(q) and not longest_is_right(tie)
