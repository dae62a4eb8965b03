"""The layers inside ui/, one way only, like the core's (tests/core/test_layers.py):

    chapters -> ui/sections -> ui/widgets, ui/server -> ui/state -> ui/content

A module imports from its own folder or from a layer below; ui/widgets and ui/server, side by side, never
import each other. ui/content holds words and data: no torch, and from the core only what runs no model.
ui/widgets draw: no torch, and from the core only records and formulas. Every section's one entry point
is `show`. No module of the app imports test machinery (tests/, pytest, Playwright, Streamlit's AppTest).
classroom/ has its own test (tests/classroom/test_class_layers.py)."""
import ast

import pytest

from tests.core.test_layers import ROOT, files, imported_modules, imports_of, module_name, modules_of

LAYERS = {"ui.content": 0, "ui.state": 1, "ui.server": 2, "ui.widgets": 2, "ui.sections": 3, "ui.frame": 4}
# What ui/content and ui/widgets may take from the core: formulas and records, never a model run
# (specdec_core itself exports the generators, so `import specdec_core` is not among them).
CONTENT_CORE = ("specdec_core.theory",)
WIDGETS_CORE = ("specdec_core.theory", "specdec_core.trace", "specdec_core.analysis.round_stats")
MODEL_LIBRARIES = ("torch", "transformers")
TEST_MACHINERY = ("tests", "pytest", "playwright", "streamlit.testing")
UI = files("ui")
APP = UI + files("chapters") + [ROOT / "app.py"]


def layer(module: str) -> str | None:
    """The layer (a key of LAYERS) a ui module belongs to; None for the bare `ui` package and outside ui."""
    return next((name for name in LAYERS if module == name or module.startswith(name + ".")), None)


def layer_violations(module: str, imported: set[str]) -> set[str]:
    """The ui modules `module` imports from its own layer's level or above, other than its own folder."""
    own = layer(module)
    if own is None:
        return set()
    return {m for m in imported if (other := layer(m)) is not None and other != own and LAYERS[other] >= LAYERS[own]}


def core_outside(imports: set[tuple[str, str | None]], allowed: tuple[str, ...]) -> set[str]:
    """Everything taken from specdec_core outside the `allowed` modules (a name from the package itself counts
    as the package's: `from specdec_core import speculative_generate` is a model run)."""
    taken = {m if name is None else f"{m}.{name}" for m, name in imports if m.split(".")[0] == "specdec_core"}
    return {t for t in taken if not any(t == a or t.startswith(a + ".") for a in allowed)}


def model_libraries(imported: set[str]) -> set[str]:
    return {m for m in imported if m.split(".")[0] in MODEL_LIBRARIES}


def machinery(imported: set[str]) -> set[str]:
    return {m for m in imported if any(m == t or m.startswith(t + ".") for t in TEST_MACHINERY)}


def entry_point_problems(source: str) -> list[str]:
    """What is wrong with a section's entry point: it has no top-level `show`, or still a `render`."""
    defined = {n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}
    return ([] if "show" in defined else ["no show()"]) + (["a render()"] if "render" in defined else [])


def read(path) -> tuple[str, set[tuple[str, str | None]]]:
    source = path.read_text(encoding="utf-8")
    return source, imports_of(source, *module_name(path))


# --- the detector itself, on planted sources ----------------------------------------------------------

