"""The one rule between the layers: chapters -> ui -> specdec_core, never back; the algorithm never
reaches into its analyses or tools."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(path: Path) -> set[str]:
    names = set()
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the file's package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                names.add(".".join(base + ([node.module] if node.module else [])))
            else:
                names.add(node.module)
    return names


def files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", files("specdec_core"), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_never_imports_the_app(path):
    bad = {m for m in imported_modules(path) if m.split(".")[0] in ("streamlit", "ui", "chapters")}
    assert not bad, f"{path.name} imports {bad}"


@pytest.mark.parametrize("path", [p for p in files("specdec_core")  # __main__.py is the command line's door
                                  if p.parent == ROOT / "specdec_core" and p.name != "__main__.py"],
                         ids=lambda p: p.name)
def test_the_algorithm_never_imports_its_analyses_or_tools(path):
    bad = {m for m in imported_modules(path)
           if m.startswith(("specdec_core.analysis", "specdec_core.tools"))}
    assert not bad, f"{path.name} imports {bad}"


@pytest.mark.parametrize("path", files("ui"), ids=lambda p: p.name)
def test_ui_never_imports_a_chapter(path):
    assert not {m for m in imported_modules(path) if m.split(".")[0] == "chapters"}
