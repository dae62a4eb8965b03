"""Tables as a class reads them (ui.widgets.tables)."""
from ui.widgets import tables


def test_readable_tables_fill_every_gap():
    frame = tables.readable([{"a": 1, "b": None, "c": 0.12345}, {"a": 2, "b": "x", "c": float("nan")}], {"c": ".3f"})
    assert frame.to_dict("list") == {"a": [1, 2], "b": [tables.DASH, "x"], "c": ["0.123", tables.DASH]}
