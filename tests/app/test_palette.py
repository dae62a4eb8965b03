"""The app's colours (ui/widgets/palette.py) against WCAG 2.1 AA in both themes, and for colour-blind viewers.

Colour-blindness is simulated with Machado, Oliveira & Fernandes (2009), severity 1.0 (the matrices act
on linear RGB); distances are CIE76 ΔE in CIELAB (D65). A ΔE of 20 is far above the ~2–5 at which
two flat colours start to look the same.
"""
import itertools
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

from ui.widgets import chips, layout, palette

ROOT = Path(__file__).resolve().parents[2]
THEMES = tuple(palette.PALETTES)
VERDICTS = ("accepted", "rejected", "corrective", "bonus")
MIN_VERDICT_DELTA_E = 20.0

MACHADO_2009 = {
    "protanopia": np.array([[0.152286, 1.052583, -0.204868],
                            [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968],
                              [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
}


def linear_rgb(hex_color: str) -> np.ndarray:
    c = np.array([int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def lab(rgb_linear: np.ndarray) -> np.ndarray:
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ np.clip(rgb_linear, 0, 1)
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > 0.008856, np.cbrt(t), 7.787 * t + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(a: str, b: str, vision: str | None = None) -> float:
    m = MACHADO_2009[vision] if vision else np.eye(3)
    return float(np.linalg.norm(lab(m @ linear_rgb(a)) - lab(m @ linear_rgb(b))))


def test_contrast_matches_known_pairs():
    assert palette.contrast("#000000", "#FFFFFF") == pytest.approx(21.0)
    assert palette.contrast("#777777", "#FFFFFF") == pytest.approx(4.48, abs=0.01)  # the classic near miss
    assert palette.blend("#2F2D2B", "#FFFFFF", 0.6) == "#828180"  # Streamlit's own caption on white…
    assert palette.contrast("#828180", "#FFFFFF") == pytest.approx(3.88, abs=0.01)  # …fails AA
    assert palette.blend("#000000", "#FFFFFF", 0.6) == "#666666"


def test_backgrounds_and_chart_colours_match_the_theme_config():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["theme"]
    for theme in THEMES:
        assert config[theme]["backgroundColor"].upper() == palette.BACKGROUND[theme]
        assert [c.upper() for c in config[theme]["chartCategoricalColors"]] == [
            palette.color(role, theme) for role in palette.CATEGORICAL]


@pytest.mark.parametrize("theme", THEMES)
def test_captions_reach_4_5_to_1(theme):
    """A caption is the theme's text colour at the share ui/widgets/layout.py's style gives it."""
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["theme"][theme]
    text = config.get("textColor", {"light": "#2F2D2B", "dark": "#EDEBE8"}[theme])  # Streamlit 1.67's defaults
    share = int(re.search(r"stCaptionContainer.*currentColor (\d+)%", layout.STYLES).group(1)) / 100
    caption = palette.blend(text, palette.BACKGROUND[theme], share)
    assert palette.contrast(caption, palette.BACKGROUND[theme]) >= 4.5


@pytest.mark.parametrize("theme", THEMES)
def test_every_colour_reads_as_text_on_its_background(theme):
    bg = palette.BACKGROUND[theme]
    low = {role: round(palette.contrast(c, bg), 2) for role, c in palette.PALETTES[theme].items()
           if palette.contrast(c, bg) < 4.5}
    assert not low, f"{theme}: under 4.5:1 on {bg}: {low}"


@pytest.mark.parametrize("theme", THEMES)
def test_chip_marks_and_borders_read_on_the_chip(theme):
    bg = palette.BACKGROUND[theme]
    for name, kind in chips.KINDS.items():
        colour = palette.color(kind.role, theme)
        fill = palette.blend(colour, bg, chips.TINT_ALPHA)
        assert palette.contrast(colour, fill) >= 4.5, f"{theme}: {name}'s mark on its own fill"
        assert palette.contrast(colour, bg) >= 3.0, f"{theme}: {name}'s border on the page"


def test_old_okabe_ito_colours_fail_on_white():
    """The check above is not vacuous: the palette the chips had before fails it."""
    old = {"sky blue": "#56B4E9", "orange": "#E69F00", "grey": "#999999"}
    assert all(palette.contrast(c, "#FFFFFF") < 3.0 for c in old.values())


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("vision", [None, *MACHADO_2009])
def test_verdict_colours_stay_apart_for_colour_blind_viewers(theme, vision):
    colours = {k: palette.color(k, theme) for k in VERDICTS}
    closest = min((delta_e(colours[a], colours[b], vision), a, b) for a, b in itertools.combinations(VERDICTS, 2))
    assert closest[0] >= MIN_VERDICT_DELTA_E, f"{theme}, {vision or 'normal vision'}: {closest}"


def test_simulation_catches_a_red_green_pair():
    """The simulation is not vacuous: an orange and a green far apart for most viewers collapse."""
    orange, green = "#E06000", "#4C9900"
    assert delta_e(orange, green) > 60
    assert delta_e(orange, green, "deuteranopia") < MIN_VERDICT_DELTA_E
    assert delta_e(orange, green, "protanopia") < MIN_VERDICT_DELTA_E


def test_unknown_role_names_the_parameter():
    with pytest.raises(ValueError, match="role"):
        palette.color("mauve")


def test_chapters_name_colours_by_role_not_by_hex_code():
    """A hex code in a chapter would be one colour for both themes: pages ask ui/widgets/palette.py (directly,
    or through chips.KINDS[...].color and charts.P_COLOR…) instead."""
    hex_code = re.compile(r"""["']#[0-9A-Fa-f]{3,8}["']""")
    found = {p.name: hex_code.findall(p.read_text()) for p in sorted((ROOT / "chapters").glob("*.py"))}
    assert not {name: codes for name, codes in found.items() if codes}
