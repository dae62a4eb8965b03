"""The chapters of the app, in the explainer's order: the one list that app.py turns into
`st.navigation` and that Home turns into links. Adding a chapter is one line here (and its file in chapters/).
"""
import runpy
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Chapter:
    path: str  # page file, relative to app.py
    title: str
    icon: str  # a material icon or an emoji
    summary: str  # one line for Home's links


CHAPTERS = [
    Chapter("chapters/home.py", "Home", ":material/home:", "The idea in one sentence, the paper's figures, the history, "
            "the key takeaways."),
    Chapter("chapters/serial_tax.py", "The Serial Tax", ":material/link:",
            "Plain decoding pays one full pass per token; what a pass over many positions costs, and why on a GPU "
            "it is nearly free."),
    Chapter("chapters/round_by_round.py", "A Round, Token by Token", ":material/step:",
            "The exact acceptance rule and its proof, then real rounds step by step: drafts, one target pass, "
            "verdicts, corrective or bonus token, and the KV caches rolled back."),
    Chapter("chapters/alpha_dial.py", "The α Dial", ":material/tune:",
            "The cost model: expected tokens and speedup against γ, α and c, checked against the paper and measured "
            "live; α by kind of text; who picks γ."),
    Chapter("chapters/race.py", "Wall-Clock Race", ":material/timer:",
            "Standard and speculative decoding race live on this machine, next to the paper's ideal-hardware race."),
    Chapter("chapters/trees.py", "Beyond One Guess: Token Trees", ":material/forest:",
            "Draft a tree of alternatives, verify every branch in one pass, exactly; when it pays, and where."),
    Chapter("chapters/self_drafting.py", "Drafters That Read the Target", ":material/visibility:",
            "Medusa heads and an EAGLE drafter trained here on the target's own features, measured side by side."),
    Chapter("chapters/identical_outputs.py", "Identical Outputs", ":material/verified:",
            "Greedy: the same tokens. Sampling: the same distribution, tested, chains and trees, and the broken and "
            "lossy rules that fail."),
    Chapter("chapters/speedup_lives.py", "Where the Speedup Lives", ":material/grid_on:",
            "Which distributions each target pass computed were used, and why the method is lossless."),
    Chapter("chapters/impact.py", "Impact & Lineage", ":material/account_tree:",
            "What came after the paper, what it did not solve, and a live shoot-out of four kinds of drafter."),
    Chapter("chapters/takeaways.py", "Key Takeaways", ":material/checklist:",
            "What to remember, each beside the chapter that shows it live: this machine's figure next to the paper's."),
    Chapter("chapters/quiz.py", "Quiz", ":material/quiz:", "Test yourself on every chapter, with explanations, "
            "then further reading."),
]

# Class mode, after the story (not a chapter: no "next" link, not on Home's list), at /class: a teacher runs
# votes, students answer from their phones, the projector shows the counts (chapters/class_room.py).
CLASS_MODE = Chapter("chapters/class_room.py", "Class mode", ":material/groups:",
                     "Ask the room: students vote from their phones, the screen shows the counts, then a second vote.")
CLASS_URL = "class"

# Chapters whose content moved: the old page file (its URL) -> the chapter that now holds most of it.
# Their URLs keep working: app.py registers each as a hidden page that switches to its new home.
MOVED = {
    "chapters/verification.py": "chapters/round_by_round.py",  # the rules, the proof and the γ+1 distributions
}


def run_moved(old: str) -> None:
    """Run, in place of the moved page `old`, the chapter that now holds its content (its URL stays)."""
    runpy.run_path(str(Path(__file__).resolve().parents[2] / MOVED[old]), run_name="__main__")
