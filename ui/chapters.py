"""The chapters of the app, in the explainer's order: the one list that app.py turns into
`st.navigation` and that Home turns into links. Adding a chapter is one line here (and its file in pages/).
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Chapter:
    path: str  # page file, relative to app.py
    title: str
    icon: str  # a material icon or an emoji
    summary: str  # one line for Home's links


CHAPTERS = [
    Chapter("pages/home.py", "Home", ":material/home:", "The idea in one sentence, the paper's figures, the history."),
    Chapter("pages/serial_tax.py", "The Serial Tax", ":material/link:",
            "Plain decoding pays one full pass per token; a pass over many positions costs little more."),
    Chapter("pages/verification.py", "Why Verification Is Free", ":material/fact_check:",
            "The cost model of a round, the v factor of this machine, and the exact acceptance rules."),
    Chapter("pages/round_by_round.py", "A Round, Token by Token", ":material/step:",
            "Step through real rounds: drafts, one target pass, verdicts, corrective or bonus token."),
    Chapter("pages/alpha_dial.py", "The α Dial", ":material/tune:",
            "Expected tokens and speedup against γ and α, checked against the paper and measured live."),
    # Later chapters go here, in order: Wall-Clock Race, Identical Outputs, Where the Speedup Lives,
    # Impact & Lineage, Quiz.
]
