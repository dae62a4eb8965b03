"""Token trees: the tree pass and its cache, greedy identity, exact sampling, and the broken rules failing."""
import pytest
import torch

from specdec_core import (
    GREEDY,
    NgramDrafter,
    SamplingConfig,
    UnigramDrafter,
    autoregressive_generate,
    speculative_generate,
    tree_generate,
)
from specdec_core.broken import BROKEN_TREE_FRESH_DRAW, BROKEN_TREE_RULES, BROKEN_TREE_SAME_P
from specdec_core.drafters import Drafter
from specdec_core.model import CachedLM
from specdec_core.sampling_config import to_probs
from specdec_core.tree import EXACT_TREE, TreeRule
from specdec_core.tree_draft import MAX_TREE_NODES, tree_size
from tests.core.exactness import chi_square_pvalue

SHAPES = [(1,), (2,), (2, 2, 1, 1), (3, 1, 2), (1, 1, 1, 1, 1)]


# --- the tree pass and the cache ---------------------------------------------------------------------

def _fresh_next_logits(model, tokens: list[int]) -> torch.Tensor:
    """Logits after `tokens`, from a cache that never saw a tree."""
    lm = CachedLM(model)
    lm.prefill(tokens[:-1])
    return lm.extend([tokens[-1]])[0]


@pytest.mark.parametrize("forward", ["lean GPT-2 pass", "transformers forward"])
def test_tree_pass_sees_only_ancestors_and_cache_keeps_the_path(small_pair, forward):
    target, _ = small_pair
    prefix = [3, 14, 15, 9, 2]
    #        node:   0   1   2   3   4   5   6
    tokens, parents = [26, 5, 35, 8, 9, 7, 31], [-1, 0, 0, 1, 2, 2, 5]
    lm = CachedLM(target, "transformers" if forward == "transformers forward" else "core")
    lm.prefill(prefix)
    assert lm.lean == (forward == "lean GPT-2 pass")
    logits = lm.extend_tree(tokens[:3], parents[:3])  # a tree fed over two passes
    logits = torch.cat([logits, lm.extend_tree(tokens[3:], parents[3:])])
    for node in range(len(tokens)):  # each row: a plain forward over the prefix and the node's ancestors
        path, n = [], node
        while n >= 0:
            path.insert(0, tokens[n])
            n = parents[n]
        expected = target(torch.tensor([prefix + path])).logits[0, -1]
        torch.testing.assert_close(logits[node], expected, atol=1e-4, rtol=1e-4)
    lm.keep_path([0, 2, 5])  # the path 26 -> 35 -> 7
    assert lm.length == len(prefix) + 3
    torch.testing.assert_close(lm.extend([4])[0], _fresh_next_logits(target, prefix + [26, 35, 7, 4]),
                               atol=1e-4, rtol=1e-4)


def test_keep_path_rejects_a_non_path(small_pair):
    lm = CachedLM(small_pair[0])
    lm.prefill([1, 2])
    lm.extend_tree([3, 4, 5], [-1, -1, 0])
    with pytest.raises(ValueError, match="chain"):
        lm.keep_path([0, 1])  # siblings, not a chain
    with pytest.raises(ValueError, match="tree"):
        lm.extend([1])  # the tree must be ended first


def test_cache_after_tree_rounds_equals_a_fresh_forward(small_pair):
    target, draft = small_pair
    seen = []
    result = tree_generate(target, draft, [7, 1, 30], shape=(2, 2, 1), max_new_tokens=12, sampling=SamplingConfig(1.0),
                           seed=5, on_round=lambda r: seen.append(r))
    assert len(seen) == result.target_passes > 1
    # Continue the generation's own cache by hand: it must match a cache built on the output in a line.
    lm = CachedLM(target)
    lm.prefill([7, 1])
    context = [7, 1, 30]
    for r in result.rounds:
        lm.extend_tree([context[-1]] + r.nodes, [-1] + [par + 1 for par in r.parents])
        lm.keep_path([0] + [n + 1 for n in r.tree.path])
        context += r.emitted
    torch.testing.assert_close(lm.extend([context[-1]])[0], _fresh_next_logits(target, context), atol=1e-4, rtol=1e-4)


# --- greedy: token for token ------------------------------------------------------------------------

