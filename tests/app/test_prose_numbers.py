"""Every number in a chapter's prose is either computed (a placeholder of an f-string) or badged as the
paper's: the string literals a chapter passes to st.markdown / caption / write / info / success /
warning / error / metric help and layout.intro, and the long prose strings it keeps in module-level
tables, may carry digits only as notation or names (tests/prose.py). A call whose arguments include
layout.paper_badge() quotes the paper, and may."""
import ast
from pathlib import Path

import pytest

from tests.prose import typed_numbers
from ui.content import chapters

ROOT = Path(__file__).resolve().parents[2]
PROSE_CALLS = {"markdown", "caption", "write", "info", "success", "warning", "error", "intro", "takeaway", "idea", "try_this"}
PAPER_BADGE = "paper_badge"
MIN_TABLE_PROSE = 40  # module-level strings at least this long are prose (labels and keys are shorter)


def _literal_text(node: ast.AST) -> list[str]:
    """The literal parts of an expression: constants, f-string constant parts, concatenations, branches."""
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) else []
    if isinstance(node, ast.FormattedValue):  # computed: a placeholder, and its format spec (".2f")
        return []
    if isinstance(node, ast.Call):  # a function's own arguments (keys, formats) are not prose
        return []
    return [text for child in ast.iter_child_nodes(node) for text in _literal_text(child)]


def _cites_the_paper(call: ast.Call) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == PAPER_BADGE or isinstance(n, ast.Name) and n.id == PAPER_BADGE
               for arg in [*call.args, *(k.value for k in call.keywords)] for n in ast.walk(arg))


def typed_in_source(source: str) -> list[tuple[int, str]]:
    """(line, number) for every typed number in the prose of a chapter's source."""
    found = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name not in PROSE_CALLS or _cites_the_paper(node):
                continue
            args = [*node.args, *(k.value for k in node.keywords if k.arg in (None, "body", "help"))]
            for arg in args:
                for text in _literal_text(arg):
                    found += [(node.lineno, n) for n in typed_numbers(text)]
    for node in tree.body:  # module-level prose tables (timelines, explanations by rule)
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Dict, ast.List, ast.Tuple)):
            for text in _literal_text(node.value):
                if len(text) >= MIN_TABLE_PROSE:
                    found += [(node.lineno, n) for n in typed_numbers(text)]
    return found


# A chapter's folded "Go deeper" sections (ui/sections/) and the shared batch section are its prose too.
PAGES = ([c.path for c in chapters.CHAPTERS] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "ui" / "sections").glob("*.py"))
         + ["ui/sections/impact_batch.py"])


@pytest.mark.parametrize("path", PAGES)
def test_every_number_in_a_chapters_prose_is_computed_or_the_papers(path):
    assert typed_in_source((ROOT / path).read_text(encoding="utf-8")) == [], (
        "compute the number in an f-string placeholder, or badge the sentence with layout.paper_badge()")


def test_the_check_catches_a_typed_number_and_lets_computed_and_badged_ones_pass():
    planted = 'st.markdown("On this machine a pass over 32 positions costs 2.4 passes.")\n'
    assert typed_in_source(planted) == [(1, "32"), (1, "2.4")]
    computed = 'st.markdown(f"On this machine a pass over {k} positions costs {v:.1f} passes.")\n'
    badged = 'st.caption(f"{layout.paper_badge()} T5-XXL on TPU-v4: 2–3× faster.")\n'
    notation = 'st.markdown("accept while u < min(1, p/q); E = (1 − α^(γ+1)) / (1 − α)")\n'
    table = 'WHY = {"a": "A rule that keeps a draft 80% of the time, whatever q was, on purpose."}\n'
    assert typed_in_source(computed) == typed_in_source(badged) == typed_in_source(notation) == []
    assert typed_in_source(table) == [(1, "80")]
