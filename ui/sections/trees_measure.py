"""Beyond One Guess → Go deeper: does the tree pay? Plain decoding, the chain of the same depth and the tree,
timed on this machine (behind a button), with the cost of the wider verification pass that explains the result."""
import plotly.graph_objects as go
import streamlit as st

from specdec_core.analysis.trees import predicted_speedup, tree_vs_chain
from ui.server import admission, demo, measure, models
from ui.widgets import charts, layout, tables

REPEATS = 3  # interleaved repetitions of the measurement
MEASURE_TOKENS = 48  # tokens per timed generation


def show(pair, s, ids, shape, node_budget, n_nodes) -> None:
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
            "Medusa (the next chapter) and EAGLE-2 (the best-first tree above) use trees.")
