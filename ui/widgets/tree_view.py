"""A verified round's token tree as a plotly figure: the context on the left, a node per draft at its
depth, the accepted path thick and solid, every node marked by its verdict (mark, symbol and colour,
never colour alone)."""
import plotly.graph_objects as go

from ui.widgets import charts, palette

MARK = {"accepted": ("✓", "star", 20), "rejected": ("✗", "x", 13), "not checked": ("·", "circle-open", 11)}


def layout_tree(parents: list[int]) -> list[float]:
    """y of the context (index 0) and of every node i (index i + 1): leaves one apart in depth-first
    order, a parent in the middle of its children. `parents[i]` is node i's parent (-1: the context)."""
    children: dict[int, list[int]] = {}
    for i, parent in enumerate(parents):
        children.setdefault(parent, []).append(i)
    y: dict[int, float] = {}
    next_leaf = [0.0]

    def place(node: int) -> float:
        kids = children.get(node, [])
        if not kids:
            y[node] = next_leaf[0]
            next_leaf[0] += 1
        else:
            y[node] = sum(place(k) for k in kids) / len(kids)
        return y[node]

    place(-1)
    return [y[-1]] + [y[i] for i in range(len(parents))]


def _fmt(value) -> str:
    return "—" if value is None else f"{value:.3f}"


def tree_figure(tree, words: list[str], context_word: str, title: str, depth: int) -> go.Figure:
    """The figure of one verified `tree` (a round's tree trace: parents, depth, nodes, path, verdicts, p
    and q per node), `words` the escaped label of each node's token, `depth` the deepest level drawn."""
    ys = layout_tree(tree.parents)  # index 0: the context, index i + 1: node i
    color = {k: palette.color("muted" if k == "not checked" else k) for k in MARK}  # the viewer's theme
    depths = tree.depth
    fig = go.Figure()
    on_path = set(tree.path)
    for i, parent in enumerate(tree.parents):
        win = i in on_path
        fig.add_scatter(x=[depths[i] - 1, depths[i]], y=[ys[parent + 1], ys[i + 1]], mode="lines", hoverinfo="skip",
                        showlegend=False, line=dict(width=6 if win else 1.5, color=charts.INK if win else charts.MUTED,
                                                    dash="solid" if win else "dot"))
    fig.add_scatter(x=[0], y=[ys[0]], mode="markers+text", text=[f"{context_word}"], textposition="middle left",
                    textfont=dict(color=charts.INK, size=13),
                    marker=dict(size=16, symbol="square", color=charts.MUTED), name="committed text",
                    hovertemplate="the last committed token<extra></extra>")
    for verdict, (mark, symbol, size) in MARK.items():
        idx = [i for i in range(len(tree.nodes)) if tree.verdict(i) == verdict]
        if not idx:
            continue
        fig.add_scatter(
            x=[depths[i] for i in idx], y=[ys[i + 1] for i in idx], mode="markers+text", name=f"{mark} {verdict}",
            text=[f"{mark} {words[i]}" for i in idx], textposition="middle right",
            textfont=dict(color=charts.INK, size=13),
            marker=dict(size=size, symbol=symbol, color=color[verdict], line=dict(width=1, color=charts.INK)),
            customdata=[[i + 1, words[i], tree.q_node[i], tree.p_node[i], _fmt(tree.accept_prob[i])] for i in idx],
            hovertemplate="node %{customdata[0]}: %{customdata[1]}<br>q(x) = %{customdata[2]:.3f} (drafter)"
                          "<br>p(x) = %{customdata[3]:.3f} (target)<br>accepted with chance %{customdata[4]}"
                          "<extra></extra>")
    fig.update_layout(title=title, height=max(320, 34 * (max(ys) + 2)), margin=dict(t=40, b=8, l=8, r=8),
                      xaxis=dict(title="depth", dtick=1, range=[-0.8, depth + 0.9]),
                      yaxis=dict(visible=False), legend=dict(orientation="h", y=-0.25))
    return fig
