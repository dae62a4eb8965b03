"""Every figure a quiz explanation states is recomputed here from the question's own numbers, in both
banks (assets/quiz.json and assets/class_quiz.json).

A choice question whose explanation states a figure carries `numbers` in its JSON: its inputs (p and q
over a few tokens, px and qx for one drafted token, alpha, gamma, c, v, the drafts a round accepted, ...)
and `key`, the quantity its right option states. A numeric question's inputs are its compute.args. From
the inputs this test computes every quantity a question may state (with specdec_core's own formulas:
theory for the cost model, sampler for the rule) and checks that
- the inputs are the question's own numbers: each appears in the prompt, and the prompt states no other;
- every number in the explanation and in the right option is an input or a computed quantity, at the
  precision it is written (a question without `numbers` may only repeat its prompt's numbers);
- a clause that names a quantity by its formula (Σ min(p, q), Σ p·q, 1/(1 − α), ...) and states a figure
  states that quantity's value, so a right number under a wrong name fails;
- the right option states the key's value, and no wrong option does.
Citations (§3.2, Appendix A.1, Theorem 1, Table 2, years) and notation (γ + 1, top-1, int8) are not figures.
"""
import copy
import json
import re

import pytest
import torch

from classroom.questions import BANK_FILE
from specdec_core import speculative, theory
from tests.prose import typed_numbers
from ui.content import quiz

INPUTS = {"p", "q", "px", "qx", "alpha", "gamma", "gamma_to", "c", "v", "accepted"}
CITATION = re.compile(r"§ ?\d+(\.\d+)*|Appendix [A-Z](\.\d+)*|\b(Corollary|Lemma|Definition|Theorem|Table) \d+(\.\d+)*"
                      r"|\bet al\. \d{4}")
SUPERSCRIPT = re.compile(r"[⁰¹²³⁴⁵⁶⁷⁸⁹]+")
NUMBER = re.compile(r"\d+(?:\.\d+)?")
TUPLE = re.compile(r"\(([\d., ]+)\)")
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}
CLAUSE_END = re.compile(r"(?<=[.;:])\s+")
# A quantity named by its formula or its name: a clause that names it and states a figure states its value.
LABELS = {
    "beta": r"Σ min\(p, q\)",
    "sum_pq": r"Σ p·q",
    "tv": r"total-variation",
    "accept": r"min\(1, p\(x\) ?/ ?q\(x\)\)",
    "residual": r"norm\(max\(0, p − q\)\)",
    "ceiling": r"(?<![\w)]) ?1 ?/ ?\(1 − α\)",
    "expected": r"\(1 − α\^\(γ ?\+ ?1\)\) ?/ ?\(1 − α\)",
    "accepted_per_drafted": r"accepted ÷ drafted",
}


def quantities(given: dict) -> dict:
    """Every quantity a question's explanation may state, computed from its inputs (vectors as tuples)."""
    out = {}
    if "p" in given and "q" in given:
        p, q = (torch.tensor(given[k], dtype=torch.float64) for k in ("p", "q"))
        out["beta"] = float(theory.alpha_of(p, q))
        out["tv"] = 1 - out["beta"]
        out["sum_pq"] = float((p * q).sum())
        out["pq_terms"] = tuple((p * q).tolist())
        out["min_terms"] = tuple(torch.minimum(p, q).tolist())
        out["residual_raw"] = tuple(torch.clamp(p - q, min=0).tolist())
        out["residual"] = tuple(speculative.residual_distribution(p, q).tolist())
    if "px" in given and "qx" in given:
        px, qx = (torch.tensor(given[k], dtype=torch.float64) for k in ("px", "qx"))
        out["accept"] = float(speculative.acceptance_probability(px, qx))
    if "alpha" in given:
        alpha = given["alpha"]
        out["ceiling"] = 1 / (1 - alpha)  # the limit of expected_tokens as gamma grows
        out["accepted_limit"] = alpha / (1 - alpha)
        out["inverse_alpha"] = 1 / alpha
    if "alpha" in given and "gamma" in given:
        alpha, gamma = given["alpha"], given["gamma"]
        out["expected"] = theory.expected_tokens(alpha, gamma)
        out["accepted_mean"] = out["expected"] - 1
        out["accepted_per_drafted"] = theory.accepted_per_drafted(alpha, gamma)
        out["all_pass"] = alpha ** gamma
        out["naive"] = gamma * alpha
        if "c" in given:
            out["draft_cost"] = gamma * given["c"]
            out["walltime"] = theory.walltime_improvement(alpha, gamma, given["c"])
            out["break_even_v"] = out["expected"] - out["draft_cost"]
            if "v" in given:
                out["speedup"] = theory.speedup(alpha, gamma, given["c"], given["v"])
    if "gamma" in given:
        out["positions"] = given["gamma"] + 1
        if "accepted" in given:
            k = given["accepted"]
            out["round_tokens"] = out["used_distributions"] = out["rejected_at"] = k + 1
            out["discarded"] = given["gamma"] - k
            out["first_discarded"] = k + 2
        if "gamma_to" in given:
            out["extra_drafts"] = given["gamma_to"] - given["gamma"]
    return out


