"""Tests load a script from scripts/ as a module, to call its functions directly."""
import importlib.util
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def load_script(name: str):
    """scripts/<name>.py (name may name a folder: "bench/llama_cpp_peer"), imported as the module of its
    file's name."""
    spec = importlib.util.spec_from_file_location(Path(name).name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
