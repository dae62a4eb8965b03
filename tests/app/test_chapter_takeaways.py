"""Key Takeaways: each linked to its chapter, this machine's figure beside the paper's, further reading."""
import re
from pathlib import Path

from tests.app.helpers import page

README = Path(__file__).resolve().parents[2] / "README.md"
COUNTS = {"four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


def test_key_takeaways_link_each_to_its_chapter_with_both_figures():
    from ui.content import paper
    at = page("chapters/takeaways.py", max_new=12, temp=0)
    links = [link.proto.label for link in at.get("page_link") if link.proto.label.startswith("See it live: ")]
    assert links == ["See it live: The Serial Tax", "See it live: A Round, Token by Token",
                     "See it live: Identical Outputs", "See it live: Wall-Clock Race", "See it live: The α Dial",
                     "See it live: Impact & Lineage"]  # the explainer's six, in its order
    figures = [m.value for m in at.markdown if "measured here, live" in m.value and "from the paper" in m.value]
    assert len(figures) == len(links)
    assert paper.SPEEDUP in " ".join(figures)
    assert any("arxiv.org/abs/2211.17192" in m.value for m in at.markdown)  # further reading
    assert [h.value for h in at.subheader].count("Further reading") == 1
    said = re.search(r"^(\w+) things to remember", next(m.value for m in at.markdown if "things to remember" in m.value))
    assert COUNTS[said[1].lower()] == len(links)  # the page counts its own cards
    row = next(line for line in README.read_text(encoding="utf-8").splitlines() if line.startswith("| Key Takeaways |"))
    assert COUNTS[re.search(r"(\w+) takeaways", row)[1]] == len(links)  # and so does the README
