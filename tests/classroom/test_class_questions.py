"""The class question bank: the app's file loads (whatever questions it holds), bad banks are refused."""
import json

import pytest

import classroom
from classroom.questions import MAX_OPTIONS
from tests.classroom.support import BANK_RAW


def test_the_app_file_loads_and_every_question_is_answerable():
    bank = classroom.load_bank()
    assert bank.ids()
    for question in bank.questions:
        assert 2 <= len(question.options) <= MAX_OPTIONS
        if question.demo is None:  # a demo question may leave its answer to the demo
            assert 0 <= question.answer < len(question.options)


def test_a_null_answer_is_allowed_only_beside_a_demo():
    demo_question = dict(BANK_RAW[2], answer=None)  # q-demo
    assert classroom.bank_from([demo_question]).get("q-demo").answer is None
    with pytest.raises(classroom.BadInput, match="only in a question with a demo"):
        classroom.bank_from([dict(BANK_RAW[0], answer=None)])
    with pytest.raises(classroom.BadInput, match="only in a question with a demo"):
        classroom.bank_from([{k: v for k, v in BANK_RAW[0].items() if k != "answer"}])  # missing is null too


def test_a_bank_keeps_order_and_the_demo_read_only(tmp_path):
    path = tmp_path / "bank.json"
    path.write_text(json.dumps({"questions": BANK_RAW}), encoding="utf-8")
    bank = classroom.load_bank(path)
    assert bank.ids() == ("q-four", "q-two", "q-demo")
    demo = bank.get("q-demo")
    assert demo.demo["gamma"] == 4 and bank.get("q-four").demo is None
    with pytest.raises(TypeError):
        demo.demo["gamma"] = 8
    assert classroom.open_store(f"sqlite:///{tmp_path / 'c.sqlite3'}", bank=path).bank.ids() == bank.ids()
    with pytest.raises(classroom.UnknownQuestion):
        bank.get("nope")


@pytest.mark.parametrize("change", [
    {"id": "bad id with spaces"}, {"id": "x" * 65}, {"kind": "numeric"}, {"options": ["only one"]},
    {"options": ["a"] * (MAX_OPTIONS + 1)}, {"options": ["a", 3]}, {"answer": 4}, {"answer": True},
    {"prompt": "  "}, {"demo": ["not", "an", "object"]},
])
def test_a_bad_question_is_refused_with_its_reason(change):
    raw = dict(BANK_RAW[0], **change)
    with pytest.raises(classroom.BadInput):
        classroom.bank_from([raw])


def test_bad_banks_are_refused(tmp_path):
    with pytest.raises(classroom.BadInput):
        classroom.bank_from([BANK_RAW[0], BANK_RAW[0]])  # duplicate ids
    with pytest.raises(classroom.BadInput):
        classroom.bank_from([])
    path = tmp_path / "broken.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(classroom.BadInput, match="cannot read"):
        classroom.load_bank(path)
