"""The chapters' order and headers."""
import pytest

from tests.app.helpers import page
from ui import chapters

NEW_PAGES = ["chapters/race.py", "chapters/identical_outputs.py", "chapters/speedup_lives.py", "chapters/impact.py",
             "chapters/quiz.py"]


def test_new_chapters_follow_the_alpha_dial_in_order():
    later = [c for c in chapters.CHAPTERS  # their own suites: test_chapter_trees.py, test_chapter_self_drafting.py
             if c.path not in ("chapters/trees.py", "chapters/self_drafting.py")]
    titles = [c.title for c in later]
    start = titles.index("The α Dial") + 1
    assert titles[start:start + 5] == ["Wall-Clock Race", "Identical Outputs", "Where the Speedup Lives",
                                       "Impact & Lineage", "Quiz"]
    assert [c.path for c in later[start:start + 5]] == NEW_PAGES


@pytest.mark.parametrize("path", NEW_PAGES)
def test_page_renders_with_a_header_and_intro(path):
    at = page(path, max_new=8)
    assert at.header or at.subheader
    assert any("Try this" in i.value for i in at.info), path
