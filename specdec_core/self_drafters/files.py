"""Head files: fp16 safetensors + config.json (which target they belong to) + the training summary."""
import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from .nets import Eagle3Net, EagleNet, HeadsConfig, MedusaHeads

WEIGHTS, CONFIG = "heads.safetensors", "config.json"


class HeadsMismatch(ValueError):
    """Heads offered to a target they were not trained on."""


def save_heads(directory: Path, net: torch.nn.Module, config: HeadsConfig, training: dict | None = None) -> None:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    half = lambda v: v if not v.is_floating_point() else v.half()  # d2t stays integer
    save_file({k: half(v.detach()).contiguous() for k, v in net.state_dict().items()}, str(directory / WEIGHTS))
    (directory / CONFIG).write_text(json.dumps({**config.to_dict(), "training": training or {}}, indent=1))


def read_config(directory: Path) -> HeadsConfig:
    raw = json.loads((Path(directory) / CONFIG).read_text())
    raw.pop("training", None)
    raw["target_layers"] = tuple(raw.get("target_layers", ()))  # a JSON list; the config is frozen, hashable
    return HeadsConfig(**raw)


def read_training(directory: Path) -> dict:
    """The training summary stored beside the weights (steps, time, held-out agreement)."""
    return json.loads((Path(directory) / CONFIG).read_text()).get("training", {})


def check_target(config: HeadsConfig, width: int, vocab: int, fingerprint: str | None) -> None:
    """HeadsMismatch (a ValueError) unless the target has the width, vocabulary and weights the
    heads were trained on. fingerprint None: only width and vocabulary are checked."""
    problems = []
    if width != config.width:
        problems.append(f"feature width {width}, not {config.width}")
    if vocab != config.vocab:
        problems.append(f"vocabulary of {vocab}, not {config.vocab}")
    if fingerprint is not None and fingerprint != config.target_sha256:
        problems.append(f"other weights (sha256 {fingerprint[:12]}…, not {config.target_sha256[:12]}…)")
    if problems:
        raise HeadsMismatch(f"these {config.kind} heads were trained on {config.target_name or 'another target'}; "
                            f"this target has {', '.join(problems)}: heads only draft for the target they read")


def load_net(directory: Path, config: HeadsConfig) -> torch.nn.Module:
    """The network in float32, eval mode, its parameters frozen (shared read-only across sessions)."""
    if config.kind == "medusa":
        net = MedusaHeads(config.width, config.n_heads)
    elif config.kind == "eagle3":
        net = Eagle3Net(config.width, config.n_head, config.fused_layers, config.draft_vocab)
    else:
        net = EagleNet(config.width, config.n_head)
    state = {k: v if k == "d2t" else v.float() for k, v in load_file(str(Path(directory) / WEIGHTS)).items()}
    net.load_state_dict(state)
    for p in net.parameters():
        p.requires_grad_(False)
    return net.eval()
