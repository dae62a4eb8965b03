"""Token chips: every token drawn as a small coloured box saying where it came from, in the
colour-blind-safe palette of the viewer's theme (ui/widgets/palette.py) with a legend, shared by every page.

Colour is never the only cue: each kind also has a marker (✓ ✗ ↺ ★ …) and rejected drafts are struck
through. All text from users or models goes through `html.escape` before it reaches the page, and
each chip isolates its text's direction (`dir="auto"`, `unicode-bidi: isolate`): right-to-left text or
a stray bidi override stays inside its own chip instead of reordering its neighbours.
"""
import html
from dataclasses import dataclass

import streamlit as st

from ui.widgets import palette


@dataclass(frozen=True)
class Kind:
    role: str  # its colour's role in ui/widgets/palette.py
    label: str
    marker: str
    meaning: str

    @property
    def color(self) -> str:
        """The kind's colour in the viewer's theme (looked up on each use: themes differ per viewer)."""
        return palette.color(self.role)


KINDS = {
    "prompt": Kind("muted", "prompt", "", "text you gave"),
    "target": Kind("target", "target (plain)", "●", "one full target pass made this token"),
    "drafted": Kind("drafted", "drafted", "?", "proposed by the drafter, not yet checked"),
    "accepted": Kind("accepted", "accepted", "✓", "drafted, then kept by the target's check"),
    "rejected": Kind("rejected", "rejected", "✗", "drafted, then refused: it and everything after it is dropped"),
    "corrective": Kind("corrective", "corrective", "↺", "drawn from the residual max(0, p − q) after a rejection"),
    "bonus": Kind("bonus", "bonus", "★", "drawn from the target's last distribution when every draft passed"),
    "unchecked": Kind("muted", "not checked", "·", "after a rejection: never looked at"),
}
# The chip's fill: its colour at this opacity over the page. Low enough that the mark, drawn in the
# full colour inside the chip, keeps 4.5:1 against it (tests/app/test_palette.py).
TINT_ALPHA = 0.10
SPEC_KINDS = ("prompt", "drafted", "accepted", "rejected", "corrective", "bonus")


def escape(text: str) -> str:
    """HTML-escape user or model text (quotes included)."""
    return html.escape(str(text), quote=True)


def token_strings(tokenizer, ids) -> list[str]:
    """Each token id decoded on its own (a token may be part of a multi-byte character: shown as �)."""
    return [tokenizer.decode([int(i)]) for i in ids]


def _visible(text: str) -> str:
    # Escape first, then make layout characters visible; the markers are our own, safe HTML.
    shown = escape(text).replace("\n", "↵").replace("\t", "⇥")
    return shown if shown.strip() else shown.replace(" ", "␣") or "∅"


def chip(text: str, kind: str, tip: str | None = None) -> str:
    """One token as an HTML chip. `tip` (plain text, escaped here) shows on hover."""
    k = KINDS[kind]
    title = escape(f"{k.label}: {k.meaning}" + (f" — {tip}" if tip else ""))
    if kind == "prompt":  # running text, line breaks kept (and marked)
        shown = escape(text).replace("\n", "↵\n")
        return (f'<span class="tok tok-prompt" dir="auto" title="{title}" '
                f'style="opacity:0.7;white-space:pre-wrap;unicode-bidi:isolate">{shown}</span>')
    border = "dashed" if kind in ("rejected", "unchecked", "drafted") else "solid"
    strike = "text-decoration:line-through;" if kind in ("rejected", "unchecked") else ""
    color = k.color
    style = (f"background:{color}{round(TINT_ALPHA * 255):02X};border:2px {border} {color};border-radius:6px;padding:0 3px;"
             f"margin:1px;{strike}")
    marker = (f'<span style="font-size:0.7em;vertical-align:super;margin-left:1px;color:{color}">'
              f'{k.marker}</span>') if k.marker else ""
    brk = "<br>" if text.endswith("\n") else ""
    return (f'<span class="tok tok-{kind}" dir="auto" title="{title}" style="{style}white-space:pre;'
            f'display:inline-block;line-height:1.6;unicode-bidi:isolate">{_visible(text)}{marker}</span>{brk}')


def chips(texts, kinds, tips=None) -> str:
    """A run of chips; texts and kinds are parallel lists (tips optional)."""
    tips = tips or [None] * len(texts)
    body = "".join(chip(t, k, tip) for t, k, tip in zip(texts, kinds, tips))
    return f'<div class="tok-run" style="font-family:ui-monospace,monospace;font-size:0.95em">{body}</div>'


def legend(kinds=SPEC_KINDS) -> str:
    """The palette as a one-line legend."""
    items = " ".join(chip(KINDS[k].label, k) for k in kinds)
    return f'<div class="tok-legend" style="font-size:0.85em;margin:2px 0 6px 0">{items}</div>'


def provenance_html(tokenizer, prompt_ids, tokens, kinds, tail: str = "") -> str:
    """The prompt (muted) followed by the generated tokens coloured by where each came from.
    `tail` is extra chip HTML appended at the end (e.g. the drafts of a round in progress)."""
    body = chip(tokenizer.decode(list(prompt_ids)), "prompt")
    body += "".join(chip(t, k) for t, k in zip(token_strings(tokenizer, tokens), kinds))
    ids = " ".join(str(int(t)) for t in tokens)  # the generated token ids, for checks from a browser (load test)
    return (f'<div class="tok-run" data-tokens="{ids}" style="font-family:ui-monospace,monospace;font-size:0.95em">'
            f'{body}{tail}</div>')


def show(html_text: str) -> None:
    """Render chip HTML (already escaped) in the page."""
    st.html(html_text)


def show_legend(kinds=SPEC_KINDS) -> None:
    st.html(legend(kinds))


def first_difference_html(tokenizer, tokens, first: int | None, label: str) -> str:
    """A continuation as running text with its first differing token marked by a bracketed ≠ label, a
    thick underline and a colour (never colour alone); the tokens after it in the theme's muted colour
    (4.5:1 or more). Text is escaped."""
    texts = token_strings(tokenizer, tokens)
    if first is None:
        body = escape("".join(texts))
    else:
        mark = (f'<mark style="background:#F0E442;color:#000;border-bottom:3px solid #000;font-weight:700" '
                f'title="first token that differs">[≠ {_visible(texts[first])}]</mark>' if first < len(texts) else
                '<mark style="background:#F0E442;color:#000">[≠ ended early]</mark>')
        rest = escape("".join(texts[first + 1:]))
        body = f'{escape("".join(texts[:first]))}{mark}<span style="color:{palette.color("muted")}">{rest}</span>'
    return (f'<div class="tok-diff" style="font-family:ui-monospace,monospace;font-size:0.95em;white-space:pre-wrap">'
            f'<b>{escape(label)}:</b> {body}</div>')
