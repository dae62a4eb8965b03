"""Chapter: Beyond One Guess: Token Trees. A real round's tree of drafts, verified in one target pass,
drawn as a tree with p and q at every node (and in a table); then the tree against the chain at the
same depth, measured on this machine, with the cost of the wider pass that explains the result."""
import html

import streamlit as st

from specdec_core import GenerationRequest, tree_generate
from specdec_core.tree_draft import tree_size
from ui.sections import trees_best_first, trees_measure, trees_rule
from ui.server import admission, models
from ui.state import settings, tree_settings
from ui.widgets import charts, layout, tables, tree_view

VIEW_TOKENS = 24  # tokens of the generation whose rounds are drawn
PRESETS = ["2,2,1,1", "2,2,2,2", "3,2,1", "4,1,1,1", "1,1,1,1"]

s = settings.current()
pair = models.require_pair()
ids = models.require_prompt_ids(pair)

# --- the chapter's settings: in the URL, clamped like the sidebar's ------------------------------------
if not st.session_state.get("tr_initialised"):
    shape0, w1 = tree_settings.parse_shape(st.query_params.get_all("tree"))
    budget0, w2 = tree_settings.parse_budget(st.query_params.get_all("budget"))
    st.session_state["tr_shape"] = tree_settings.format_shape(shape0)
    st.session_state["tr_dynamic"] = budget0 > 0
    st.session_state["tr_budget"] = budget0 or min(tree_size(shape0), tree_settings.MAX_NODES)
    st.session_state["tr_warnings"] = w1 + w2
    st.session_state["tr_initialised"] = True

st.header("Beyond One Guess: Token Trees")
layout.idea("a chain of drafts ends at its first rejected token; a *tree* keeps a few alternatives at "
            "each depth, and the target checks every branch in the same single pass, still exactly, with a rule "
            "that hands each later sibling only what p has left.")
for message in st.session_state.pop("tr_warnings", []):
    st.warning(message, icon=":material/tune:")

demo_box = layout.demo()  # the demo: the shape, then one real round drawn as a tree
c1, c2 = demo_box.columns([3, 4], vertical_alignment="bottom")
raw_shape = c1.text_input("Children per depth (the tree's shape)", key="tr_shape",
                          help=f"Comma-separated branching factors, e.g. 2,2,1,1. At most "
                               f"{tree_settings.MAX_NODES} nodes. Try: {' · '.join(PRESETS)}")
shape, shape_warnings = tree_settings.parse_shape(raw_shape)
for message in shape_warnings:
    c1.warning(message, icon=":material/tune:")
# The best-first toggle and its budget are drawn under "Go deeper" below; the tree reads them first. The budget
# keeps its value while the toggle is off (a widget not drawn would lose it).
dynamic = bool(st.session_state.get("tr_dynamic"))
st.session_state["tr_budget"] = st.session_state["tr_budget"]
budget = st.session_state["tr_budget"]
node_budget = budget if dynamic else None
wanted = {"tree": tree_settings.format_shape(shape), "budget": str(budget if dynamic else 0)}
if {k: st.query_params.get(k) for k in wanted} != wanted:
    st.query_params.update(wanted)
n_nodes = node_budget or tree_size(shape)
tree_text = (f"best-first, {node_budget} nodes, {len(shape)} deep" if dynamic
             else f"shape ({', '.join(map(str, shape))}), {n_nodes} nodes")


@admission.cached(max_entries=32, what="the tree rounds")
def generation(pair_id: str, request: GenerationRequest, shape: tuple[int, ...], node_budget: int | None, _pair):
    """A short token-tree generation with full traces (the request's seed makes it reproducible)."""
    return tree_generate(_pair.target, _pair.draft, request, shape=shape, node_budget=node_budget,
                         on_round=admission.on_round)


# --- one real round, drawn as a tree ------------------------------------------------------------------
with demo_box:
    try:
        with st.spinner("Drafting and verifying trees…", show_time=True):
            result = generation(models.pair_key(pair), s.request(ids, min(s.max_new_tokens, VIEW_TOKENS), "model"), shape,
                                node_budget, pair)
    except ValueError as err:
        st.error(f"Could not generate: {err}")
        st.stop()
    rounds = [r for r in result.rounds if r.nodes]
    if not rounds:
        st.info("This generation is too short to draft a tree: ask for more tokens in the sidebar.")
        st.stop()
    st.caption(f"Pair **{pair.name}** · {tree_text} · {s.describe_sampling()} · seed {s.seed} · "
               f"{len(result.tokens)} tokens in {result.target_passes} target passes "
               f"({result.tokens_per_pass:.2f} tokens per pass).")
    pick = c2.slider("Round", 1, len(rounds), 1, key="tr_round") if len(rounds) > 1 else 1
    r = rounds[pick - 1]
    t = r.tree
    words = [charts.token_label(pair.tokenizer.decode([x])) for x in t.nodes]  # escaped: plotly reads some HTML
    shown = [html.unescape(w) for w in words]  # a dataframe shows text as it is
    context_word = charts.token_label(pair.tokenizer.decode([ids[-1]] if r.position == 0 else [result.tokens[r.position - 1]]))
    depths = t.depth
    fig = tree_view.tree_figure(t, words, context_word, f"Round {pick}: {len(t.nodes)} nodes, {len(t.path)} accepted "
                                f"(thick path), then a {r.next_kind} token", len(shape))
    MARK = tree_view.MARK
    left, right = st.columns([3, 2])
    left.plotly_chart(fig, key="tr_tree")
    rows = [{"node": i + 1, "depth": depths[i], "parent": str(t.parents[i] + 1) if t.parents[i] >= 0 else "context",
             "token": shown[i], "q(x)": round(t.q_node[i], 4), "p(x)": round(t.p_node[i], 4),
             "accept chance": None if t.accept_prob[i] is None else round(t.accept_prob[i], 4),
             "u": None if t.uniforms[i] is None else round(t.uniforms[i], 4),
             "verdict": f"{MARK[t.verdict(i)][0]} {t.verdict(i)}"} for i in range(len(t.nodes))]
    with right:
        tables.show(rows, key="tr_nodes", height=min(38 * (len(rows) + 1), 520))
    next_word = charts.token_label(pair.tokenizer.decode([r.next_token]))
    right.markdown(f"Emitted: {' '.join(words[i] for i in t.path) or '(no draft)'} then **{next_word}** "
                   f"({r.next_kind}). One target pass scored all {len(t.nodes) + 1} positions.")
layout.try_this("draw a round with the shape 1,1,1,1 (a chain), then 2,2,1,1: count how often the winning path "
                "leaves the first child.")

# --- go deeper -----------------------------------------------------------------------------------------
with layout.deeper("the rule that keeps a tree exact"):
    trees_rule.show(s.greedy)
with layout.deeper("a best-first tree, grown where the drafter is confident (a node budget)"):
    trees_best_first.show()
with layout.deeper("does the tree pay? Tree against chain, measured"):
    trees_measure.show(pair, s, ids, shape, node_budget, n_nodes)
