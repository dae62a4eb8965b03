"""What class mode draws for a room: the join panel (a big code, a QR code and the link, readable from
the back of a room at 1280×720) and the vote histogram (counts per option, never names; one or two
rounds side by side, each bar labelled with its count and the second round hatched, so no meaning
rests on colour alone).

Everything that reaches HTML or a plotly label is escaped here: codes and links come from a URL a
visitor typed, option texts from a data file.
"""
import html

import plotly.graph_objects as go
import segno
import streamlit as st

from ui.content.class_text import plain
from ui.widgets import palette

LETTERS = "ABCDEFGH"  # option labels: a room says "B", not "the second one"
ROUND_NAMES = {1: "First vote", 2: "Second vote, after discussion"}
ROUND_STYLE = {1: ("bonus", ""), 2: ("corrective", "/")}  # (palette role, bar pattern): hatched = second vote
QR_PX = 260  # on a 1280×720 projector: a fifth of the screen's width, scannable from the middle rows


def letter(i: int) -> str:
    return LETTERS[i] if 0 <= i < len(LETTERS) else str(i + 1)


def round_name(r: int) -> str:
    return ROUND_NAMES.get(r, f"Vote {r}")


def qr_data_uri(link: str) -> str:
    """The join link as a QR code: an SVG data URI, dark on white in either theme (scanners need that).
    An inline <svg> drew nothing inside st.html in Chromium; an <img> does."""
    return segno.make(link, error="m").svg_data_uri(scale=1, dark="#000000", light="#FFFFFF", border=2)


def join_panel_html(code: str, link: str, *, big: bool = True) -> str:
    """The join code in letters a back row can read, the QR code and the link. `big`: the teacher's
    screen (code beside the QR code); otherwise the projector's column (code under the QR code)."""
    code_size, link_size, qr_px = ("5.5rem", "1.5rem", QR_PX) if big else ("4.2rem", "1.2rem", 230)
    spaced = f"{code[:3]} {code[3:]}" if len(code) == 6 else code
    return (
        f'<div class="cm-join" style="display:flex;gap:1.2rem 2rem;align-items:center;flex-wrap:wrap">'
        f'<img src="{html.escape(qr_data_uri(link))}" alt="QR code of the join link" width="{qr_px}" '
        f'height="{qr_px}" style="flex:none;background:#FFFFFF;border-radius:6px;image-rendering:pixelated">'
        f'<div style="min-width:0">'
        f'<div style="font-size:1.3rem">Join on your phone: scan the code, or go to</div>'
        f'<div style="font-size:{link_size};font-weight:600;overflow-wrap:anywhere">{html.escape(link)}</div>'
        f'<div style="font-size:1.3rem;margin-top:.5rem">Class code</div>'
        f'<div class="cm-code" style="font-size:{code_size};line-height:1.05;font-weight:800;letter-spacing:.1em;'
        f'white-space:nowrap;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace">{html.escape(spaced)}</div>'
        f'</div></div>')


def question_html(prompt: str, options: tuple[str, ...], *, big: bool = True) -> str:
    """The question and its lettered options as the room reads them (escaped; the prompt is plain text)."""
    size, opt = ("1.9rem", "1.45rem") if big else ("1.2rem", "1.05rem")
    items = "".join(f'<li style="margin:.25rem 0"><b>{letter(i)}</b>&ensp;{html.escape(o)}</li>'
                    for i, o in enumerate(options))
    return (f'<div class="cm-question"><p style="font-size:{size};font-weight:600;line-height:1.3;margin:0 0 .5rem">'
            f'{html.escape(prompt)}</p><ul style="list-style:none;padding:0;margin:0;font-size:{opt};'
            f'line-height:1.35">{items}</ul></div>')


def histogram(options: tuple[str, ...], rounds: dict[int, dict[int, int]], right: int | None = None,
              height: int = 380, big: bool = True) -> go.Figure:
    """Counts per option, one group of bars per option, one bar per round (side by side). Each bar
    carries its count as text; the second round is hatched; `right` marks that option's label with ✓."""
    labels = [letter(i) + (" ✓" if i == right else "") for i in range(len(options))]
    fig = go.Figure()
    top = max([n for counts in rounds.values() for n in counts.values()] + [1])
    for r in sorted(rounds):
        counts = [int(rounds[r].get(i, 0)) for i in range(len(options))]
        total = sum(counts)
        role, shape = ROUND_STYLE.get(r, ("accepted", "x"))
        fig.add_bar(x=labels, y=counts, name=f"{round_name(r)} ({total} answer{'s' * (total != 1)})",
                    text=[str(n) for n in counts], textposition="outside", cliponaxis=False,
                    textfont=dict(size=20 if big else 16, color=palette.color("ink")), marker=dict(color=palette.color(role),
                                                         pattern=dict(shape=shape, fgcolor=palette.color("ink"),
                                                                      solidity=0.25)),
                    customdata=[html.escape(o) for o in options],
                    hovertemplate="%{x}: %{customdata}<br>%{y} student(s)<extra>" + html.escape(round_name(r)) + "</extra>")
    fig.update_layout(barmode="group", height=height, margin=dict(t=30, b=10, l=10, r=10),
                      yaxis=dict(title="students", rangemode="tozero", range=[0, top * 1.25 + 0.5],
                                 dtick=max(1, round(top / 5))),
                      xaxis=dict(tickfont=dict(size=22 if big else 18)),
                      legend=dict(orientation="h", y=-0.18, font=dict(size=15 if big else 13)),
                      showlegend=True)
    return fig


def status_line(s) -> str:
    """The class's state in a few words (s: classroom.ClassState)."""
    if s.question_id is None:
        return "Waiting for the first question."
    vote = "Second vote" if (s.round or 1) == 2 else round_name(s.round or 1)
    if s.open:
        return f"{vote}: open."
    return f"{vote}: closed" + ("; the counts are on the screen." if s.revealed else ".")


def show_results(q, res: dict, *, big: bool, key: str, height: int = 380) -> None:
    """The histogram of a revealed question (both rounds side by side after a revote) and, once the room
    may see it, the right answer or the demo's verdict. `res`: classroom.web.view.results (the phones get
    the same figures)."""
    rounds = {r["round"]: dict(enumerate(r["counts"])) for r in res["rounds"]}
    right = res["right"]
    summary = "; ".join(f"{round_name(r)}: " + ", ".join(f"{letter(i)} {n}" for i, n in counts.items())
                        for r, counts in rounds.items())
    fig = histogram(q.options, rounds, right=right, height=height, big=big)
    st.plotly_chart(fig, key=key, config={"displayModeBar": False}, width="stretch", alt=f"Votes per option. {summary}.")
    st.caption("Counts per option, never names" + ("; ✓ marks the right answer." if right is not None else ".") +
               f" {summary}.")
    if res["by_demo"] and right is not None:
        st.success(f"**The demo decided: {letter(right)}.** {plain(res['why'])}", icon=":material/science:")
    elif right is not None:
        st.success(f"**Right answer: {letter(right)}.** {plain(res['why'])}", icon=":material/check_circle:")
