"""The rules between the layers: chapters -> ui -> specdec_core, never back; inside the core, the
algorithm in its order (sampling_config, model -> drafters -> bookkeeping -> speculative -> tree -> everything else),
analyses never reach into tools, what runs a model is reached through the model room's one interface
(specdec_core.model) only, and no module takes another module's private names."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The core's own order: a module may import only from its level or below. Modules not listed (broken,
# lossy, pairs, the analysis and tools packages, new drafters, batching) are "everything else", above all.
LEVELS = {
    "sampling_config": 0, "trace": 0, "costs": 0, "checks": 0,  # leaves: distributions, records
    "model": 0,  # the model room: everything that runs a model (caches, passes, the compiled kernel)
    "request": 0,  # what a generation is asked for (the prompt, lengths, sampling, seed, eos)
    "drafters": 1, "tree_draft": 1, "policies": 1,  # what proposes drafts, and how many
    "bookkeeping": 2,  # the one skeleton
    "speculative": 3,  # the chain's rule (the paper's algorithm)
    "tree": 4,  # token trees, built on the sampler's rule
}
ELSE = max(LEVELS.values()) + 1


def module_name(path: Path) -> tuple[str, bool]:
    """The dotted name of a file under ROOT, and whether it is a package's __init__."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return (".".join(parts[:-1]), True) if parts[-1] == "__init__" else (".".join(parts), False)


def imports_of(source: str, module: str, is_package: bool = False) -> set[tuple[str, str | None]]:
    """(module, name) for every import in `source`, read as the module `module`: relative imports
    resolved against its package, and for `from X import y` both (X, y) and (X.y, None), since y may be
    a submodule (`from . import analysis`)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {(a.name, None) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level - 1 > len(package) - 1:
                    raise ValueError(f"{module}: relative import beyond the top package")
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module
            for a in node.names:
                found |= {(base, a.name), (f"{base}.{a.name}", None)}
    return found


def modules_of(source: str, module: str, is_package: bool = False) -> set[str]:
    return {m for m, _ in imports_of(source, module, is_package)}


def imported_modules(path: Path) -> set[str]:
    return modules_of(path.read_text(encoding="utf-8"), *module_name(path))


def core_level(module: str) -> int | None:
    """The level of a specdec_core module (None outside the core). The bare package name (`from . import
    x` names it beside specdec_core.x, which carries the level) counts as the bottom."""
    parts = module.split(".")
    if parts[0] != "specdec_core":
        return None
    return LEVELS.get(parts[1], ELSE) if len(parts) > 1 else 0


def order_violations(module: str, imported: set[str]) -> set[str]:
    """The core modules `module` imports from a level above its own (the package's __init__ is on top)."""
    own = ELSE if module == "specdec_core" else core_level(module)
    return {m for m in imported if own is not None and (core_level(m) or 0) > own}


def files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


CORE = files("specdec_core")


# --- the detector itself, on planted sources ----------------------------------------------------------

def test_relative_imports_resolve_to_the_module_they_name():
    assert "specdec_core.analysis" in modules_of("from . import analysis", "specdec_core.speculative")
    assert "specdec_core.tools.cli" in modules_of("from ..tools import cli", "specdec_core.analysis.race")
    assert "specdec_core.tools.cli" in modules_of("from ..tools.cli import main", "specdec_core.analysis.race")
    assert "specdec_core.analysis.trees" in modules_of("from .trees import tree_vs_chain", "specdec_core.analysis", True)
    assert "specdec_core.tree" in modules_of("from ..tree import EXACT_TREE", "specdec_core.analysis", True)
    assert "specdec_core.speculative" in modules_of("from .. import speculative", "specdec_core.analysis.lab")


def test_planted_violations_are_caught():
    assert order_violations("specdec_core.speculative", modules_of("from . import analysis", "specdec_core.speculative"))
    assert order_violations("specdec_core.speculative", modules_of("from .tree import verify_tree", "specdec_core.speculative"))
    assert order_violations("specdec_core.drafters", modules_of("from .bookkeeping import begin", "specdec_core.drafters"))
    assert order_violations("specdec_core.model.pass_choice",
                            modules_of("from .. import drafters", "specdec_core.model.pass_choice"))
    assert model_room_entered(modules_of("from .model.python_pass import GPT2Pass", "specdec_core.drafters"))
    assert not model_room_entered(modules_of("from .model import CachedLM", "specdec_core.drafters"))
    assert not order_violations("specdec_core.tree", modules_of("from .speculative import EXACT", "specdec_core.tree"))
    assert not order_violations("specdec_core.speculative",
                                modules_of("from . import sampling_config", "specdec_core.speculative"))
    race = modules_of("from ..tools import cli", "specdec_core.analysis.race")
    assert {m for m in race if m.startswith("specdec_core.tools")}
    assert private_imports(imports_of("from .speculative import _top", "specdec_core.tree"))
    assert not private_imports(imports_of("from .speculative import verify, __doc__", "specdec_core.tree"))


# --- the rules ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(ROOT)))
def test_core_never_imports_the_app(path):
    bad = {m for m in imported_modules(path) if m.split(".")[0] in ("streamlit", "ui", "chapters")}
    assert not bad, f"{path.name} imports {bad}"


@pytest.mark.parametrize("path", [p for p in CORE  # __main__.py is the command line's door
                                  if p.parent == ROOT / "specdec_core" and p.name != "__main__.py"],
                         ids=lambda p: p.name)
def test_the_algorithm_never_imports_its_analyses_or_tools(path):
    bad = {m for m in imported_modules(path) if m.startswith(("specdec_core.analysis", "specdec_core.tools"))}
    assert not bad, f"{path.name} imports {bad}"


@pytest.mark.parametrize("path", files("specdec_core/analysis"), ids=lambda p: p.name)
def test_analyses_never_import_tools(path):
    bad = {m for m in imported_modules(path) if m.startswith("specdec_core.tools")}
    assert not bad, f"{path.name} imports {bad}"


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_core_keeps_its_order(path):
    module, _ = module_name(path)
    bad = order_violations(module, imported_modules(path))
    assert not bad, f"{module} (level {core_level(module)}) imports {bad} from above"


def model_room_entered(imported: set[str]) -> set[str]:
    """The model room's inner modules among `imported` (the room itself, specdec_core.model, is the door)."""
    inner = {"specdec_core.model." + p.stem for p in (ROOT / "specdec_core" / "model").glob("*.py")}
    return {m for m in imported if m in inner}


@pytest.mark.parametrize("path", [p for p in CORE + files("ui") + files("chapters")
                                  if not p.is_relative_to(ROOT / "specdec_core" / "model")],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_the_model_room_is_entered_by_its_door(path):
    bad = model_room_entered(imported_modules(path))
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}: the rest of the core sees specdec_core.model only"


def private_imports(imports: set[tuple[str, str | None]]) -> set[str]:
    return {f"{m}.{name}" for m, name in imports if name and name.startswith("_") and not name.startswith("__")}


@pytest.mark.parametrize("path", CORE + files("ui") + files("chapters") + files("scripts"),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_takes_another_modules_private_names(path):
    bad = private_imports(imports_of(path.read_text(encoding="utf-8"), *module_name(path)))
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}: give what two modules share a public home"


@pytest.mark.parametrize("path", files("ui"), ids=lambda p: p.name)
def test_ui_never_imports_a_chapter(path):
    assert not {m for m in imported_modules(path) if m.split(".")[0] == "chapters"}
