"""Draft/target model pairs: the bundled Shakespeare pair (offline), GPT-2 pairs from the hub, or
a custom pair of hub ids / local directories. Every pair goes through `load_pair`.
"""
import copy
import os
import socket
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel
from transformers.utils import logging as hf_logging

from .model import context_length, vocab_size
from .policies import DEFAULT_ADAPTIVE
from .policy_record import read_record
from .self_drafters import load_self_drafters

ASSETS = Path(__file__).resolve().parent.parent / "assets" / "models"
BUNDLED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")


@dataclass(frozen=True)
class PairSpec:
    draft: str  # hub id or local directory
    target: str
    description: str
    extra_drafts: tuple[tuple[str, str], ...] = ()  # (label, hub id or dir) of alternative drafters
    bundled: bool = False
    draft_label: str | None = None  # how the UI names the default drafter
    heads: str | None = None  # folder of self-drafting heads trained on this target (medusa/, eagle/)
    policy_record: str | None = None  # JSON: the adaptive policy measured best per drafter (policy_record.py)


PAIRS = {
    "shakespeare": PairSpec(
        str(ASSETS / "shakespeare-draft"), str(ASSETS / "shakespeare-target"),
        "bundled: GPT-2 pair trained on Shakespeare's plays in this repo (offline)",
        (("corpus-only draft (not distilled)", str(ASSETS / "shakespeare-draft-ce")),), bundled=True,
        draft_label="distilled draft", heads=str(ASSETS / "shakespeare-heads"),
        policy_record=str(ASSETS / "shakespeare-policies.json")),
    "gpt2": PairSpec("distilgpt2", "gpt2", "OpenAI GPT-2 (124M) drafted by DistilGPT2 (82M), from the hub"),
    "gpt2-medium": PairSpec("distilgpt2", "gpt2-medium", "GPT-2 medium (355M) drafted by DistilGPT2, from the hub"),
}


# Precision of weights and arithmetic. fp32 is the default and the only one the exactness lessons
# use: bf16 halves the bytes a pass reads, but its rounding can flip near-ties, and differently in a
# one-token pass and in a multi-position pass (docs/benchmarks.md, "Half precision").
PRECISIONS = {"fp32": torch.float32, "bf16": torch.bfloat16}
PRECISION_HELP = ("weights and arithmetic: fp32 (default; the exact target) or bf16 (half the bytes a pass reads, "
                  "lossy: its rounding moves the target's distributions and flips near-ties; measured agreement "
                  "in docs/benchmarks.md, Half precision)")


