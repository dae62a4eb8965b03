"""What counts as a typed number in teaching text: digits that are neither notation (γ + 1, 1 − α,
top-1, Table 1, the constants 0 and 1, step numbers, a tree shape to type into a control), names
(GPT-2, fp32, T5X, arXiv ids, years) nor a placeholder filled in by code. Shared by
the quiz's fairness tests and the chapters' prose test."""
import re

# Notation and names that carry digits but state no fact about a result or a machine.
ALLOWED = [
    r"γ ?[+−-] ?[12]\b", r"\b[12] ?[−-] ?(α|p|q|TV|Σ)", r"\(1 ?[−-]", r"1/\(1 ?[−-]", r"\bmin\(1,",
    r"\bv ?= ?1\b(?![.,]\d)", r"\bk ?= ?1\b(?![.,]\d)", r"\bc ?= ?0\b(?![.,]\d)",
    r"\bĉ ?= ?0\b(?![.,]\d)", r"\bα ?= ?[01]\b(?![.,]\d)", r"\btop-[12]\b", r"\btop_k\b",
    r"\b(Table|Algorithm|Theorem|Eq\.?|Figure|section) \d+(\.\d+)*", r"\bGPT-2\b", r"\bT5(-\w+)?\b", r"\b\d+B\b",
    r"\b(fp|bf|int)\d+\b", r"\b\d-bit\b", r"\bTPU-v\d\b", r"\barXiv \d{4}\.\d{4,5}\b", r"\b\d{4}\.\d{4,5}\b",
    r"\b(1[89]\d\d|20\d\d)s?\b", r"\bWCAG 2\.1\b", r"\bx_\d\b", r"\bp_\d\b", r"\bq_\d\b", r"\^\(?γ ?\+ ?1\)?",
    r"\b0 log 0\b", r"\bU\(0, ?1\)", r"\b[01]\.\.\.", r"\bk = 1…", r"\b1…", r"\b\d+(st|nd|rd|th)\b", r"\bi\+1\b",
    r"\+ ?1\)", r"\bu_\d\b", r"\b1 (token|position|pass)\b", r"\bone-hot\b", r"\bposition 1\b", r"\bdraft 1\b", r"\bE\[",
    r"\bT5X\b", r"\bEAGLE-\d\b", r"\bseq2seq\b", r"\bbfloat16\b", r"\*\*\d · ", r"\+ 1\b",
    r"\bshape \d(,\d)+ \(a chain\), then \d(,\d)+", r"\bshape \d(,\d)+",
    r"\bmax\(0,", r"(?<![\d.,])[01](?!\d|[.,]\d)",  # the constants 0 and 1 of probabilities, ratios and greedy temperature
]
PLACEHOLDER = re.compile(r"\{[^{}]*\}")


def typed_numbers(text: str) -> list[str]:
    """The numbers in `text` that no allow-listed token explains (placeholders removed first)."""
    text = PLACEHOLDER.sub("", text)
    for pattern in ALLOWED:
        text = re.sub(pattern, " ", text)
    return re.findall(r"\d+(?:[.,]\d+)?", text)
