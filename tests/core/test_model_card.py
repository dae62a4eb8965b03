"""The bundled model card (assets/models/README.md) above the heads' section is the card script's render of
the stored card.json, never a hand edit, and --render-only rewrites it from card.json alone."""
import json
import shutil

from specdec_core.tools.train import card
from tests.conftest import ROOT

MODELS = ROOT / "assets" / "models"


def test_the_committed_card_is_the_render_of_card_json():
    top = (MODELS / "README.md").read_text().partition(card.HEADS_MARK)[0]
    assert top.rstrip("\n") == card.render(json.loads((MODELS / "card.json").read_text())).rstrip("\n")


def test_render_only_restores_a_hand_edited_card_and_keeps_the_heads_section(tmp_path):
    for name in ("README.md", "card.json"):
        shutil.copy(MODELS / name, tmp_path / name)
    readme = tmp_path / "README.md"
    original = readme.read_text()
    edited = original.replace("acceptance rate at T = 1 (accepted ÷ drafted, γ = 4)", "α at T = 1 (generation)")
    assert edited != original
    readme.write_text(edited)
    card.main(["--render-only", "--out", str(tmp_path)])
    assert readme.read_text() == original
