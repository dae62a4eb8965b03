"""The chapters of the app, in the explainer's order: the one list that app.py turns into
`st.navigation` and that Home turns into links. Adding a chapter is one line here (and its file in chapters/).
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Chapter:
    path: str  # page file, relative to app.py
    title: str
    icon: str  # a material icon or an emoji
    summary: str  # one line for Home's links


CHAPTERS = [
    Chapter("chapters/home.py", "Home", ":material/home:", "The idea in one sentence, the paper's figures, the history."),
    Chapter("chapters/serial_tax.py", "The Serial Tax", ":material/link:",
            "Plain decoding pays one full pass per token; a pass over many positions costs little more."),
    Chapter("chapters/verification.py", "Why Verification Is Free", ":material/fact_check:",
            "The cost model of a round, the v factor of this machine, and the exact acceptance rules."),
    Chapter("chapters/round_by_round.py", "A Round, Token by Token", ":material/step:",
            "Step through real rounds: drafts, one target pass, verdicts, corrective or bonus token."),
    Chapter("chapters/alpha_dial.py", "The α Dial", ":material/tune:",
            "Expected tokens and speedup against γ and α, checked against the paper and measured live."),
    Chapter("chapters/race.py", "Wall-Clock Race", ":material/timer:",
            "Standard and speculative decoding race live on this machine, next to the paper's ideal-hardware race."),
    Chapter("chapters/identical_outputs.py", "Identical Outputs", ":material/verified:",
            "Greedy: the same tokens. Sampling: the same distribution, tested, and three broken samplers that fail."),
    Chapter("chapters/speedup_lives.py", "Where the Speedup Lives", ":material/grid_on:",
            "Which distributions each target pass computed were used, and why the method is lossless."),
    Chapter("chapters/trees.py", "Beyond One Guess: Token Trees", ":material/forest:",
            "Draft a tree of alternatives, verify every branch in one pass, exactly; when it pays, and where."),
    Chapter("chapters/self_drafting.py", "Drafters That Read the Target", ":material/visibility:",
            "Medusa heads and an EAGLE drafter trained here on the target's own features, measured side by side."),
    Chapter("chapters/impact.py", "Impact & Lineage", ":material/account_tree:",
            "What came after the paper, what it did not solve, and a live shoot-out of three kinds of drafter."),
    Chapter("chapters/quiz.py", "Quiz", ":material/quiz:", "Test yourself on every chapter, with explanations."),
]
