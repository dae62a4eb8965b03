"""The Quiz: the question bank and the page."""
import json

import pytest

from specdec_core import theory
from tests.app.helpers import page
from ui.content import chapters, quiz


def _answer(at, bank_by_id, right: bool) -> str:
    state = at.session_state["qz"]
    q = bank_by_id[state["order"][state["index"]]]
    key = f"qz_{q.id}_{state['attempt']}"
    if q.kind == "choice":
        radio = at.radio(key=key)
        shown = quiz.option_order(q, state["seed"] * 1009 + state["attempt"])
        assert list(radio.options) == [q.options[i] for i in shown]  # shown in the shuffled order
        value = q.answer if right else (q.answer + 1) % len(q.options)
        radio.set_value(value).run()
    else:
        at.number_input(key=key).set_value(round(q.answer, 2) + (0 if right else 1.0)).run()
    at.button(key="qz_check").click().run()
    assert not at.exception
    return q.id


def chapters_title(path: str) -> str:
    return next(c.title for c in chapters.CHAPTERS if c.path == path)


@pytest.fixture(scope="module")
def bank():
    return quiz.load(chapters={c.path for c in chapters.CHAPTERS})


def test_quiz_file_covers_every_chapter(bank):
    assert len(bank) >= 12
    covered = {q.chapter for q in bank}
    summaries = {"chapters/quiz.py", "chapters/takeaways.py"}  # they teach nothing new
    assert covered == {c.path for c in chapters.CHAPTERS if c.path not in summaries}
    assert 1 <= sum(q.kind == "numeric" for q in bank) <= 2  # at most two computed derivations; the rest are concepts
    text = " ".join(q.prompt + " " + " ".join(q.options) for q in bank).lower()
    for misconception in ("p(x) ≥ q(x)", "temperature 1.0", "first token", "identical, token for token"):
        assert misconception.lower() in text, misconception


def test_quiz_numeric_answers_match_theory(bank):
    numeric = {q.id: q for q in bank if q.kind == "numeric"}
    for q in numeric.values():
        if hasattr(theory, q.function):  # break_even_v is not theory's: its formula is checked below
            assert q.answer == getattr(theory, q.function)(**dict(q.args))
        assert q.is_correct(round(q.answer, 2)) and not q.is_correct(q.answer + 0.05) and not q.is_correct("abc")
    expected = (1 - 0.7 ** 6) / 0.3  # 2.94 tokens per round, 1.94 of them accepted drafts
    assert numeric["accepted-per-drafted"].answer == pytest.approx((expected - 1) / 5)  # 0.388
    assert numeric["cpu-break-even"].answer == pytest.approx((1 - 0.9 ** 7) / 0.1 - 6 * 0.02)  # 5.097


def test_quiz_order_is_shuffled_by_seed(bank):
    ids = lambda seed: [q.id for q in quiz.shuffled(bank, seed)]
    assert ids(1) == ids(1) and ids(1) != ids(2) and sorted(ids(1)) == sorted(q.id for q in bank)


def test_quiz_rejects_malformed_files(tmp_path):
    bad = tmp_path / "quiz.json"
    bad.write_text(json.dumps({"questions": [{"id": "x", "kind": "numeric", "chapter": "chapters/home.py", "prompt": "?",
                                              "explanation": ".", "compute": {"function": "eval", "args": {}}}]}))
    with pytest.raises(ValueError, match="compute.function"):
        quiz.load(bad)
    bad.write_text(json.dumps({"questions": [{"id": "x", "kind": "choice", "chapter": "chapters/nope.py", "prompt": "?",
                                              "explanation": ".", "options": ["a", "b"], "answer": 0}]}))
    with pytest.raises(ValueError, match="unknown chapter"):
        quiz.load(bad, chapters={"chapters/home.py"})


def test_quiz_page_scores_reviews_and_retries(bank):
    by_id = {q.id: q for q in bank}
    at = page("chapters/quiz.py", seed=7)
    first_order = list(at.session_state["qz"]["order"])
    assert first_order == [q.id for q in quiz.shuffled(bank, 7 * 1009)]
    wrong = set()
    for i in range(len(bank)):
        qid = _answer(at, by_id, right=i % 4 != 0)
        if i % 4 == 0:
            wrong.add(qid)
            assert any("Not quite" in e.value for e in at.error)
        else:
            assert any(m.value.startswith("**Right.**") for m in at.success)
        assert any(link.proto.label == f"Go to the chapter: {chapters_title(by_id[qid].chapter)}"
                   for link in at.get("page_link"))
        at.button(key="qz_next").click().run()
    expected = len(bank) - len(wrong)
    assert f"Score: {expected} / {len(bank)}" in [h.value for h in at.subheader]
    review = at.dataframe[-1].value
    assert list(review["result"]).count("✓") == expected and len(review) == len(bank)
    # The end: further reading with arXiv ids, and no loop back to the start.
    assert any("arxiv.org/abs/2211.17192" in m.value for m in at.markdown)
    assert not any(link.proto.label.startswith("Back to the start") for link in at.get("page_link"))
    at.button(key="qz_retry").click().run()
    state = at.session_state["qz"]
    assert state["index"] == 0 and state["answers"] == {} and state["order"] != first_order


def test_the_class_quiz_can_be_taken_alone_without_its_predict_the_demo_questions():
    import classroom
    concept = [q for q in classroom.load_bank().questions if q.demo is None]
    at = page("chapters/quiz.py", seed=7)
    at.radio(key="qz_which").set_value("Class quiz").run()
    assert not at.exception, at.exception
    state = at.session_state["qz"]
    assert sorted(state["order"]) == sorted(q.id for q in concept) and state["index"] == 0
    bank_by_id = {q.id: q for q in quiz.class_quiz()}
    assert _answer(at, bank_by_id, right=True) in bank_by_id
    assert at.session_state["qz"]["answers"]
    at.radio(key="qz_which").set_value("Full practice bank").run()  # back: the practice bank again
    assert set(at.session_state["qz"]["order"]) == {q.id for q in quiz.load()}
