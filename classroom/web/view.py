"""What a phone is sent: the class as one student's phone shows it, as plain data (JSON).

Only what the room may see: the current question and its options, whether its vote is open, the phone's
own vote; after the teacher reveals the counts, the counts of each round so far; the right answer and its
explanation only once the room may see them (the teacher showed it, or the second vote was revealed), a
predict-the-demo question's verdict once the demo has run. Never another student's id, never a name.
"""
from ..errors import UnknownStudent


def may_see_answer(question, round_: int, facts) -> int | None:
    """The right option as the room may see it after a reveal, or None: a plain question's answer once
    the teacher showed it or the second vote is revealed; a demo question's only from its verdict."""
    if question.demo is not None:
        verdict = facts.verdicts.get(question.id)
        return verdict[0] if verdict else None
    if question.id in facts.answer_shown or round_ >= 2:
        return question.answer
    return None


def results(store, state, question, facts) -> dict:
    """The revealed counts (round 1 to the current round; an earlier round only when it has votes) and
    what the room may know of the right answer."""
    last = state.round or 1
    rounds = []
    for r in range(1, last + 1):
        counts = store.tally(state.code, question.id, r)
        if r == last or sum(counts.values()):
            rounds.append({"round": r, "counts": [counts[i] for i in range(len(question.options))]})
    right = may_see_answer(question, last, facts)
    verdict = facts.verdicts.get(question.id)
    return {"rounds": rounds, "right": right,
            "why": verdict[1] if verdict else (question.explanation if right is not None else None),
            "by_demo": verdict is not None}


def room_state(store, code: str) -> dict:
    """The class `code` as every phone shows it now, before any phone's own part (`joined`, `mine`): the
    same for the whole room at one `version`, so a server may keep it for that version."""
    facts = store.facts(code)  # first: a change between this read and the next is fetched at the next poll
    state = store.state(code)
    out = {"code": state.code, "version": facts.version, "joined": False, "question": None,
           "round": state.round, "open": state.open, "revealed": state.revealed, "mine": None, "results": None}
    if state.question_id is None:
        return out
    question = store.bank.get(state.question_id)
    ids = state.question_ids
    out["question"] = {"id": question.id, "prompt": question.prompt, "options": list(question.options),
                       "position": ids.index(question.id) + 1 if question.id in ids else 1, "total": len(ids)}
    if state.revealed:
        out["results"] = results(store, state, question, facts)
    return out


def personal(store, room: dict, student: str | None) -> dict:
    """`room` (a room_state) as the phone of `student` (None: not joined) shows it: whether it joined,
    and its own vote in the current question and round."""
    out = dict(room)
    if student is None:
        return out
    try:
        question = room["question"]["id"] if room["question"] else None
        if question is None:
            store.check_student(room["code"], student)
        else:
            out["mine"] = store.ballot(room["code"], student, question, room["round"] or 1)
        out["joined"] = True
    except UnknownStudent:
        pass
    return out


def phone_state(store, code: str, student: str | None) -> dict:
    """The class `code` as the phone of `student` (None: not joined) shows it now."""
    return personal(store, room_state(store, code), student)
