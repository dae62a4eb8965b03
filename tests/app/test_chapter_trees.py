"""The token-tree chapter: a real round drawn as a tree with a table beside it, URL settings clamped,
and the measurement of tree against chain."""
import pytest
from helpers import chart, page

from specdec_core.tree_draft import tree_size
from ui.state import tree_settings

PAGE = "chapters/trees.py"


def table(at, column: str):
    """The page's dataframe that has this column (AppTest does not find dataframes by key)."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert found, f"no table with a {column!r} column"
    return found[0]


def test_round_is_drawn_as_a_tree_with_a_table():
    at = page(PAGE, max_new=12, temp=0)
    fig = chart(at, "tr_tree")
    nodes = table(at, "verdict")
    assert 0 < len(nodes) <= tree_size(tree_settings.DEFAULT_SHAPE)
    # The winning path is drawn thick and its nodes carry a mark, not only a colour.
    thick = [tr for tr in fig["data"] if tr.get("mode") == "lines" and tr["line"]["width"] > 3]
    accepted = [tr for tr in fig["data"] if "accepted" in tr.get("name", "")]
    n_path = sum(1 for v in nodes["verdict"] if "accepted" in v)
    assert len(thick) == n_path
    if n_path:
        assert all(text.startswith("✓") for text in accepted[0]["text"])
    # p and q at every node: in the hover data and in the table.
    hover = [tr for tr in fig["data"] if "customdata" in tr]
    assert sum(len(tr["customdata"]) for tr in hover) == len(nodes)
    assert {"q(x)", "p(x)", "verdict"} <= set(nodes.columns)
    assert at.query_params["tree"] == "2,2,1,1"


@pytest.mark.parametrize("raw, expected", [("9,9,9", "8"), ("2,x", "2,2,1,1"), ("0,2", "1,2")])
def test_url_shape_is_clamped_with_a_message(raw, expected):
    at = page(PAGE, max_new=8, temp=0, tree=raw)
    assert at.text_input(key="tr_shape").value == expected
    assert any("tree" in w.value.lower() or "branching" in w.value.lower() for w in at.warning)


def test_url_budget_is_clamped_and_drives_a_best_first_tree():
    at = page(PAGE, max_new=10, temp=0, budget=500)
    assert at.toggle(key="tr_dynamic").value is True
    assert at.slider(key="tr_budget").value == tree_settings.MAX_NODES
    assert any("budget" in w.value for w in at.warning)
    at.slider(key="tr_budget").set_value(5).run()
    assert not at.exception
    assert len(table(at, "verdict")) <= 5
    assert at.query_params["budget"] == "5"
    # Off, the budget is a caption in the page's text colour (a disabled slider's grey is under 3:1), and it
    # keeps its value for when it is switched on again.
    at.toggle(key="tr_dynamic").set_value(False).run()
    assert not at.exception and at.query_params["budget"] == "0"
    assert not [w for w in at.slider if w.key == "tr_budget"]
    assert any(c.value.startswith("**Node budget:** off") for c in at.caption)
    at.toggle(key="tr_dynamic").set_value(True).run()
    assert at.slider(key="tr_budget").value == 5


@pytest.mark.slow  # times this machine's passes, then three decoders three times
def test_measurement_compares_tree_and_chain():
    at = page(PAGE, max_new=8, temp=0, tree="2,2")
    at.button(key="tr_measure").click().run(timeout=600)
    assert not at.exception, at.exception
    rows = table(at, "decoder")
    assert list(rows["decoder"]) == ["plain decoding", "chain, γ = 2", "tree"]
    assert rows["tokens per target pass"][0] == 1.0
    assert rows["tokens per target pass"][2] > 0 and rows["nodes per round"][2] <= tree_size((2, 2))
    assert chart(at, "tr_cost")["data"]
    assert at.session_state["tr_measured"]["out"]["identical"]  # greedy: the same tokens, all three


@pytest.mark.slow
def test_documented_tree_lab_run_on_the_bundled_pair():
    """The exactness lab's tree section, as its caption documents it: default settings, the documented
    prefix, K and seed, the next two tokens: the exact tree rule passes and both naive rules fail."""
    from specdec_core.analysis import lab
    from specdec_core.broken import BROKEN_TREE_RULES
    from specdec_core.pairs import load_pair
    from specdec_core.tree import EXACT_TREE
    from ui.state import settings
    pair = load_pair("shakespeare")
    prefix = pair.tokenizer.encode(settings.DEFAULTS.prompt)[:lab.DOCUMENTED_PREFIX_TOKENS]
    dist = lab.Distributions(pair.target, pair.draft, prefix)
    tests = {rule.name: lab.run_lab(pair.target, pair.draft, prefix, n_tokens=lab.DOCUMENTED_TREE_N_TOKENS,
                                    k=lab.DOCUMENTED_K, sampling=settings.DEFAULTS.sampling, rule=rule,
                                    seed=lab.DOCUMENTED_SEED, with_plain=False, dist=dist,
                                    shape=lab.DOCUMENTED_TREE_SHAPE).speculative_test
             for rule in (EXACT_TREE, *BROKEN_TREE_RULES)}
    assert tests[EXACT_TREE.name].passes and tests[EXACT_TREE.name].df >= 2, tests[EXACT_TREE.name]
    for rule in BROKEN_TREE_RULES:
        assert not tests[rule.name].passes, f"{rule.name} passed: p = {tests[rule.name].pvalue:.3g}"