@pytest.mark.parametrize("prompt", [[1, 2, 3], [5, 9, 9, 2, 7, 1]])
def test_greedy_tree_equals_greedy_decoding(small_pair, prompt):
    target, draft = small_pair
    reference = autoregressive_generate(target, prompt, 30, GREEDY).tokens
    for shape in SHAPES:
        out = tree_generate(target, draft, prompt, shape=shape, max_new_tokens=30, sampling=GREEDY)
        assert out.tokens == reference, shape
        assert out.target_passes == len(out.rounds) <= 30
    for budget in (1, 5, 16):
        out = tree_generate(target, draft, prompt, shape=(2, 2, 2, 2), node_budget=budget, max_new_tokens=30,
                            sampling=GREEDY)
        assert out.tokens == reference, budget
        assert all(len(r.nodes) <= budget for r in out.rounds)
        assert all(r.draft_passes <= 4 for r in out.rounds)  # one drafter pass per level, as a static shape


def test_a_chain_shaped_tree_is_the_linear_sampler(small_pair):
    target, draft = small_pair
    tree = tree_generate(target, draft, [1, 2, 3], shape=(1, 1, 1, 1), max_new_tokens=30, sampling=GREEDY)
    chain = speculative_generate(target, draft, [1, 2, 3], gamma=4, max_new_tokens=30, sampling=GREEDY)
    assert tree.tokens == chain.tokens
    assert [r.n_accepted for r in tree.rounds] == [r.n_accepted for r in chain.rounds]


def test_round_trace_holds_the_tree(small_pair):
    target, draft = small_pair
    out = tree_generate(target, draft, [1, 2, 3], shape=(2, 2, 1, 1), max_new_tokens=20, sampling=SamplingConfig(0.8))
    for r in out.rounds:
        t = r.tree
        assert len(r.nodes) == len(r.parents) == len(t.p_node) == len(t.q_node) <= tree_size((2, 2, 1, 1))
        assert all(-1 <= par < i for i, par in enumerate(r.parents))
        assert [t.parents[n] for n in t.path] == ([-1] + t.path)[:len(t.path)]  # a chain from the context down
        assert r.emitted == ([r.nodes[n] for n in t.path] + [r.next_token])[:len(r.emitted)]
        assert all(t.verdict(n) == "accepted" for n in t.path)
    assert out.tree.shape == (2, 2, 1, 1) and out.tree.node_budget is None
    assert out.drafts_per_round == out.drafted / len(out.rounds)


# --- inputs -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(), (0, 2), (2, 9), (8, 8), "2,2", 3, (2.0,), (True,)])
def test_bad_shapes_are_refused(small_pair, shape):
    with pytest.raises(ValueError, match="shape"):
        tree_generate(*small_pair, [1, 2], shape=shape, max_new_tokens=4)


@pytest.mark.parametrize("budget", [0, MAX_TREE_NODES + 1, 2.5, True])
def test_bad_budgets_are_refused(small_pair, budget):
    with pytest.raises(ValueError, match="node_budget"):
        tree_generate(*small_pair, [1, 2], node_budget=budget, max_new_tokens=4)


def test_a_drafter_without_trees_is_refused(small_pair):
    class ChainOnly(Drafter):  # a Drafter whose sessions draft chains only: drafts_trees is not declared
        name = "chain only"

        def start(self, vocab):
            return NgramDrafter().start(vocab)

    with pytest.raises(ValueError, match="cannot draft token trees"):
        tree_generate(small_pair[0], ChainOnly(), [1, 2], max_new_tokens=4)


@pytest.mark.parametrize("drafter", [NgramDrafter(), UnigramDrafter()], ids=lambda d: d.name)
def test_model_free_drafters_draft_trees_exactly_in_greedy_mode(small_pair, drafter):
    target, _ = small_pair
    prompt = [5, 9, 9, 2, 7, 1, 5, 9, 9]
    reference = autoregressive_generate(target, prompt, 20, GREEDY).tokens
    out = tree_generate(target, drafter, prompt, shape=(2, 2, 1), max_new_tokens=20, sampling=GREEDY)
    assert out.tokens == reference
    assert out.draft_passes == 0
    if isinstance(drafter, NgramDrafter):  # one continuation: a chain-shaped tree
        assert all(par == i - 1 for r in out.rounds for i, par in enumerate(r.parents))


