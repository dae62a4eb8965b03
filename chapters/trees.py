"""Chapter: Beyond One Guess: Token Trees. A real round's tree of drafts, verified in one target pass,
drawn as a tree with p and q at every node (and in a table); then the tree against the chain at the
same depth, measured on this machine, with the cost of the wider pass that explains the result."""
import html

import plotly.graph_objects as go
import streamlit as st

from specdec_core import tree_generate
from specdec_core.analysis.trees import predicted_speedup, tree_vs_chain
from specdec_core.sampling import SamplingConfig
from specdec_core.tree_draft import tree_size
from ui.server import admission, measure, models
from ui.state import demo, settings, tree_settings
from ui.widgets import charts, layout, tables, tree_view

REPEATS = 3  # interleaved repetitions of the measurement
MEASURE_TOKENS = 48  # tokens per timed generation
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
layout.intro(
    "A chain of drafts dies at its first wrong token. A tree keeps a few alternatives at each depth, and "
    "the target checks every branch in the same single pass: each node attends only to the committed text "
    "and its own ancestors. One rule picks at most one child per node and stays exact. The price is a wider "
    "verification pass: cheap on a GPU waiting on memory, not free on a CPU (this page runs on the "
    f"{pair.device.upper()}).",
    "draw a round with the shape 1,1,1,1 (a chain), then 2,2,1,1: count how often the winning path leaves "
    "the first child. Then press **Measure** to see whether the extra branches pay here.")
for message in st.session_state.pop("tr_warnings", []):
    st.warning(message, icon=":material/tune:")

c1, c2, c3 = st.columns([3, 2, 2], vertical_alignment="bottom")
raw_shape = c1.text_input("Children per depth (the tree's shape)", key="tr_shape",
                          help=f"Comma-separated branching factors, e.g. 2,2,1,1. At most "
                               f"{tree_settings.MAX_NODES} nodes. Try: {' · '.join(PRESETS)}")
shape, shape_warnings = tree_settings.parse_shape(raw_shape)
for message in shape_warnings:
    c1.warning(message, icon=":material/tune:")
dynamic = c2.toggle("Best-first tree (a node budget)", key="tr_dynamic",
                    help="Grow the tree where the drafter is most confident, EAGLE-2 style, up to the budget; "
                         "the shape then only sets the depth.")
# A slider only while the toggle is on: a disabled one draws its label and numbers in grey, under 3:1 on a
# projector. The budget keeps its value while the toggle is off (a widget not drawn would lose it).
st.session_state["tr_budget"] = st.session_state["tr_budget"]
if dynamic:
    budget = c3.slider("Node budget", 1, tree_settings.MAX_NODES, key="tr_budget")
else:
    budget = st.session_state["tr_budget"]
    c3.caption("**Node budget:** off, the shape alone sets the tree. Turn on *Best-first tree* to set one.")
node_budget = budget if dynamic else None
wanted = {"tree": tree_settings.format_shape(shape), "budget": str(budget if dynamic else 0)}
if {k: st.query_params.get(k) for k in wanted} != wanted:
    st.query_params.update(wanted)
n_nodes = node_budget or tree_size(shape)
tree_text = (f"best-first, {node_budget} nodes, {len(shape)} deep" if dynamic
             else f"shape ({', '.join(map(str, shape))}), {n_nodes} nodes")


@admission.cached(max_entries=32, what="the tree rounds")
def generation(pair_id: str, prompt_ids: tuple[int, ...], shape: tuple[int, ...], node_budget: int | None,
               max_new: int, temperature: float, top_k: int, top_p: float, seed: int, _pair):
    """A short token-tree generation with full traces (the seed makes it reproducible)."""
    return tree_generate(_pair.target, _pair.draft, list(prompt_ids), shape=shape, max_new_tokens=max_new,
                         sampling=SamplingConfig(temperature, top_k or None, top_p if top_p < 1 else None),
                         seed=seed, node_budget=node_budget, on_round=admission.on_round)


# --- one real round ---------------------------------------------------------------------------------
st.subheader("One round, drawn as a tree")
try:
    with st.spinner("Drafting and verifying trees…", show_time=True):
        result = generation(models.pair_key(pair), tuple(ids), shape, node_budget, min(s.max_new_tokens, VIEW_TOKENS),
                            s.temperature, s.top_k, s.top_p, s.effective_seed, pair)
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
pick = st.slider("Round", 1, len(rounds), 1, key="tr_round") if len(rounds) > 1 else 1
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
st.caption("Children of a node are tried in the order they were drawn (top to bottom). A child is kept with "
           "chance min(1, p/q); after a rejection the next sibling faces norm(max(0, p − q)) with the rejected "
           "token taken out of q, and if every child fails the token comes from what is left of p. The winning "
           "path is the thick solid line and its nodes carry ★ / ✓; rejected nodes ✗, unchecked ·."
           + (" In greedy mode a child is kept exactly when it is the target's argmax." if s.greedy else ""))

# --- does it pay? ---------------------------------------------------------------------------------------
st.subheader("Does the tree pay? Tree against chain, measured")
st.markdown(
    f"The fair rival is the chain drafter with γ = {len(shape)}, the tree's depth: both draft the same number of "
    "levels, the tree just keeps more per level. More tokens per pass is the tree's gain; a pass over "
    f"{n_nodes + 1} positions instead of {len(shape) + 1} is its price.")
signature = (models.pair_key(pair), s.signature(), shape, node_budget)


