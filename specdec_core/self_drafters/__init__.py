"""Drafters that read the target's own features: Medusa heads, an EAGLE-style drafter (EAGLE-1's
recipe) and an EAGLE-3 drafter (training-time test, a reduced draft vocabulary).

Both are trained here on the frozen bundled target (`specdec train heads`) and only draft for that
target: its weights, vocabulary and width are checked when they are loaded (`for_target`).
"""
from pathlib import Path

from ..model import context_length
from .eagle import EagleDrafter
from .files import HeadsMismatch, check_target, load_net, read_config, read_training
from .medusa import MedusaDrafter
from .nets import target_fingerprint, target_readout

KINDS = ("medusa", "eagle", "eagle3")
NAMES = {"medusa": "Medusa heads", "eagle": "EAGLE drafter", "eagle3": "EAGLE-3 drafter"}

__all__ = ["EagleDrafter", "MedusaDrafter", "HeadsMismatch", "for_target", "load_self_drafters", "KINDS"]


def for_target(target, directory: Path, fingerprint: str | None = None):
    """The drafter stored in `directory` (a MedusaDrafter or an EagleDrafter, EAGLE-1 or EAGLE-3) bound to `target`.
    Raises HeadsMismatch (a ValueError) when the heads were trained on another target (weights,
    vocabulary or width), OSError/ValueError when the files are missing or unreadable."""
    config = read_config(directory)
    lm_head, embedding = target_readout(target)
    check_target(config, lm_head.shape[1], lm_head.shape[0], fingerprint or target_fingerprint(target))
    net = load_net(directory, config).to(lm_head.device)
    if config.kind == "medusa":
        drafter = MedusaDrafter(net, lm_head, config, context_length(target), NAMES["medusa"])
    elif config.kind in ("eagle", "eagle3"):
        drafter = EagleDrafter(net, lm_head, embedding, config, context_length(target), NAMES[config.kind])
    else:
        raise ValueError(f"unknown heads kind {config.kind!r} in {directory}")
    drafter.training = read_training(directory)
    return drafter


def load_self_drafters(target, directory: Path) -> tuple[dict, list[str]]:
    """{"medusa": ..., "eagle": ..., "eagle3": ...} for the heads found under directory/<kind>, and a message for
    each that could not be loaded (missing, corrupt, or trained on another target): the pair stays
    usable without them."""
    drafters, problems = {}, []
    fingerprint = target_fingerprint(target)
    for kind in KINDS:
        where = Path(directory) / kind
        try:
            drafters[kind] = for_target(target, where, fingerprint)
        except HeadsMismatch as err:
            problems.append(str(err))
        except Exception as err:  # missing or corrupt files: the pair works without this drafter
            problems.append(f"{NAMES[kind]} not loaded from {where} ({type(err).__name__}: {str(err)[:160]}); "
                            "retrain them with `specdec train heads` or restore assets/models")
    return drafters, problems
