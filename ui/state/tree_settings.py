"""The token-tree chapter's own settings: a tree shape and a node budget, from the URL or a widget.

Plain Python (no Streamlit), like ui/state/settings.py: values are untrusted, so they are clamped and every
change is said in words. The URL carries `tree=2,2,1,1` and `budget=16` (0 or absent: a static tree).
"""
from specdec_core.tree_draft import MAX_BRANCHING, MAX_TREE_DEPTH, tree_size

QUERY_KEYS = ("tree", "budget")
DEFAULT_SHAPE = (2, 2, 1, 1)
MAX_NODES = 31  # a verification pass over 32 positions is the widest this app times (ui/measure.SWEEP_KS)
MAX_RAW_CHARS = 40


def format_shape(shape: tuple[int, ...]) -> str:
    return ",".join(str(k) for k in shape)


def parse_shape(raw) -> tuple[tuple[int, ...], list[str]]:
    """A shape such as "2,2,1,1" -> ((2, 2, 1, 1), warnings): branching factors clamped to
    [1, MAX_BRANCHING], at most MAX_TREE_DEPTH levels, deepest levels dropped beyond MAX_NODES nodes."""
    if isinstance(raw, list):
        raw = raw[-1] if raw else None
    if raw is None or str(raw).strip() == "":
        return DEFAULT_SHAPE, []
    text = str(raw)[:MAX_RAW_CHARS]
    shown = text if len(text) <= 20 else text[:20] + "…"
    parts = [p.strip() for p in text.replace(" ", ",").split(",") if p.strip()]
    try:
        values = [int(p) for p in parts]
    except ValueError:
        return DEFAULT_SHAPE, [f"Tree shape {shown!r} is not a list of whole numbers such as 2,2,1,1: "
                               f"using {format_shape(DEFAULT_SHAPE)}."]
    if not values:
        return DEFAULT_SHAPE, []
    warnings = []
    clamped = [min(max(k, 1), MAX_BRANCHING) for k in values[:MAX_TREE_DEPTH]]
    if len(values) > MAX_TREE_DEPTH:
        warnings.append(f"A tree here is at most {MAX_TREE_DEPTH} levels deep: kept the first {MAX_TREE_DEPTH}.")
    if clamped != values[:MAX_TREE_DEPTH]:
        warnings.append(f"Branching factors are between 1 and {MAX_BRANCHING} here: clamped.")
    while tree_size(tuple(clamped)) > MAX_NODES:
        clamped.pop()
    if len(clamped) < min(len(values), MAX_TREE_DEPTH):
        warnings.append(f"A tree here has at most {MAX_NODES} nodes: dropped its deepest levels.")
    if not clamped:  # even the first level was too wide: cannot happen while MAX_BRANCHING <= MAX_NODES
        clamped = [1]
    shape = tuple(clamped)
    if warnings:
        warnings[-1] += f" Using {format_shape(shape)}."
    return shape, warnings


def parse_budget(raw) -> tuple[int, list[str]]:
    """A node budget from the URL -> (budget, warnings); 0 means a static tree."""
    if isinstance(raw, list):
        raw = raw[-1] if raw else None
    if raw is None or str(raw).strip() == "":
        return 0, []
    try:
        value = int(str(raw)[:MAX_RAW_CHARS])
    except ValueError:
        return 0, ["The node budget is not a whole number: using a static tree."]
    if not 0 <= value <= MAX_NODES:
        clamped = min(max(value, 0), MAX_NODES)
        return clamped, [f"The node budget is between 0 (a static tree) and {MAX_NODES} here: using {clamped}."]
    return value, []