def values(mapping: dict) -> list[float]:
    """Every number in a mapping's values, vectors flattened."""
    return [float(x) for v in mapping.values() for x in (v if isinstance(v, (list, tuple)) else [v])]


def states(written: str, value: float) -> bool:
    """Whether the figure as written is the value: rounded to the decimals written, or exact if none."""
    decimals = len(written.split(".")[1]) if "." in written else 0
    slack = 0.5 * 10 ** -decimals if decimals else 1e-9
    return abs(float(written) - value) <= slack + 1e-9


def figures(text: str) -> list[str]:
    """The figures a text states: its numbers less citations, notation and the constants 0 and 1."""
    text = SUPERSCRIPT.sub(lambda m: "^" + m.group().translate(str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")), text)
    return typed_numbers(CITATION.sub(" ", text))


def option_numbers(text: str) -> list[float]:
    """Every number an option states, constants and number words included (for the key check)."""
    words = [NUMBER_WORDS[w] for w in re.findall(r"[a-z]+", text.lower()) if w in NUMBER_WORDS]
    return [float(n) for n in NUMBER.findall(text)] + [float(w) for w in words]


def tuples(text: str) -> list[tuple[float, ...]]:
    return [tuple(float(x) for x in inner.split(",")) for inner in TUPLE.findall(text)]


def same_vector(written: tuple, value: tuple) -> bool:
    return len(written) == len(value) and all(abs(w - v) <= 0.005 for w, v in zip(written, value))


def input_problems(given: dict, prompt_figures: list[str], known: list[float]) -> list[str]:
    """The inputs must be the question's own numbers: each is in the prompt, which states nothing else."""
    found = [f"unknown inputs {sorted(set(given) - INPUTS)}"] if set(given) - INPUTS else []
    found += [f"input {x:g} is not in the prompt" for x in values(given)
              if x not in (0, 1) and not any(states(w, x) for w in prompt_figures)]
    return found + [f"prompt states {w}, not an input" for w in prompt_figures
                    if not any(states(w, v) for v in known)]


def clause_problems(explanation: str, computed: dict) -> list[str]:
    """A clause that names a quantity by its formula and states a figure must state that quantity."""
    found = []
    for name, label in LABELS.items():
        if name not in computed:
            continue
        value = computed[name]
        for clause in CLAUSE_END.split(CITATION.sub(" ", explanation)):
            if not re.search(label, clause):
                continue
            if isinstance(value, tuple):
                ok = not tuples(clause) or any(same_vector(t, value) for t in tuples(clause))
            else:
                ok = not figures(clause) or any(states(w, value) for w in figures(clause))
            if not ok:
                found.append(f"the clause naming {name} does not state its value {value}: {clause!r}")
    return found


def key_problems(options: list[str], answer: int, key: str, computed: dict) -> list[str]:
    """The right option states the key quantity's value, and no wrong option does."""
    if key not in computed:
        return [f"key {key!r} is not computed from the question's inputs"]
    value = computed[key]

    def says(text: str) -> bool:
        if isinstance(value, tuple):
            return any(same_vector(t, value) for t in tuples(text))
        return any(abs(n - value) <= 0.005 for n in option_numbers(text))
    found = [] if says(options[answer]) else [f"the right option does not state {key} = {value}"]
    return found + [f"wrong option {i} states {key} = {value}" for i, o in enumerate(options) if i != answer and says(o)]


def problems(q: dict) -> list[str]:
    """What is wrong with the figures of one question (its JSON object; a numeric one already formatted,
    with its `args`), or [] when every figure is recomputed from its inputs."""
    numbers = q.get("numbers") or {}
    given = q["args"] if q["kind"] == "numeric" else {k: v for k, v in numbers.items() if k != "key"}
    computed = quantities(given)
    prompt_figures = figures(q["prompt"])
    # Nothing to compute from: the explanation may only repeat the prompt's numbers.
    known = values(given) + values(computed) if given else [float(w) for w in prompt_figures]
    found = input_problems(given, prompt_figures, known)
    has_right = q["kind"] == "choice" and q["answer"] is not None
    right = q["options"][q["answer"]] if has_right else ""
    for where, text in (("explanation", q["explanation"]), ("right option", right)):
        found += [f"{where} states {w}, which nothing computes" for w in figures(text)
                  if not any(states(w, v) for v in known)]
    found += clause_problems(q["explanation"], computed)
    if numbers.get("key"):
        found += key_problems(q["options"], q["answer"], numbers["key"], computed)
    return found


def bank_questions() -> list[dict]:
    """Both banks' questions as JSON objects (a predict-the-demo one has no right option); numeric ones
    formatted by the loader."""
    loaded = {q.id: q for q in quiz.load()}
    out = []
    for raw in json.loads(quiz.QUIZ_FILE.read_text(encoding="utf-8"))["questions"]:
        if raw["kind"] == "numeric":
            q = loaded[raw["id"]]
            raw = dict(raw, prompt=q.prompt, explanation=q.explanation, args=dict(q.args),
                       explanation_answer=q.answer)
        out.append(raw)
    classroom_raw = json.loads(BANK_FILE.read_text(encoding="utf-8"))["questions"]
    return out + classroom_raw


QUESTIONS = {q["id"]: q for q in bank_questions()}


@pytest.mark.parametrize("qid", QUESTIONS)
def test_every_figure_a_question_states_is_recomputed_from_its_own_numbers(qid):
    assert problems(QUESTIONS[qid]) == []


def test_the_questions_that_compute_carry_their_numbers():
    with_numbers = {qid for qid, q in QUESTIONS.items() if q.get("numbers") or q["kind"] == "numeric"}
    assert {"class-beta", "class-accept-rule", "class-corrective", "class-ceiling", "class-speedup-lives",
            "alpha-by-hand", "rule-p-less-than-q", "round-tokens", "discarded-distributions",
            "accepted-per-drafted", "cpu-break-even"} <= with_numbers


def test_numeric_answers_are_the_computed_quantity():
    for q in QUESTIONS.values():
        if q["kind"] == "numeric":
            assert f"{q['explanation_answer']:.2f}" in q["explanation"]


# --- planted errors: each must be caught -----------------------------------------------------------

def planted(qid: str, **change) -> dict:
    q = copy.deepcopy(QUESTIONS[qid])
    q.update(change)
    return q


def test_the_check_catches_the_projected_sum_of_products_error():
    old = ("β = Σ min(p, q) = min(0.7, 0.4) + min(0.3, 0.2) + min(0, 0.4) = 0.4 + 0.2 + 0 = 0.6: the overlap of "
           "the two distributions. 0.28 is Σ p·q, the chance that two independent draws agree, which is not the rule.")
    found = problems(planted("class-beta", explanation=old))
    assert any("sum_pq" in f for f in found), found


def test_the_check_catches_a_right_figure_under_a_wrong_name():
    explanation = QUESTIONS["class-beta"]["explanation"].replace("0.4 is 1 − β", "0.34 is 1 − β")
    found = problems(planted("class-beta", explanation=explanation))  # 0.34 is Σ p·q here, not the distance
    assert any("tv" in f for f in found), found


def test_the_check_catches_a_wrong_figure_a_wrong_key_and_data_that_is_not_the_question():
    beta = QUESTIONS["alpha-by-hand"]
    assert problems(planted("alpha-by-hand", explanation=beta["explanation"].replace("= 0.7.", "= 0.75.")))
    assert problems(planted("class-accept-rule", answer=3))  # the option "p(x) = 0.6" is not min(1, p/q)
    assert problems(planted("class-accept-rule", numbers={"px": 0.6, "qx": 0.9, "key": "accept"}))
    ceiling = QUESTIONS["class-ceiling"]["explanation"]
    assert problems(planted("class-ceiling", explanation=ceiling.replace("= 4:", "= 5:")))
    assert problems(planted("round-tokens", numbers={"gamma": 4, "accepted": 3, "key": "round_tokens"}))
    numeric = QUESTIONS["accepted-per-drafted"]
    typed = numeric["explanation"].replace(f"{numeric['explanation_answer']:.2f}", f"{numeric['explanation_answer'] + 0.03:.2f}")
    assert typed != numeric["explanation"] and problems(planted("accepted-per-drafted", explanation=typed))
    assert problems(planted("verify-cost-gpu", explanation="A pass over 5 positions costs about 1.2 passes."))
