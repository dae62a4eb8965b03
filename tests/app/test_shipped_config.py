"""The shipped server configuration: `make run` serves as leanly as the classroom command."""
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_config_has_no_file_watcher():
    server = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["server"]
    assert server["fileWatcherType"] == "none"  # watching the checkout (and .venv/ in it) costs CPU on every request
    assert server["runOnSave"] is False


def test_make_run_keeps_the_watcher_off_and_make_dev_opts_in():
    targets = dict(re.findall(r"^([a-z]+):.*\n\t(.+)$", (ROOT / "Makefile").read_text(), flags=re.M))
    assert "-m ui.server.launch" in targets["run"] and "fileWatcherType" not in targets["run"]
    assert "--server.fileWatcherType auto" in targets["dev"] and "--server.runOnSave true" in targets["dev"]


def test_the_launcher_is_streamlit_run_app_py_after_the_imports(monkeypatch):
    """ui/server/launch.py hands Streamlit's own command line `run app.py` and the options it was given."""
    from streamlit.web import cli

    from ui.server import launch

    calls = []
    monkeypatch.setattr(launch, "preload", lambda: calls.append("preload"))
    monkeypatch.setattr(cli, "main", lambda args, prog_name: calls.append((prog_name, args)))
    launch.main(["--server.port", "8765"])
    assert calls == ["preload", ("streamlit", ["run", "app.py", "--server.port", "8765"])]
