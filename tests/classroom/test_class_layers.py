"""classroom/ is the store a server, a script or another app can use alone: it never imports streamlit, the
app (ui, chapters) or test machinery (tests, pytest). Its tools (classroom/tools: the simulated room, the
throwaway PostgreSQL, the app started as `make run` starts it, the load command) ship with it, so the
scripts never import tests; only they may drive a headless browser (playwright)."""
import pytest

from tests.core.test_layers import ROOT, files, imported_modules, modules_of

FORBIDDEN = ("streamlit", "ui", "chapters", "tests", "pytest", "playwright")
CLASSROOM = files("classroom")


def forbidden(imported: set[str], tool: bool = False) -> set[str]:
    """The imported modules classroom/ must not use (a tool may use playwright)."""
    return {m for m in imported if m.split(".")[0] in FORBIDDEN and not (tool and m.split(".")[0] == "playwright")}


def test_planted_violations_are_caught():
    for source in ("import streamlit as st", "from streamlit import net_util", "from ui.server import operator",
                   "import chapters.class_room", "from tests.pg import temporary_postgres",
                   "from tests.classroom import crowd", "import pytest", "from playwright.sync_api import sync_playwright"):
        assert forbidden(modules_of(source, "classroom.store")), source
    for source in ("from .store import Store", "from classroom import codes", "import sqlalchemy",
                   "from .questions import load_bank", "import starlette.routing"):
        assert not forbidden(modules_of(source, "classroom.web.routes")), source


def test_the_package_is_read_whole():
    names = {str(p.relative_to(ROOT)) for p in CLASSROOM}
    assert {"classroom/__init__.py", "classroom/store.py", "classroom/engine.py"} <= names
    assert {"classroom/tools/crowd.py", "classroom/tools/pg.py", "classroom/tools/load.py"} <= names


@pytest.mark.parametrize("path", CLASSROOM, ids=lambda p: str(p.relative_to(ROOT)))
def test_classroom_never_imports_the_app_or_test_machinery(path):
    bad = forbidden(imported_modules(path), tool=path.parent.name == "tools")
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}: classroom/ stands alone (see docs/class_mode.md)"
