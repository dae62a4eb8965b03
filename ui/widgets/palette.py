"""Every colour the app draws with, in one place, for the light and the dark theme.

No single set of colours is readable on both white and a near-black background (Okabe & Ito's
orange is 2.3:1 on white, their blue 3.6:1 on black), so each theme has its own palette and pages ask
for a colour by its role: `palette.color("accepted")`. The active theme is the one the viewer's
browser reports (`st.context.theme.type`); outside a session (tests, scripts) it is the light one.

What each palette promises (tests/app/test_palette.py checks it): every colour is at least 4.5:1
against its theme's background, so it may be used for text (the marks inside token chips), for chart
lines and for chip borders (3:1 would do there); and accepted / rejected / corrective / bonus stay
apart for viewers with protanopia or deuteranopia, not only by hue.
"""
import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

# The backgrounds of Streamlit 1.67's light and dark themes (.streamlit/config.toml keeps them).
BACKGROUND = {"light": "#FFFFFF", "dark": "#171614"}

PALETTES = {
    # Okabe & Ito's hues, darkened until they read on white.
    "light": {
        "target": "#3B3BD9",  # a plain target pass (blue-violet)
        "drafted": "#8C0041",  # reddish purple
        "accepted": "#126660",  # bluish green
        "rejected": "#70301C",  # vermillion, dark
        "corrective": "#8F4600",  # orange, dark
        "bonus": "#0053A6",  # blue
        "muted": "#636363",  # prompt, unchecked drafts, reference lines
        "ink": "#000000",  # outlines and rules that must stand out
    },
    # The same roles, lightened until they read on the dark background.
    "dark": {
        "target": "#B0B0FF",
        "drafted": "#FF4D9E",
        "accepted": "#19E5D8",
        "rejected": "#E07A5A",
        "corrective": "#E5CB00",
        "bonus": "#4DA3FF",
        "muted": "#A0A0A0",
        "ink": "#FFFFFF",
    },
}
ROLES = tuple(PALETTES["light"])
# The order in which a chart's series that name no colour take them (.streamlit/config.toml's
# chartCategoricalColors for each theme lists these colours).
CATEGORICAL = ("bonus", "corrective", "accepted", "rejected", "drafted", "target", "muted")


def theme() -> str:
    """"light" or "dark": the theme of the viewer's browser, light when unknown."""
    kind = st.context.theme.type if get_script_run_ctx(suppress_warning=True) is not None else None  # None: no session
    return kind if kind in PALETTES else "light"


def color(role: str, theme_name: str | None = None) -> str:
    """The colour for `role` (one of ROLES) in the given theme, by default the active one."""
    if role not in PALETTES["light"]:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    return PALETTES[theme_name or theme()][role]


def drafter_colors() -> list[str]:
    """One colour per drafter when drafters are compared (the α Dial's measured drafters), for the viewer's theme
    (read on each use: a module constant would keep the first viewer's theme for everyone)."""
    return [color("accepted"), color("rejected"), color("bonus")]


def background(theme_name: str | None = None) -> str:
    """The page background of the given theme (by default the active one)."""
    return BACKGROUND[theme_name or theme()]


def relative_luminance(hex_color: str) -> float:
    """WCAG 2.1 relative luminance of an sRGB colour given as #RRGGBB."""
    h = hex_color.lstrip("#")
    if len(h) != 6:
        raise ValueError(f"hex_color must be #RRGGBB, got {hex_color!r}")
    channels = [int(h[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2.1 contrast ratio of two colours, from 1 to 21 (AA: 4.5 for text, 3 for graphics)."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def blend(fg: str, bg: str, alpha: float) -> str:
    """`fg` drawn with opacity `alpha` over `bg`, as #RRGGBB (how a tinted chip background looks)."""
    f, g = (tuple(int(c.lstrip("#")[i:i + 2], 16) for i in (0, 2, 4)) for c in (fg, bg))
    return "#" + "".join(f"{round(alpha * x + (1 - alpha) * y):02X}" for x, y in zip(f, g))
