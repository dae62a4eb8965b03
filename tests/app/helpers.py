"""Helpers shared by the AppTest page suites: open a chapter through the frame, read metrics and charts."""
import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def page(path: str, timeout: int = 180, **query) -> AppTest:
    """Run app.py with these query parameters, switch to the chapter at `path`, assert no exception."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    at.query_params = {k: str(v) for k, v in query.items()}
    at.run()
    at.switch_page(path).run()
    assert not at.exception, at.exception
    return at


def metric(at, label: str) -> str:
    values = [m.value for m in at.metric if m.label == label]
    assert values, f"no metric {label!r} among {[m.label for m in at.metric]}"
    return values[0]


def chart(at, key: str) -> dict:
    """The plotly figure (as JSON) of the chart with this key."""
    return json.loads(at.get_by_key(key).proto.spec)


PROSE = {"markdown", "info", "success", "warning", "error"}  # element types that carry a page's prose (captions are markdown)


def unfolded_text(at) -> str:
    """The prose (markdown, captions, alerts) of the page outside every expander: what a reader sees before
    opening a fold."""
    def text(node) -> str:
        if getattr(node, "type", None) == "expander":
            return ""
        children = getattr(node, "children", None)
        if children is not None:
            return " ".join(text(child) for child in children.values())
        value = getattr(node, "value", None)
        return value if getattr(node, "type", None) in PROSE and isinstance(value, str) else ""
    return text(at.main)