def measure_trees(progress) -> dict:
    profile = measure.cost_profile(pair)  # the shared sweep of pass costs, before taking a slot
    window = pair.context_length - len(ids)
    out = tree_vs_chain(pair.target, pair.draft, s.request(ids, max(2, min(MEASURE_TOKENS, window))), shape,
                        node_budget, REPEATS, pacing=admission.pacing("the tree measurement", progress))
    return {"out": out, "profile": profile, "nodes": n_nodes, "depth": len(shape)}


demo.run(f"Measure: plain, chain (γ = {len(shape)}) and tree, {REPEATS} interleaved repetitions", key="tr_measure",
         state="tr_measured", signature=signature, work=measure_trees, what="the tree measurement",
         failure="Could not measure", slot=False, type="primary", icon=":material/timer:")
m = demo.latest("tr_measured", signature, stale="note", again="Measure")
if not m:
    st.caption("Press **Measure** to race the three on this machine.")
else:
    out, profile = m["out"], m["profile"]
    chain, tree = out["chain"], out["tree"]
    v_tree, v_chain = profile.v(int(round(tree["nodes_per_round"]))), profile.v(m["depth"])
    cols = st.columns(4)
    cols[0].metric("Tokens per target pass: tree", f"{tree['tokens_per_pass']:.2f}",
                   f"{tree['tokens_per_pass'] / chain['tokens_per_pass']:.2f}× the chain's", delta_arrow="off",
                   delta_color="off")
    cols[1].metric("Nodes per round", f"{tree['nodes_per_round']:.1f}", f"chain: {chain['nodes_per_round']:.1f}",
                   delta_arrow="off", delta_color="off")
    cols[2].metric(f"v({tree['nodes_per_round']:.0f}): a tree pass here", f"{v_tree:.2f} passes",
                   f"chain's pass: {v_chain:.2f}", delta_arrow="off", delta_color="off",
                   help="The time of one target pass over that many positions, in single-position passes "
                        "(this machine's measured sweep).")
    cols[3].metric("Wall clock: tree against chain", f"{tree['speedup'].median / chain['speedup'].median:.2f}×",
                   delta_arrow="off", delta_color="off")
    table = []
    c = profile.c
    for name, label in (("plain", "plain decoding"), ("chain", f"chain, γ = {m['depth']}"), ("tree", "tree")):
        row = out[name]
        v = 1.0 if name == "plain" else profile.v(int(round(row["nodes_per_round"])) if name == "tree" else m["depth"])
        table.append({
            "decoder": label, "tokens per target pass": round(row["tokens_per_pass"], 3),
            "nodes per round": round(row["nodes_per_round"], 1),
            "ms per token (median)": round(1e3 * row["s_per_token"].median, 2),
            "spread (low – high)": f"{1e3 * row['s_per_token'].low:.2f} – {1e3 * row['s_per_token'].high:.2f}",
            "speedup (measured)": round(row["speedup"].median, 2),
            "speedup (predicted, this machine's v)": 1.0 if name == "plain" else round(
                predicted_speedup(row["tokens_per_pass"], v, c, row["draft_passes_per_round"]), 2),
            "speedup (predicted, v = 1: an accelerator)": 1.0 if name == "plain" else round(
                predicted_speedup(row["tokens_per_pass"], 1.0, c, row["draft_passes_per_round"]), 2),
        })
    tables.show(table, key="tr_table")
    st.caption(f"{layout.measured_badge()} {out['repeats']} repetitions, interleaved (plain, chain, tree, then "
               "backwards), each figure their median with the lowest and highest beside it; the machine is shared, "
               f"so read the spread before the median. Prediction: tokens per pass / (v + c × draft passes per "
               f"round), with c = {c:.3f} and v from this machine's sweep of pass costs."
               + (" Greedy: all three produced the very same tokens." if out["identical"] else ""))
    ks = sorted(profile.verify_s)
    fig_v = go.Figure()
    fig_v.add_scatter(x=[k - 1 for k in ks], y=[profile.verify_s[k] / profile.target_s for k in ks],
                      mode="lines+markers", name="this machine: v(nodes)", line_color=charts.P_COLOR)
    fig_v.add_scatter(x=[k - 1 for k in ks], y=[1.0] * len(ks), mode="lines", name="ideal accelerator: v = 1",
                      line=dict(dash="dash", color=charts.MUTED))
    for x, label, symbol in ((m["depth"], "chain", "circle"), (tree["nodes_per_round"], "tree", "star")):
        fig_v.add_scatter(x=[x], y=[profile.v(int(round(x)))], mode="markers+text", text=[label],
                          textposition="top center", marker=dict(size=16, symbol=symbol, color=charts.INK),
                          showlegend=False)
    fig_v.update_layout(title="Cost of one verification pass over nodes + 1 positions, in single passes",
                        xaxis_title="draft tokens verified in one pass (nodes)", yaxis_title="v (single passes)",
                        height=340, margin=dict(t=40, b=8), legend=dict(orientation="h", y=-0.3))
    st.plotly_chart(fig_v, key="tr_cost")
    gain = tree["tokens_per_pass"] / chain["tokens_per_pass"]
    st.markdown(
        f"The tree gets **{gain:.2f}×** the chain's tokens per pass, but each of its passes costs **{v_tree:.2f}** "
        f"single passes here against the chain's **{v_chain:.2f}**. A tree pays on a machine when its gain in "
        f"tokens per pass beats that ratio ({v_tree / v_chain:.2f} here). On a GPU a pass over a few dozen "
        "positions costs about the same as one (the weights are read once and the arithmetic units sit idle "
        "at one position), so the ratio is close to 1 and nearly any gain is a speedup: that is why SpecInfer, "
        "Medusa and EAGLE-2 use trees.")
