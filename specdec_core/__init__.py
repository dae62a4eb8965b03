"""SpecDec Lab's core: exact speculative decoding over transformers causal LMs (no UI code here)."""
from . import lossy, theory
from .batch import MAX_BATCH, BatchResult, batch_generate
from .checks import MAX_GAMMA
from .drafters import ModelDrafter, NgramDrafter, UnigramDrafter
from .pairs import PRECISIONS, ModelPair, PairUnavailable, load_pair
from .request import GenerationRequest
from .sampling_config import GREEDY, SamplingConfig
from .speculative import EXACT, Rule, autoregressive_generate, speculative_generate
from .trace import GenerationResult, RoundTrace, TreeSettings, TreeTrace, drafts_frame, rounds_frame
from .tree import EXACT_TREE, TreeRule, tree_generate

__all__ = [
    "batch_generate", "BatchResult", "MAX_BATCH",
    "theory", "lossy", "load_pair", "PRECISIONS", "ModelPair", "PairUnavailable", "ModelDrafter", "NgramDrafter",
    "UnigramDrafter",
    "EXACT", "MAX_GAMMA", "Rule",
    "autoregressive_generate", "speculative_generate", "GenerationRequest", "GREEDY", "SamplingConfig", "GenerationResult",
    "RoundTrace", "drafts_frame", "rounds_frame", "TreeTrace", "TreeSettings", "EXACT_TREE", "TreeRule", "tree_generate",
]
