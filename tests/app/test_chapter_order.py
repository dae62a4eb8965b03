"""The chapters' order (a story with no forward references), their headers, the old URLs, and the
README's chapter table and term list, which must say the same as the navigation."""
import re
from pathlib import Path

import pytest

from tests.app.helpers import page
from ui.content import chapters

README = Path(__file__).resolve().parents[2] / "README.md"
STORY = ["Home", "The Serial Tax", "A Round, Token by Token", "The α Dial", "Wall-Clock Race",
         "Beyond One Guess: Token Trees", "Drafters That Read the Target",
         "Identical Outputs", "Where the Speedup Lives", "Impact & Lineage", "Key Takeaways",
         "Quiz"]


def test_the_chapters_tell_the_story_in_order():
    assert [c.title for c in chapters.CHAPTERS] == STORY
    titles = [c.title for c in chapters.CHAPTERS]
    # Trees before the lab that tests tree rules; the hardware facts before the rounds that use them.
    assert titles.index("Beyond One Guess: Token Trees") < titles.index("Identical Outputs")
    assert titles.index("The Serial Tax") < titles.index("A Round, Token by Token") < titles.index("The α Dial")


def test_every_moved_chapter_keeps_its_url_and_names_a_chapter():
    paths = {c.path for c in chapters.CHAPTERS}
    for old, new in chapters.MOVED.items():
        assert Path(old).exists() and new in paths and old not in paths


def readme_chapter_rows() -> list[str]:
    text = README.read_text(encoding="utf-8")
    table = text[text.index("| chapter | what you do there |"):]
    rows = []
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append(line.split("|")[1].strip())
    return rows


def test_the_readme_chapter_table_matches_the_navigation():
    assert readme_chapter_rows() == [c.title for c in chapters.CHAPTERS]


def test_the_readme_lists_where_each_term_is_introduced_in_story_order():
    text = README.read_text(encoding="utf-8")
    start = text.index("| term | introduced in |")
    section = text[start:text.index("\n\n", start)]
    rows = re.findall(r"^\| (.+?) \| (.+?) \|$", section, re.M)[1:]  # without the header
    where = [chapter for _, chapter in rows]
    order = [c.title for c in chapters.CHAPTERS]
    terms = " / ".join(term for term, _ in rows)
    for term in ("KV cache", "γ (draft length)", "β = Σ min(p, q)", "c (draft pass", "v(γ)", "residual"):
        assert term in terms, term
    assert all(w in order for w in where), where
    assert [order.index(w) for w in where] == sorted(order.index(w) for w in where)  # introduced in story order


@pytest.mark.parametrize("path", [c.path for c in chapters.CHAPTERS[1:]])
def test_page_renders_with_a_header_and_intro(path):
    at = page(path, max_new=8)
    assert at.header or at.subheader
    assert any("Try this" in i.value for i in at.info), path