def model_at_precision(model: PreTrainedModel, precision: str) -> PreTrainedModel:
    """The model itself at fp32, else a converted copy (a cached model is shared: never cast in place)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}")
    dtype = PRECISIONS[precision]
    if next(model.parameters()).dtype == dtype:
        return model
    return copy.deepcopy(model).to(dtype).eval()


class PairUnavailable(RuntimeError):
    """A pair that cannot be loaded here (missing download, no network, corrupt file); the message
    says what is missing and how to get it."""


@dataclass
class ModelPair:
    name: str
    target: PreTrainedModel
    draft: PreTrainedModel
    tokenizer: object
    target_name: str
    draft_name: str
    description: str
    device: str
    drafts: dict[str, PreTrainedModel] = field(default_factory=dict)  # label -> drafter model, default first
    precision: str = "fp32"  # of every model's weights and arithmetic (PRECISIONS)
    # "medusa" / "eagle" -> a drafter reading this target's features (empty: no heads for this target)
    self_drafters: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what could not be loaded, for the UI to say
    # drafter ("draft" or a self_drafters key) -> the adaptive policy measured best for it here (policy_record.py)
    adaptive_choices: dict = field(default_factory=dict)

    def adaptive_policy(self, drafter: str = "draft") -> str:
        """The name of the adaptive policy that measured best on this machine for `drafter` ("draft",
        the pair's default drafter, or a key of self_drafters) at this precision; policies.DEFAULT_ADAPTIVE
        where nothing was measured (hub pairs, another precision, a drafter not in the record)."""
        entry = self.adaptive_choices.get(drafter)
        return entry["policy"] if entry and entry.get("precision", "fp32") == self.precision else DEFAULT_ADAPTIVE

    def at_precision(self, precision: str) -> "ModelPair":
        """This pair at `precision`: itself, or a new pair of converted copies (this one is untouched)."""
        if precision == self.precision:
            return self
        drafts = {label: model_at_precision(m, precision) for label, m in self.drafts.items()}
        draft = next((drafts[label] for label, m in self.drafts.items() if m is self.draft), None)
        return ModelPair(self.name, model_at_precision(self.target, precision),
                         draft if draft is not None else model_at_precision(self.draft, precision),
                         self.tokenizer, self.target_name, self.draft_name, self.description, self.device,
                         drafts, precision, notes=(self.notes + [f"the self-drafting heads were trained on the fp32 target: "
                                                                  f"not offered at {precision}"]
                                                     if self.self_drafters else list(self.notes)),
                         adaptive_choices=dict(self.adaptive_choices))

    @property
    def context_length(self) -> int:
        return min(context_length(self.target), context_length(self.draft))

    @property
    def vocab_size(self) -> int:
        return vocab_size(self.target)

    @property
    def target_params(self) -> int:
        return sum(p.numel() for p in self.target.parameters())

    @property
    def draft_params(self) -> int:
        return sum(p.numel() for p in self.draft.parameters())

    def info(self) -> dict:
        """Plain facts for the UI and the CLI."""
        return {"pair": self.name, "target": self.target_name, "draft": self.draft_name,
                "target_params": self.target_params, "draft_params": self.draft_params,
                "vocab_size": self.vocab_size, "context_length": self.context_length, "device": self.device,
                "drafts": list(self.drafts), "precision": self.precision, "self_drafters": list(self.self_drafters)}


def default_device() -> str:
    """CUDA if present, else Apple MPS, else CPU."""
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def hub_reachable(timeout_s: float = 2.0) -> bool:
    """Whether the Hugging Face hub answers within `timeout_s` (never when HF_HUB_OFFLINE is set)."""
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
        return False
    try:
        with socket.create_connection(("huggingface.co", 443), timeout=timeout_s):
            return True
    except OSError:
        return False


def _check_bundled(directory: Path) -> None:
    for name in BUNDLED_FILES:
        if not (directory / name).is_file():
            raise PairUnavailable(f"bundled model file missing: {directory / name} "
                                  "(restore it with `git checkout -- assets/models` or retrain: specdec train)")


def _load_one(ref: str, device: str, bundled: bool):
    """Model and tokenizer from a local directory or a hub id: local files first, the network only
    if it answers within seconds."""
    local = Path(ref).is_dir()
    if bundled:
        _check_bundled(Path(ref))
    try:
        return from_pretrained(ref, device, local_files_only=True)
    except PairUnavailable:
        raise
    except Exception as err:
        if local or bundled:
            raise PairUnavailable(f"model files in {ref} are corrupt or unreadable ({type(err).__name__}: "
                                  f"{str(err)[:200]})") from err
    if not hub_reachable():
        raise PairUnavailable(f"'{ref}' is not in the local Hugging Face cache and the hub cannot be reached")
    try:
        return from_pretrained(ref, device, local_files_only=False)
    except Exception as err:
        raise PairUnavailable(f"could not download '{ref}': {type(err).__name__}: {str(err)[:200]}") from err


def from_pretrained(ref: str, device: str, local_files_only: bool):
    """One model and its tokenizer from a hub id or a local directory, in eval mode on `device`
    (`local_files_only`: never the network)."""
    # Weights may be stored in fp16 to keep the repo small; compute happens in float32.
    model = AutoModelForCausalLM.from_pretrained(ref, dtype=torch.float32, local_files_only=local_files_only,
                                                 trust_remote_code=False)
    tokenizer = AutoTokenizer.from_pretrained(ref, local_files_only=local_files_only, trust_remote_code=False)
    return model.to(device).eval(), tokenizer


def same_tokenizer(a, b) -> bool:
    """Whether two tokenizers map the same strings to the same ids."""
    return a.get_vocab() == b.get_vocab()


def load_pair(name: str = "shakespeare", device: str | None = None, *, target: str | None = None,
              draft: str | None = None, precision: str = "fp32") -> ModelPair:
    """Load a draft/target pair in eval mode. `name` is a key of PAIRS, or "custom" with `target`
    and `draft` given as hub ids or local directories; `precision` one of PRECISIONS (fp32 unless
    asked). Raises PairUnavailable with a clear message when the models cannot be had, and
    ValueError for an unknown name or precision or mismatched tokenizers."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}")
    if name == "custom":
        if not target or not draft:
            raise ValueError("a custom pair needs both target= and draft= (hub ids or local directories)")
        spec = PairSpec(draft, target, f"custom: {draft} drafting for {target}")
    elif name in PAIRS:
        spec = PAIRS[name]
    else:
        raise ValueError(f"unknown pair {name!r}: choose one of {sorted(PAIRS) + ['custom']}")
    device = device or default_device()
    hf_logging.disable_progress_bar()
    loaded, missing = {}, []
    for ref in dict.fromkeys((spec.target, spec.draft)):
        try:
            loaded[ref] = _load_one(ref, device, spec.bundled)
        except PairUnavailable as err:
            missing.append(str(err))
    if missing:
        raise PairUnavailable(f"the '{name}' pair cannot be loaded here: " + "; ".join(missing) + ". "
                              + ("" if spec.bundled else "Run once with a network to download the models, "
                                 "or point a custom pair at local directories (save_pretrained output)."))
    (target_model, target_tok), (draft_model, draft_tok) = loaded[spec.target], loaded[spec.draft]
    if not same_tokenizer(target_tok, draft_tok):
        raise ValueError(f"the draft ({spec.draft}) and target ({spec.target}) use different tokenizers: "
                         "speculative decoding needs one shared vocabulary")
    label = lambda ref: Path(ref).name if Path(ref).is_dir() else ref
    drafts = {spec.draft_label or label(spec.draft): draft_model}
    for extra_label, ref in spec.extra_drafts:
        model, tok = _load_one(ref, device, spec.bundled)
        if same_tokenizer(tok, target_tok):
            drafts[extra_label] = model
    self_drafters, notes = {}, []
    if spec.heads is not None:  # missing or corrupt head files leave the pair usable, with a note
        self_drafters, notes = load_self_drafters(target_model, Path(spec.heads))
    choices = {}
    if spec.policy_record is not None:
        choices, record_notes = read_record(spec.policy_record)
        notes += record_notes
    for note in notes:
        warnings.warn(note, stacklevel=2)
    return ModelPair(name, target_model, draft_model, target_tok, label(spec.target), label(spec.draft),
                     spec.description, device, drafts, self_drafters=self_drafters, notes=notes,
                     adaptive_choices=choices).at_precision(precision)
