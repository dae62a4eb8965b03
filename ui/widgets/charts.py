"""Plotly pieces shared by pages: probability bars over tokens, and consistent colours.

The colours (P_COLOR, Q_COLOR, RESIDUAL_COLOR, MUTED, INK) follow the viewer's theme (ui/widgets/palette.py),
so they are looked up on each use rather than fixed when this module is imported.
Plotly renders a subset of HTML inside text (<br>, <b>, <a>…), so token labels are escaped too.
"""
import math

import plotly.graph_objects as go

from ui.widgets import palette
from ui.widgets.chips import escape

_ROLES = {
    "P_COLOR": "bonus",  # the target's distribution p
    "Q_COLOR": "drafted",  # the drafter's distribution q
    "RESIDUAL_COLOR": "corrective",  # the residual max(0, p - q)
    "MUTED": "muted",  # reference lines, the exact distribution
    "INK": "ink",  # outlines and rules: black on light, white on dark
}


def __getattr__(name: str) -> str:
    if name in _ROLES:
        return palette.color(_ROLES[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def log_ticks(lo: float, hi: float) -> list[float]:
    """Tick values 1, 2, 5, 10, 20, 50… covering [lo, hi] (lo > 0) for a log axis: plotly's own log
    ticks label the 2…9 in between at 9 px, too small to read on a projector."""
    if not 0 < lo <= hi:
        raise ValueError(f"lo and hi must satisfy 0 < lo <= hi, got lo={lo}, hi={hi}")
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    ticks = [m * 10.0 ** e for e in range(first, last + 1) for m in (1, 2, 5)]
    below = [t for t in ticks if t <= lo]
    above = [t for t in ticks if t >= hi]
    return [t for t in ticks if (below[-1] if below else ticks[0]) <= t <= (above[0] if above else ticks[-1])]


def token_label(text: str) -> str:
    """A token as a safe, visible chart label: escaped, with spaces and newlines shown."""
    shown = escape(text).replace("\n", "↵").replace("\t", "⇥").replace(" ", "␣")
    return shown or "∅"


def labels_for(tokenizer, ids) -> list[str]:
    """Chart labels for token ids, made unique (two ids can decode to the same text)."""
    out, seen = [], {}
    for i in ids:
        label = token_label(tokenizer.decode([int(i)]))
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} #{i}")
    return out


def prob_bars(top, tokenizer, title: str, color: str, highlight: int | None = None,
              highlight_color: str | None = None, height: int = 260) -> go.Figure:
    """Horizontal bars of the top entries [(token id, probability)…], most likely on top; the
    `highlight` token (if present) drawn in `highlight_color`."""
    top = list(top)[::-1]
    ids = [t for t, _ in top]
    fig = go.Figure(go.Bar(
        x=[p for _, p in top], y=labels_for(tokenizer, ids), orientation="h",
        marker_color=[highlight_color or color if t == highlight else color for t in ids],
        marker_line_width=[3 if t == highlight else 0 for t in ids], marker_line_color=palette.color("ink"),
        text=[f"{p:.3f}" for _, p in top], textposition="auto",
        hovertemplate="%{y}: %{x:.4f}<extra></extra>"))
    fig.update_layout(title=dict(text=title, font_size=13), height=height, margin=dict(l=8, r=8, t=36, b=8),
                      xaxis=dict(range=[0, 1], title=None), yaxis=dict(title=None, type="category"),
                      showlegend=False)
    return fig
