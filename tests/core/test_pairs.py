"""Loading model pairs: the bundled pair offline, hub pairs failing fast and clearly, custom pairs."""
import json
import shutil
import socket

import pytest

from specdec_core import GREEDY, NgramDrafter, autoregressive_generate, pairs, speculative_generate
from specdec_core.pairs import ASSETS, PAIRS, PairSpec, PairUnavailable, load_pair

CARD = json.loads((ASSETS / "card.json").read_text())


@pytest.fixture(scope="module")
def pair():
    return load_pair()


@pytest.fixture
def no_network(monkeypatch):
    """Every attempt to open a connection, refused and recorded: a load that would wait on the network
    (retries, timeouts) shows up here whatever the machine's load, where a stopwatch would not."""
    attempts = []

    def refuse(self, address, *args):
        attempts.append(address)
        raise OSError(f"no network in this test: {address}")

    def resolve(host, *args, **kwargs):
        attempts.append(host)
        raise socket.gaierror(f"no network in this test: {host}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    return attempts


def test_bundled_pair_loads_offline_without_the_network(no_network):
    pair = load_pair()  # HF_HUB_OFFLINE=1 is set by conftest
    assert no_network == []
    assert pair.name == "shakespeare" and not pair.target.training and not pair.draft.training
    assert pair.device == "cpu"


def test_bundled_pair_matches_its_card(pair):
    assert pair.target_params == CARD["target"]["params"]
    assert pair.vocab_size == len(pair.tokenizer) == CARD["vocab_size"]
    assert pair.context_length == CARD["context_length"]
    assert {label: sum(p.numel() for p in m.parameters()) for label, m in pair.drafts.items()} == \
        {label: d["params"] for label, d in CARD["drafts"].items()}


def test_tokenizer_round_trips(pair):
    for text in ["HAMLET:\nTo be, or not to be, that is the question.\n", "Ünïcödé — 🙂 [Exit]", ""]:
        assert pair.tokenizer.decode(pair.tokenizer.encode(text)) == text


@pytest.mark.parametrize("gamma", [1, 2, 4, 8])
def test_greedy_identity_on_heldout_prompts(pair, gamma):
    for prompt in CARD["heldout_prompts"][:6]:
        ids = pair.tokenizer.encode(prompt)
        plain = autoregressive_generate(pair.target, ids, 32, GREEDY).tokens
        for drafter in [*pair.drafts.values(), NgramDrafter()]:
            assert speculative_generate(pair.target, drafter, ids, gamma=gamma, max_new_tokens=32,
                                        sampling=GREEDY).tokens == plain


@pytest.mark.parametrize("name", ["gpt2", "gpt2-medium"])
def test_hub_pair_offline_fails_at_once_and_clearly(name, no_network):
    assert not pairs.hub_reachable() and no_network == []  # offline: the hub is not even probed
    with pytest.raises(PairUnavailable) as err:
        load_pair(name)  # with every connection refused, so nothing can wait on the network
    message = str(err.value)
    assert "distilgpt2" in message and PAIRS[name].target in message and "network" in message


def test_custom_pair_of_local_directories(pair):
    custom = load_pair("custom", target=str(ASSETS / "shakespeare-target"), draft=str(ASSETS / "shakespeare-draft"))
    assert custom.target_params == pair.target_params
    ids = pair.tokenizer.encode("MACBETH:\n")
    assert speculative_generate(custom.target, custom.draft, ids, gamma=3, max_new_tokens=8, sampling=GREEDY).tokens \
        == autoregressive_generate(pair.target, ids, 8, GREEDY).tokens


def test_unknown_pair_and_incomplete_custom():
    with pytest.raises(ValueError, match="unknown pair"):
        load_pair("no-such-pair")
    with pytest.raises(ValueError, match="target"):
        load_pair("custom", target=str(ASSETS / "shakespeare-target"))


def _bundled_copy(tmp_path, monkeypatch):
    for name in ("shakespeare-target", "shakespeare-draft"):
        shutil.copytree(ASSETS / name, tmp_path / name)
    monkeypatch.setitem(PAIRS, "copy", PairSpec(str(tmp_path / "shakespeare-draft"),
                                                str(tmp_path / "shakespeare-target"), "copy", bundled=True))


def test_corrupt_bundled_weights_name_the_file(tmp_path, monkeypatch):
    _bundled_copy(tmp_path, monkeypatch)
    (tmp_path / "shakespeare-target" / "model.safetensors").write_bytes(b"\x00garbage" * 100)
    with pytest.raises(PairUnavailable, match="shakespeare-target"):
        load_pair("copy")


def test_missing_bundled_file_names_the_file(tmp_path, monkeypatch):
    _bundled_copy(tmp_path, monkeypatch)
    (tmp_path / "shakespeare-draft" / "tokenizer.json").unlink()
    with pytest.raises(PairUnavailable, match=r"shakespeare-draft/tokenizer\.json"):
        load_pair("copy")


def test_pairs_with_different_tokenizers_are_refused(tmp_path, monkeypatch):
    _bundled_copy(tmp_path, monkeypatch)
    tok = json.loads((tmp_path / "shakespeare-draft" / "tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    a, b = sorted(vocab, key=vocab.get)[100:102]
    vocab[a], vocab[b] = vocab[b], vocab[a]  # same size, different mapping
    (tmp_path / "shakespeare-draft" / "tokenizer.json").write_text(json.dumps(tok))
    with pytest.raises(ValueError, match="different tokenizers"):
        load_pair("copy")
