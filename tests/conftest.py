"""Shared fixtures: tiny seeded GPT-2 models whose exact distributions can be enumerated."""
import os
import sys
from pathlib import Path

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.modeling_outputs import CausalLMOutputWithCrossAttentions

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing in the suite may reach for the network
# Tiny models are dominated by per-op overhead; one thread avoids oversubscribing 2 cores.
torch.set_num_threads(1)


class MemoizedGPT2(GPT2LMHeadModel):
    """A GPT-2 whose forward is memoized on the whole token sequence, so that tens of thousands of
    whole generations take seconds. Its KV cache carries the token ids themselves (as a one-number
    "key" per position), so `Cache.crop` rolls them back exactly as it rolls back real keys; every
    logit row is the real GPT-2's full forward over that sequence. The real KV path is covered by
    test_core_lm.py and the greedy-identity tests."""

    def __init__(self, config):
        super().__init__(config)
        self._memo = {}

    def _logits(self, ids: tuple) -> torch.Tensor:
        if ids not in self._memo:
            self._memo[ids] = super().forward(input_ids=torch.tensor([ids])).logits[0]
        return self._memo[ids]

    def forward(self, input_ids=None, past_key_values=None, use_cache=None, logits_to_keep=0,
                attention_mask=None, position_ids=None, **kwargs):
        if past_key_values is None:
            return super().forward(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                                   **kwargs)
        new = input_ids.double().view(1, 1, -1, 1)
        keys, _ = past_key_values.update(new, new, layer_idx=0)
        ids = tuple(int(i) for i in keys.view(-1).tolist())
        if attention_mask is not None and attention_mask.dim() == 4:  # a token tree: row i sees what mask[i] allows
            visible = attention_mask[0, 0] == 0  # (k, cache + k), additive mask: 0 = attend
            logits = torch.stack([self._logits(tuple(t for t, v in zip(ids, row) if v))[-1]
                                  for row in visible.tolist()])
        else:
            logits = self._logits(ids)[-(logits_to_keep or len(ids)):]
        return CausalLMOutputWithCrossAttentions(logits=logits.unsqueeze(0), past_key_values=past_key_values)


def tiny_gpt2(seed: int, vocab: int = 8, n_layer: int = 1, n_embd: int = 8, n_positions: int = 32,
              spread: float = 1.0, memoized: bool = False) -> GPT2LMHeadModel:
    """A random GPT-2 small enough to enumerate; `spread` (init std) makes its distributions peaky."""
    torch.manual_seed(seed)  # test-only: model construction, not sampling
    config = GPT2Config(vocab_size=vocab, n_positions=n_positions, n_embd=n_embd, n_layer=n_layer, n_head=1,
                        initializer_range=spread, bos_token_id=None, eos_token_id=None)
    return (MemoizedGPT2 if memoized else GPT2LMHeadModel)(config).eval()


@pytest.fixture(scope="session")
def tiny_pair():
    """(target, draft): different seeds and sizes, same vocabulary of 8; memoized for fast sampling."""
    return tiny_gpt2(0, n_layer=2, n_embd=16, memoized=True), tiny_gpt2(1, memoized=True)


@pytest.fixture(scope="session")
def small_pair():
    """(target, draft) with a vocabulary of 40, for greedy and property tests."""
    return tiny_gpt2(10, vocab=40, n_layer=2, n_embd=32, n_positions=128, spread=0.3), \
        tiny_gpt2(11, vocab=40, n_embd=16, n_positions=128, spread=0.3)


def pytest_collection_modifyitems(config, items):
    """Every test under tests/e2e drives a real browser: mark it so `make test-fast` can leave it out."""
    for item in items:
        if "e2e" in item.path.parts:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def pair():
    """The bundled Shakespeare pair (read-only in every test), loaded once for the whole run."""
    from specdec_core.pairs import load_pair
    return load_pair("shakespeare")


@pytest.fixture(scope="session")
def prompt_ids(pair):
    """The documented lab prompt (the app's default), tokenized for the bundled pair."""
    from specdec_core.analysis import lab
    return pair.tokenizer.encode(lab.DOCUMENTED_PROMPT)


@pytest.fixture(scope="session")
def documented_runs():
    """The exactness lab's documented run on the bundled pair (the documented prompt, prefix, temperature, γ,
    n tokens, K and seed) for the exact rule and every broken one: computed once for the core's lab
    tests and the Identical Outputs page tests alike."""
    from specdec_core.analysis import lab
    from specdec_core.broken import BROKEN_RULES
    from specdec_core.pairs import load_pair
    from specdec_core.speculative import EXACT
    pair = load_pair("shakespeare")
    prefix = pair.tokenizer.encode(lab.DOCUMENTED_PROMPT)[:lab.DOCUMENTED_PREFIX_TOKENS]
    dist = lab.Distributions(pair.target, pair.draft, prefix)
    return {rule.name: lab.run_lab(pair.target, pair.draft, prefix, n_tokens=lab.DOCUMENTED_N_TOKENS,
                                   k=lab.DOCUMENTED_K, gamma=lab.DOCUMENTED_GAMMA,
                                   sampling=lab.DOCUMENTED_SAMPLING, rule=rule, seed=lab.DOCUMENTED_SEED,
                                   with_plain=rule is EXACT, dist=dist)
            for rule in (EXACT, *BROKEN_RULES)}


REAL_MAIN = sys.modules.get("__main__")  # pytest's own, read before any test runs a page


@pytest.fixture(autouse=True)
def real_main_module():
    """Streamlit's script runner (AppTest) installs each page it runs as sys.modules["__main__"] and leaves it
    there (module-scoped fixtures too, before any test of theirs starts). A test that starts processes with
    multiprocessing's "spawn" would then re-run that page in every child on start-up (the children died
    before doing their work). Every test starts and ends with pytest's own __main__."""
    if REAL_MAIN is not None:
        sys.modules["__main__"] = REAL_MAIN
    yield
    if REAL_MAIN is not None:
        sys.modules["__main__"] = REAL_MAIN
