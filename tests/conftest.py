"""Shared fixtures: tiny seeded GPT-2 models whose exact distributions can be enumerated."""
import os
import sys
from pathlib import Path

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing in the suite may reach for the network
# Tiny models are dominated by per-op overhead; one thread avoids oversubscribing 2 cores.
torch.set_num_threads(1)


def tiny_gpt2(seed: int, vocab: int = 8, n_layer: int = 1, n_embd: int = 8, n_positions: int = 32,
              spread: float = 1.0) -> GPT2LMHeadModel:
    """A random GPT-2 small enough to enumerate; `spread` (init std) makes its distributions peaky."""
    torch.manual_seed(seed)  # test-only: model construction, not sampling
    config = GPT2Config(vocab_size=vocab, n_positions=n_positions, n_embd=n_embd, n_layer=n_layer, n_head=1,
                        initializer_range=spread, bos_token_id=None, eos_token_id=None)
    return GPT2LMHeadModel(config).eval()


@pytest.fixture(scope="session")
def tiny_pair():
    """(target, draft): different seeds and sizes, same vocabulary of 8."""
    return tiny_gpt2(0, n_layer=2, n_embd=16), tiny_gpt2(1)


@pytest.fixture(scope="session")
def small_pair():
    """(target, draft) with a vocabulary of 40, for greedy and property tests."""
    return tiny_gpt2(10, vocab=40, n_layer=2, n_embd=32, n_positions=128, spread=0.3), \
        tiny_gpt2(11, vocab=40, n_embd=16, n_positions=128, spread=0.3)