# --- sampling: exact distribution -------------------------------------------------------------------

def _random_pq(generator, vocab=5):
    p = torch.softmax(2 * torch.randn(vocab, generator=generator, dtype=torch.float64), -1)
    q = torch.softmax(2 * torch.randn(vocab, generator=generator, dtype=torch.float64), -1)
    return p, q


def node_distribution(rule: TreeRule, p: torch.Tensor, q: torch.Tensor, n_children: int) -> torch.Tensor:
    """Exact (V,) distribution of the token one node emits when n_children children are drawn from q
    without replacement and judged by `rule`; the emitted token is the accepted child or the leftover
    draw. Enumerates every draw order (about V ** n_children terms): small V only."""
    p, q = p.double(), q.double()

    def emit(p_now, q_now, left, k, last):
        if k == 0 or float(left.sum()) <= 0:
            return rule.leftover(p_now, q_now, last) if last is not None else p_now
        out, mass = torch.zeros_like(p), left.sum()
        for x in torch.nonzero(left > 0).flatten().tolist():
            w, a = float(left[x] / mass), rule.accept(p_now, q_now, x)
            out[x] += w * a
            rest = left.clone()
            rest[x] = 0.0
            out += w * (1 - a) * emit(*rule.after_reject(p_now, q_now, x), rest, k - 1, x)
        return out

    return emit(p, q, q.clone(), n_children, None)


def test_exact_enumeration_one_node():
    """Every draw order of 1-3 children from q, enumerated: the exact rule emits p, the broken ones do not."""
    g = torch.Generator().manual_seed(0)
    worst = {rule.name: 0.0 for rule in (EXACT_TREE,) + BROKEN_TREE_RULES}
    for _ in range(60):
        p, q = _random_pq(g)
        for k in (1, 2, 3):
            for rule in (EXACT_TREE,) + BROKEN_TREE_RULES:
                tv = 0.5 * float((node_distribution(rule, p, q, k) - p).abs().sum())
                worst[rule.name] = max(worst[rule.name], tv)
    assert worst[EXACT_TREE.name] < 1e-9
    assert worst[BROKEN_TREE_SAME_P.name] > 0.2 and worst[BROKEN_TREE_FRESH_DRAW.name] > 0.1


PROMPT = [7, 4, 6]  # the tiny target is unsure here and the draft disagrees: a wrong rule shows at once
LENGTH = 3  # tokens per sample: a one-token run cannot tell a tree from a chain
# Sized by the broken tree rules, which the same test must catch at p < 1e-6 (X2 > 63.7 at df = 19): measured on
# 3,000 fresh-seed draws, same-p X2 = 332 and fresh-draw X2 = 379, so w2 = (X2 - df) / n = 0.104 and 0.120.
# At n = 3,000 lam = n * w2 >= 313 and a miss P(chi2'(19, lam) <= 63.7) has probability < 1e-25 (0.999 needs n >= 1,000);
# the honest trees' false alarm is their bar, p <= 1e-3, at any n. Was 6,000: twice what the controls use.
N_SAMPLES = 3000


@torch.inference_mode()
def exact_distribution(target, sampling: SamplingConfig) -> dict[tuple, float]:
    """P(y_1..y_LENGTH | PROMPT) under the transformed target distribution, by enumeration."""
    probs = {(): 1.0}
    for _ in range(LENGTH):
        nxt = {}
        for prefix, mass in probs.items():
            if mass > 0:
                p = to_probs(target(torch.tensor([PROMPT + list(prefix)])).logits[0, -1].double(), sampling)
                nxt.update({prefix + (y,): mass * float(p[y]) for y in range(len(p))})
        probs = nxt
    return probs
TREES = {"shape (2, 2)": dict(shape=(2, 2)), "shape (3, 1)": dict(shape=(3, 1)),
         "budget 5": dict(shape=(2, 2), node_budget=5)}


def _draw(target, draft, sampling, rule=EXACT_TREE, n=N_SAMPLES, **tree):
    return [tuple(tree_generate(target, draft, PROMPT, max_new_tokens=LENGTH, sampling=sampling, seed=i,
                                trace=False, rule=rule, **tree).tokens) for i in range(n)]


