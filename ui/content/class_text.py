"""Class mode's text as the teacher's and projector's Streamlit views show it: a visitor's or the store's
words made safe for a markdown element, and a refusal of the store as a sentence."""
import re

MARKDOWN_SIGNS = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>&$:])")


def plain(text) -> str:
    """Text shown as it is inside a markdown element: every markdown, HTML and LaTeX sign escaped, so
    a hostile value can neither format, link nor inject."""
    return MARKDOWN_SIGNS.sub(r"\\\1", "".join(ch if ch.isprintable() else "?" for ch in str(text)))


def sentence(err: BaseException) -> str:
    """A refusal as a sentence for the page (the store's messages are plain words already; they may
    quote what a visitor typed, so they are escaped)."""
    text = (str(err).strip() or type(err).__name__)[:300]
    return plain(text[:1].upper() + text[1:] + ("" if text.endswith((".", "!", "?")) else "."))