def test_planted_violations_are_caught():
    def bad(source: str, module: str) -> set[str]:
        return layer_violations(module, modules_of(source, module))

    assert bad("from ui.server import admission", "ui.state.demo")  # state -> server: upward
    assert bad("from ..server import admission", "ui.state.demo")  # the same, relative
    assert bad("from ui.server.rules import CUSTOM", "ui.state.settings")
    assert bad("from ui.server import models", "ui.widgets.chips")  # widgets never reach the server
    assert bad("from ui.widgets import chips", "ui.server.models")  # nor the server the widgets
    assert bad("from ui.sections import impact_batch", "ui.widgets.charts")
    assert bad("from ui.state import settings", "ui.content.quiz")  # content imports nothing else from ui
    assert bad("from ui import frame", "ui.sections.race_sweep")
    assert not bad("from ui.server import admission, demo, models", "ui.sections.trees_measure")
    assert not bad("from ui.server import admission", "ui.server.demo")  # its own folder
    assert not bad("from ui.state.settings import Settings", "ui.server.models")
    assert not bad("from ui.content import chapters", "ui.state.sidebar")
    assert not bad("from ui.sections import impact_batch", "ui.sections.impact_limits")

    def core(source: str, allowed) -> set[str]:
        return core_outside(imports_of(source, "ui.content.quiz"), allowed)

    assert core("from specdec_core import speculative_generate", CONTENT_CORE)
    assert core("import specdec_core", CONTENT_CORE)
    assert core("from specdec_core.analysis import race", CONTENT_CORE)
    assert core("from specdec_core.analysis.round_stats import checked", CONTENT_CORE)
    assert not core("from specdec_core import theory", CONTENT_CORE)
    assert not core("from specdec_core.theory import expected_tokens", CONTENT_CORE)
    assert not core("from specdec_core.analysis.round_stats import checked", WIDGETS_CORE)
    assert model_libraries(modules_of("import torch.nn.functional as F", "ui.content.quiz"))
    assert machinery(modules_of("from tests import serve", "ui.frame"))
    assert machinery(modules_of("from streamlit.testing.v1 import AppTest", "ui.server.launch"))
    assert not machinery(modules_of("import streamlit as st", "ui.frame"))
    assert entry_point_problems("def render(pair):\n    pass\n") == ["no show()", "a render()"]
    assert entry_point_problems("def show(pair):\n    def render():\n        pass\n") == []


def test_ui_is_read_whole():
    names = {str(p.relative_to(ROOT)) for p in UI}
    assert {"ui/frame.py", "ui/state/settings.py", "ui/server/admission.py", "ui/content/quiz.py"} <= names
    unplaced = [p.name for p in UI if p != ROOT / "ui" / "__init__.py" and layer(module_name(p)[0]) is None]
    assert not unplaced, f"{unplaced}: give every module of ui/ a layer (LAYERS)"
    assert not names & {"ui/server/serve.py", "ui/widgets/runs.py"}  # test machinery lives in tests/


# --- the rules ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", UI, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_go_one_way(path):
    module, _ = module_name(path)
    bad = layer_violations(module, imported_modules(path))
    assert not bad, (f"{module} ({layer(module)}) imports {bad}: imports go one way, chapters -> ui/sections -> "
                     "ui/widgets, ui/server -> ui/state -> ui/content")


@pytest.mark.parametrize("path", files("ui/content"), ids=lambda p: p.name)
def test_content_holds_words_and_data(path):
    _, imports = read(path)
    bad = model_libraries({m for m, _ in imports}) | core_outside(imports, CONTENT_CORE)
    assert not bad, f"ui/content/{path.name} imports {bad}: model work belongs in ui/server or ui/sections"


@pytest.mark.parametrize("path", files("ui/widgets"), ids=lambda p: p.name)
def test_widgets_run_no_model(path):
    _, imports = read(path)
    bad = model_libraries({m for m, _ in imports}) | core_outside(imports, WIDGETS_CORE)
    assert not bad, f"ui/widgets/{path.name} imports {bad}: a widget draws what it is given"


@pytest.mark.parametrize("path", [p for p in files("ui/sections") if p.name != "__init__.py"], ids=lambda p: p.name)
def test_every_section_has_one_entry_point_named_show(path):
    problems = entry_point_problems(path.read_text(encoding="utf-8"))
    assert not problems, f"ui/sections/{path.name}: {', '.join(problems)}"


@pytest.mark.parametrize("path", APP, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_app_imports_no_test_machinery(path):
    bad = machinery(imported_modules(path))
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}: test machinery lives in tests/ or scripts/"