@pytest.mark.slow  # thousands of whole generations
@pytest.mark.parametrize("name", TREES)
def test_tree_samples_follow_target(tiny_pair, name):
    target, draft = tiny_pair
    sampling = SamplingConfig(1.0)
    p_value = chi_square_pvalue(_draw(target, draft, sampling, **TREES[name]), exact_distribution(target, sampling))
    assert p_value > 1e-3, f"{name}: chi-square p = {p_value:.2e}"


@pytest.mark.slow  # thousands of whole generations
def test_tree_samples_follow_target_with_top_k(tiny_pair):
    target, draft = tiny_pair
    sampling = SamplingConfig(0.7, top_k=4)
    p_value = chi_square_pvalue(_draw(target, draft, sampling, shape=(3, 2)), exact_distribution(target, sampling))
    assert p_value > 1e-3, f"chi-square p = {p_value:.2e}"


@pytest.mark.slow  # thousands of whole generations
@pytest.mark.parametrize("rule", BROKEN_TREE_RULES, ids=lambda r: r.name)
def test_broken_tree_rules_fail(tiny_pair, rule):
    target, draft = tiny_pair
    sampling = SamplingConfig(1.0)
    p_value = chi_square_pvalue(_draw(target, draft, sampling, rule, shape=(2, 2)),
                                exact_distribution(target, sampling))
    assert p_value < 1e-6, f"{rule.name} passed: chi-square p = {p_value:.2e}"


# --- the exactness lab's replay ---------------------------------------------------------------------

@pytest.mark.parametrize("tree", [dict(shape=(2, 2, 1)), dict(shape=(3, 2), node_budget=6)], ids=str)
def test_lab_replay_gives_tree_generates_tokens(small_pair, tree):
    from specdec_core.analysis import lab
    target, draft = small_pair
    prefix, sampling = [4, 8, 15, 16], SamplingConfig(1.0)
    dist = lab.Distributions(target, draft, prefix)
    for seed in range(40):
        replay = lab.tree_sample(dist, 2, tree["shape"], sampling, torch.Generator().manual_seed(seed),
                                 node_budget=tree.get("node_budget"))
        real = tree_generate(target, draft, prefix, max_new_tokens=3, sampling=sampling, seed=seed, trace=False, **tree)
        assert replay == tuple(real.tokens[:2]), seed


def test_lab_tree_rule_passes_and_naive_rules_fail(tiny_pair):
    from specdec_core.analysis import lab
    target, draft = tiny_pair
    dist = lab.Distributions(target, draft, PROMPT)
    sampling = SamplingConfig(1.0)
    run = lambda rule: lab.run_lab(target, draft, PROMPT, n_tokens=2, k=3000, sampling=sampling, rule=rule,  # noqa: E731
                                   with_plain=False, dist=dist, shape=(2, 2)).speculative_test.pvalue
    assert run(EXACT_TREE) > 1e-3
    for rule in BROKEN_TREE_RULES:
        assert run(rule) < 1e-6, rule.name


# --- the command line -------------------------------------------------------------------------------

def test_cli_generates_with_a_tree_and_reports_it(capsys):
    import json

    from specdec_core.pairs import PairUnavailable, load_pair
    from specdec_core.tools import cli
    try:
        load_pair("shakespeare", device="cpu")
    except PairUnavailable as err:
        pytest.skip(f"bundled pair unavailable: {err}")
    assert cli.main(["generate", "--prompt", "ROMEO:", "--tree", "2,2", "--max-new-tokens", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tree_shape"] == [2, 2] and out["nodes"] >= len(out["rounds"])
    assert all(len(r["nodes"]) == len(r["parents"]) <= 6 for r in out["rounds"])
    plain = cli.main(["generate", "--prompt", "ROMEO:", "--plain", "--max-new-tokens", "8", "--json"])
    assert plain == 0 and json.loads(capsys.readouterr().out)["token_ids"] == out["token_ids"]  # greedy: the same
    assert cli.main(["generate", "--prompt", "ROMEO:", "--tree", "9,9", "--max-new-tokens", "8"]) == 2
    assert "shape" in capsys.readouterr().err
