"""Identical Outputs' folded lab: with sampling, K samples of the next one or two tokens from each decoder,
tested against the target's exact distribution (Pearson's chi-square); then the broken samplers of
specdec_core.broken, the lossy rules peers ship and the exact-match rule, and the tree rules, through the
same test. Every run is behind its button."""
import math
from dataclasses import dataclass

import plotly.graph_objects as go
import streamlit as st

from specdec_core import GenerationRequest, lossy
from specdec_core.analysis import fidelity, lab, rule_costs
from specdec_core.analysis.stats import Pacing
from specdec_core.broken import BROKEN_RULES, BROKEN_TREE_FRESH_DRAW, BROKEN_TREE_RULES, BROKEN_TREE_SAME_P
from specdec_core.exact_match import EXACT_MATCH
from specdec_core.sampling_config import SamplingConfig
from specdec_core.speculative import EXACT
from specdec_core.tree import EXACT_TREE
from ui.server import admission, demo, models, operator
from ui.state import settings
from ui.widgets import charts, chips, layout, tables

LAB_K = lab.DOCUMENTED_K  # the documented sample size: the exact rule passes and every broken rule fails here
LAB_SEED = lab.DOCUMENTED_SEED  # with this seed on the bundled pair (tests/core/test_lab.py checks it)
LAB_TEMPERATURE = 1.0  # used when the sidebar is greedy
DEFAULT_PRESET = next((name for name, text in settings.PRESETS.items() if text == settings.DEFAULTS.prompt), "default")
RULES = {rule.name: rule for rule in (EXACT, *BROKEN_RULES, EXACT_MATCH, *lossy.RULES.values())}
EXACT_NAMES = (EXACT.name, EXACT_MATCH.name)  # rules whose output is p (drawn in the "speculative" colour)
SHIPPED = (EXACT, EXACT_MATCH, *lossy.RULES.values())  # the exact rule beside the rules peers ship or shipped
SHIPPED_PROMPTS, SHIPPED_TOKENS, SHIPPED_REPEATS = 3, 32, 3  # the measured economics: about half a minute
# Peers, checked against their code and merged pull requests:
# - vLLM added Medusa's typical acceptance as TypicalAcceptanceSampler (vllm-project/vllm PR #5131, June 2024)
#   and removed it with the whole V0 speculative-decoding engine (PR #21152, "Remove V0 Spec Decode workers",
#   merged July 2025). What ships today is V1's vllm/v1/sample/rejection_sampler.py: exact rejection sampling
#   (greedy and random, PR #13933), no typical acceptance.
# - TensorRT-LLM's relaxed acceptance (MTP for DeepSeek-R1, thinking phase only: relaxed_topk, relaxed_delta in
#   MTPDecodingConfig; docs/source/blogs/tech_blog/blog2_DeepSeek_R1_MTP_Implementation_and_Optimization.md)
#   keeps a draft that is among the top-K candidates AND within delta of the top probability. The core's
#   specdec_core.lossy.RELAXED is the looser either-or form, and the page says so.
SHIPPED_WHY = {
    lossy.TYPICAL.name: "Typical acceptance (Medusa; vLLM offered it until its V0 engine was removed in July 2025): "
                        f"keep the draft when the target finds it plausible, "
                        f"p(x) > min({lossy.TYPICAL_EPSILON:g}, {lossy.TYPICAL_DELTA:g} · e^(−H(p))) with H the entropy "
                        "of the target's row, whatever q was; after a rejection draw from p with every token under that "
                        "threshold removed, as Medusa's code does. It never looks at "
                        "q, so an unlikely draft is always refused and a plausible one always kept.",
    lossy.RELAXED.name: f"Relaxed acceptance (after TensorRT-LLM's, for multi-token prediction): keep the draft when it is among "
                        f"the target's top {lossy.RELAXED_TOP_K} tokens or within {lossy.RELAXED_DELTA:g} of its top "
                        "probability, otherwise apply the exact rule. TensorRT-LLM asks for both (top-K *and* within δ), "
                        "and only while a reasoning model is thinking; this either-or version is looser, so it "
                        "shows the effect more plainly. It keeps every draft the exact rule keeps, and "
                        "more: the target's second choice comes out as often as the drafter proposes it. It works in "
                        "greedy mode too (ranking the target's logits), where it emits tokens greedy decoding never would.",
    EXACT_MATCH.name: "Exact match: draw the target's own token y ~ p and keep the draft only if y = x. Obviously "
                      "correct, and it is: the output is p. But a draft survives with probability p(x) instead of "
                      "min(1, p(x)/q(x)), so acceptance falls from Σ min(p, q) to Σ p·q.",
}
BROKEN_WHY = {
    BROKEN_RULES[0].name: "After a rejection it draws from p itself. The accept step has already given every "
                          "token min(p, q) of its probability; drawing from p on top counts those tokens twice, so "
                          "tokens the drafter over-rates come out too often.",
    BROKEN_RULES[1].name: "It keeps a draft only when p(x) ≥ q(x), instead of with probability min(1, p(x)/q(x)). A "
                          "token the drafter over-rates is then never accepted as a draft, so it comes out too rarely.",
    BROKEN_RULES[2].name: "The drafts are drawn at the sidebar's temperature, but the test judges them with q computed at "
                          "twice that temperature. The ratio p/q no longer matches how the drafts were really drawn.",
}
TREE_WHY = {
    BROKEN_TREE_SAME_P.name: "After one child is rejected, the next sibling is judged against the very same p "
                             "and q. But the first test already spent min(p, q) of p's mass; the sibling must face "
                             "what is left, norm(max(0, p − q)). Judged against the full p, the drafted tokens win "
                             "too often.",
    BROKEN_TREE_FRESH_DRAW.name: "Each branch draws its own target token y ~ p and keeps its child when y equals "
                                 "it. Every branch is one more chance to match, so drafted tokens come out more "
                                 "often than p says. One shared draw y ~ p, followed wherever a child equals y, "
                                 "is exact.",
}


def colors() -> dict:
    """The bars' colours in the viewer's theme, read on each run (a module constant would keep the first
    viewer's theme for the whole server process)."""
    return {"exact": charts.MUTED, "speculative": chips.KINDS["accepted"].color, "broken": chips.KINDS["rejected"].color,
            "plain": chips.KINDS["target"].color}


@dataclass(frozen=True)
class LabChoice:
    """What the first fold's controls chose: every fold tests this prefix, with these K and sampling."""
    pair: object
    s: object  # the sidebar's settings (γ and seed)
    prefix: list[int]
    n_tokens: int
    k: int
    rule_name: str
    sampling: SamplingConfig
    sampling_text: str  # how the lab samples, in words
    signature: tuple  # the stored results' key

    @property
    def every_rule_signature(self) -> tuple:
        """The key of a fold that runs every rule: the rule picked in the first fold does not matter."""
        return self.signature[:4] + self.signature[5:]


def show(pair, ids: list[int], s) -> None:
    """The four folded sections, in order; the prefix, K and rule chosen in the first serve them all."""
    bar_colors = colors()
    with st.expander("Sampling: the same distribution, tested (a chi-square lab)"):
        choice = _choose(pair, ids, s)
        _sample_with_one_rule(choice, bar_colors)
    with st.expander("Break the sampler: three real bugs fail the same test"):
        _break_the_sampler(choice, bar_colors)
    with st.expander("Lossy on purpose, and exact but wasteful: the rules peers ship"):
        _shipped_rules(choice)
    with st.expander("Token trees: the same test, two tokens deep"):
        _tree_rules(choice)


def _choose(pair, ids: list[int], s) -> LabChoice:
    """The lab's explanation and its controls (prefix, tokens tested, K, rule), with the documented run beside them."""
    sampling = s.sampling if not s.greedy else SamplingConfig(LAB_TEMPERATURE)
    lab_sampling_text = (f"the sidebar settings: {s.describe_sampling()}" if not s.greedy
                         else f"temperature {LAB_TEMPERATURE:g} (the sidebar is greedy)")
    st.markdown(
        "Fix a prefix. Its next token (or next two) has an exact distribution under the target, which one target "
        "pass per first token computes. Draw K samples with speculative decoding and K with plain sampling, and "
        "ask Pearson's chi-square test whether each set of counts could have come from that distribution. Outcomes "
        f"expected fewer than {lab.MIN_EXPECTED} times are pooled into *other* cells, as the test requires. "
        f"The lab samples with {lab_sampling_text}.")
    st.info("**Try this:** press **Draw samples** with the exact rule, then pick a broken rule and press it "
            "again: watch the speculative bars leave the exact ones and the p-value collapse.",
            icon=":material/lightbulb:")
    # How the samples are drawn (a caption: this section is already an expander)
    st.caption(
        "Each speculative sample is one generation with its own seed (seed, seed + 1, …), replayed from "
        "distributions computed once per distinct context: the same `verify` function and the same rule as "
        "`speculative_generate`, drawing from the same random generator in the same order. A sample keeps the "
        "first one or two tokens of a generation one token longer, so that the last kept token was still a "
        "draft the rule had to judge. The core's tests check that the replay gives the very tokens "
        "`speculative_generate` gives for the same seed.")

    c1, c2 = st.columns([3, 2])
    st.session_state.setdefault("id_prefix_len", min(lab.DOCUMENTED_PREFIX_TOKENS or len(ids), len(ids)))
    st.session_state["id_prefix_len"] = min(max(1, st.session_state["id_prefix_len"]), len(ids))
    if len(ids) > 1:
        cut = c1.slider("Prefix: the first n tokens of the prompt", 1, len(ids), key="id_prefix_len")
    else:
        cut = 1
    prefix = ids[:cut]
    c1.html(chips.provenance_html(pair.tokenizer, prefix, [], []))
    n_tokens = c2.radio("Test the next", (1, 2), format_func=lambda n: f"{n} token{'s' * (n > 1)}", horizontal=True,
                        index=lab.DOCUMENTED_N_TOKENS - 1, key="id_tokens")
    max_k = max(lab.MIN_K, min(lab.MAX_K, operator.rules().max_lab_samples))  # the operator's bound on one request
    st.session_state["id_k"] = min(st.session_state.get("id_k", LAB_K), max_k)
    k = c2.number_input(f"K samples per decoder (≤ {max_k})", lab.MIN_K, max_k, step=500, key="id_k")
    rule_name = st.selectbox("Acceptance rule", list(RULES), key="id_rule",
                             help="The exact rule of the paper, one of three broken rules (specdec_core.broken), "
                                  "the exact-match rule, or a rule that is lossy on purpose (specdec_core.lossy).")
    documented_prefix = ("the whole prompt" if lab.DOCUMENTED_PREFIX_TOKENS is None
                         else f"the prompt's first {lab.DOCUMENTED_PREFIX_TOKENS} tokens")
    st.caption(f"Documented sample size: **K = {LAB_K}** (the bound here is {max_k}). The page's defaults are the "
               f"documented run: on the bundled pair with the default settings (the *{DEFAULT_PRESET}* prompt, "
               f"temperature {settings.DEFAULTS.temperature:g}, γ = {settings.DEFAULTS.gamma}, seed {LAB_SEED}), "
               f"{documented_prefix} as prefix and the next {'token' if lab.DOCUMENTED_N_TOKENS == 1 else 'two tokens'} "
               f"tested at K = {LAB_K}, "
               f"the exact rule passes and each broken rule fails; the test rejects when p < {lab.LEVEL:g}. "
               f"Now: γ = {s.gamma}, seed {s.seed} (sidebar).")
    lab_signature = (models.pair_key(pair), tuple(prefix), n_tokens, int(k), rule_name, sampling, s.gamma, s.seed)
    return LabChoice(pair, s, prefix, n_tokens, int(k), rule_name, sampling, lab_sampling_text, lab_signature)


def _sample_with_one_rule(c: LabChoice, bar_colors: dict) -> None:
    """The first fold's button: K samples from each decoder under the chosen rule, then the test's result."""
    demo.run(f"Draw {c.k} samples from each decoder", key="id_sample", state="id_result", signature=c.signature,
             what="your samples", failure="Could not run the lab", type="primary", icon=":material/casino:",
             work=lambda progress: {"result": lab.run_lab(c.pair.target, c.pair.draft, c.prefix, n_tokens=c.n_tokens,
                                                          k=c.k, gamma=c.s.gamma, sampling=c.sampling,
                                                          rule=RULES[c.rule_name], seed=c.s.seed,
                                                          pacing=Pacing(progress=progress))})
    stored = demo.latest("id_result", c.signature, stale="note", again="Draw samples")
    if stored:
        _show_result(stored["result"], "id_hist", c.pair.tokenizer, bar_colors)
    else:
        st.caption("Press **Draw samples** to run the test.")


def _test_metric(col, label: str, t: lab.ChiSquare) -> None:
    """One decoder's p-value, with its verdict."""
    col.metric(label, f"{t.pvalue:.3g}", "consistent with p" if t.passes else f"not p (below {lab.LEVEL:g})",
               delta_color="green" if t.passes else "red", delta_arrow="off",
               help=f"χ² = {t.statistic:.1f} with {t.df} degrees of freedom.")


def _cell_label(tokenizer, key: tuple) -> str:
    """A test cell's outcome in words (pooled positions as "…")."""
    parts = ["…" if t == lab.OTHER else charts.token_label(tokenizer.decode([t])) for t in key]
    return " ".join(parts) if any(t != lab.OTHER for t in key) else "other"


def _share(counts, top: list[int], rest: list[int], k: int) -> list[float]:
    """Each top cell's share of the k samples, then the rest pooled (when there is a rest)."""
    return [counts[i] / k for i in top] + ([sum(counts[i] for i in rest) / k] if rest else [])


def _show_result(res: lab.LabResult, key: str, tokenizer, bar_colors: dict) -> None:
    """The lab's verdicts as metrics, and the counts against the exact distribution as bars."""
    spec_t, plain_t = res.speculative_test, res.plain_test
    m = st.columns(4)
    _test_metric(m[0], f"Speculative ({res.rule}): p-value", spec_t)
    if plain_t is not None:
        _test_metric(m[1], "Plain sampling: p-value", plain_t)
    m[2].metric("Cells in the test", len(res.cells.keys))
    m[3].metric("Time", f"{res.seconds:.1f} s", help=f"{res.passes} forward passes, one per distinct context.")
    if spec_t.df == 0:
        st.warning(f"Nothing to test here: no outcome is expected {lab.MIN_EXPECTED} times in {res.k} samples, so "
                   "every sample falls in one pooled cell. The target is too unsure after this prefix; raise K or "
                   "pick another prefix.", icon=":material/blur_on:")
    if spec_t.impossible:
        st.error(f"{spec_t.impossible} speculative samples are outcomes the target gives probability zero.")
    top = res.top_cells(12)
    rest = [i for i in range(len(res.cells.keys)) if i not in top]
    labels = [_cell_label(tokenizer, res.cells.keys[i]) for i in top] + (["all other cells"] if rest else [])

    fig = go.Figure()
    fig.add_bar(x=labels, y=[res.cells.probs[i] for i in top] + ([sum(res.cells.probs[i] for i in rest)] if rest else []),
                name="exact p", marker_color=bar_colors["exact"])
    broken = res.rule not in EXACT_NAMES
    fig.add_bar(x=labels, y=_share(res.speculative, top, rest, res.k), name=f"speculative ({res.rule})",
                marker_color=bar_colors["broken" if broken else "speculative"])
    if res.plain is not None:
        fig.add_bar(x=labels, y=_share(res.plain, top, rest, res.k), name="plain sampling", marker_color=bar_colors["plain"])
    fig.update_layout(barmode="group", title=f"Next {res.n_tokens} token{'s' * (res.n_tokens > 1)}: frequency in "
                      f"{res.k} samples against the exact probability", yaxis_title="share of samples",
                      height=400, margin=dict(t=40, b=8), legend=dict(orientation="h", y=-0.35),
                      xaxis=dict(type="category"))
    st.plotly_chart(fig, key=key)


def _judge_broken_rules(c: LabChoice, progress) -> dict:
    """The exact rule and the three broken ones through the same test, one row each."""
    judged = rule_costs.judge_rules(c.pair.target, c.pair.draft, c.prefix, [EXACT, *BROKEN_RULES], n_tokens=c.n_tokens,
                                    k=c.k, sampling=c.sampling, seed=c.s.seed, gamma=c.s.gamma,
                                    pacing=Pacing(progress=progress))
    return {"rows": [{"rule": name, "p-value": v.test.pvalue, "χ²": round(v.test.statistic, 1), "df": v.test.df,
                      "verdict": "passes" if v.test.passes else "FAILS"} for name, v in judged.verdicts.items()]}


def _break_the_sampler(c: LabChoice, bar_colors: dict) -> None:
    """The second fold: three real bugs, each failing the chi-square test, beside the exact rule passing it."""
    st.markdown("Three mistakes that are easy to make when implementing the rule. Each lives in the core next to "
                "the exact rule (`specdec_core.broken`), is used only here and in the tests, and produces fluent text: "
                "nothing looks wrong until you count.")
    for rule in BROKEN_RULES:
        st.markdown(f"- **{rule.name.removeprefix('broken: ')}** — {BROKEN_WHY[rule.name]}")
    break_label = f"Run the exact rule and all three broken ones (K = {c.k} each)"
    break_signature = c.every_rule_signature
    demo.run(break_label, key="id_break", state="id_break_result", signature=break_signature,
             work=lambda progress: _judge_broken_rules(c, progress),
             what="your four tests", failure="Could not run the lab", icon=":material/bug_report:")
    broken_stored = demo.latest("id_break_result", break_signature, stale="note",
                                again="Run the exact rule and all three broken ones")
    if broken_stored:
        rows = broken_stored["rows"]
        st.dataframe([{**r, "p-value": f"{r['p-value']:.3g}"} for r in rows], hide_index=True, key="id_break_table")
        floor = 1e-300
        fig = go.Figure(go.Bar(
            x=[r["rule"].removeprefix("broken: ") for r in rows], y=[max(r["p-value"], floor) for r in rows],
            marker_color=[bar_colors["speculative"] if r["rule"] == EXACT.name else bar_colors["broken"] for r in rows],
            text=[f"{r['p-value']:.2g}" for r in rows], textposition="outside"))
        fig.add_hline(y=lab.LEVEL, line_dash="dash", line_color=charts.INK, annotation_text=f"reject below {lab.LEVEL:g}")
        fig.update_layout(title="Chi-square p-value per rule (log scale)", yaxis_type="log", height=360,
                          margin=dict(t=40, b=8), yaxis_title="p-value")
        st.plotly_chart(fig, key="id_break_chart")
        failed = sum(1 for r in rows if r["verdict"] == "FAILS" and r["rule"] != EXACT.name)
        st.markdown(f"{layout.measured_badge()} {failed} of {len(rows) - 1} broken rules fail the test at K = "
                    f"{broken_stored['signature'][3]}. A p-value can never prove a sampler exact, only fail to find a "
                    "difference; the proof is the algebra min(p, q) + max(0, p − q) = p. What the broken rules show is "
                    "that the test is strong enough to find the mistakes people actually make.")
        if any(math.isclose(r["p-value"], 0.0) for r in rows):
            st.caption("A p-value shown as 0 is below the smallest number a float can hold.")
    else:
        st.caption("Press the button to run all four rules on the same prefix and samples.")


def _test_and_time_shipped(c: LabChoice, held_out, progress) -> dict:
    """The chi-square verdict (and its power) of each rule at this prefix and K, then its economics."""
    judged = rule_costs.judge_rules(c.pair.target, c.pair.draft, c.prefix, list(SHIPPED), n_tokens=c.n_tokens, k=c.k,
                                    sampling=c.sampling, seed=c.s.seed, gamma=c.s.gamma, with_power=True,
                                    pacing=admission.pacing("your rule tests", lambda f, text: progress(0.4 * f, text)))
    economics = rule_costs.rule_economics(
        c.pair.target, c.pair.draft, list(SHIPPED), [ids_ for _, ids_ in held_out],
        GenerationRequest(max_new_tokens=SHIPPED_TOKENS, sampling=c.sampling, seed=c.s.seed),
        gamma=c.s.gamma, repeats=SHIPPED_REPEATS, pacing=admission.pacing(
            "your rule measurements", lambda f, text: progress(0.4 + 0.6 * f, f"Timing the rules: {text}")))
    verdicts = judged.verdicts
    return {"rows": [{"rule": e["rule"], "test": verdicts[e["rule"]].test, "power": verdicts[e["rule"]].power,
                      **e} for e in economics], "figures": judged.acceptance}


def shipped_reading(rows: list[dict], figures: dict) -> str:
    """What this run of the shipped-rules table shows, read from its verdicts and from β and Σ p·q at the prefix,
    so that the sentence under the table never claims a verdict or a share the table does not show."""
    def names(some: list[dict]) -> str:
        return " and ".join(f"*{r['rule'].split(':')[0]}*" for r in some)  # "exact match: draw y ~ p, …" → "exact match"
    lossy_rules = [r for r in rows if r["rule"] not in EXACT_NAMES]
    failed_exact = [r for r in rows if r["rule"] in EXACT_NAMES and not r["test"].passes]
    if failed_exact:
        said = (f"The test rejects {names(failed_exact)} this time although exact: at the test's level "
                f"({lab.LEVEL:g}) chance alone rejects an exact rule about once in {1 / lab.LEVEL:.0f} runs, so run it "
                "again.")
    else:
        said = "Both exact rules pass the test, as they should."
    share = figures["exact_match"] / figures["exact"] if figures["exact"] > 0 else 1.0
    how_many = "less than half" if share < 0.5 else "almost all" if share >= 0.9 else "fewer"
    # Σ p·q = Σ min(p, q)·max(p, q), so the share is at most the largest single probability in p or q.
    said += (f" The exact-match rule keeps {share:.0%} of the drafts the exact rule keeps here ({how_many}; the "
             "share can be near 1 only where p or q puts nearly all its probability on one token).")
    caught = [r for r in lossy_rules if not r["test"].passes]
    missed = [r for r in lossy_rules if r["test"].passes]
    if caught:
        said += f" The test catches {names(caught)}, lossy on purpose."
    if missed:
        said += (f" It does not catch {names(missed)} at this K: here the change to the distribution is too small "
                 "for K samples to show it reliably.")
    return said


def _shipped_rules(c: LabChoice) -> None:
    """The third fold: the rules peers ship (lossy on purpose, or exact but wasteful), tested and timed."""
    st.markdown("The bugs above are accidents. Some systems change the distribution on purpose, because they accept more "
                "drafts: more tokens per target pass, paid for in the output. Medusa's code offers typical acceptance "
                "(vLLM did too until July 2025; its current engine ships exact rejection sampling only) and TensorRT-LLM "
                "offers relaxed acceptance for DeepSeek-R1's thinking phase. And one rule that "
                "several implementations shipped is exact, and pays in acceptance instead. All of them live in the core "
                "(`specdec_core.lossy`, `specdec_core.exact_match`) and run through the same `verify`.")
    for rule in SHIPPED[1:]:
        st.markdown(f"- **{rule.name}** — {SHIPPED_WHY[rule.name]}")
    held_out = fidelity.held_out_prompts(c.pair.tokenizer, SHIPPED_PROMPTS)
    shipped_signature = c.every_rule_signature
    demo.run(f"Test and time the shipped rules (K = {c.k} each)", key="id_shipped", state="id_shipped_result",
             signature=shipped_signature, work=lambda progress: _test_and_time_shipped(c, held_out, progress),
             what="your rule tests", failure="Could not run the lab",
             slot=False, icon=":material/balance:",
             help=f"The chi-square test at this prefix and K for each rule, then {SHIPPED_PROMPTS} held-out prompts × "
                  f"{SHIPPED_TOKENS} tokens × {SHIPPED_REPEATS} interleaved repetitions against plain sampling.")
    shipped = demo.latest("id_shipped_result", shipped_signature, stale="note", again="Test and time the shipped rules")
    if shipped is None:
        st.caption("Press the button to test and time the exact rule, the exact-match rule and the two lossy rules.")
        return
    tables.show([{
        "rule": r["rule"], "verdict": "passes" if r["test"].passes else "FAILS", "χ² p-value": f"{r['test'].pvalue:.3g}",
        f"power at K = {shipped['signature'][3]}": "–" if r["power"] is None else f"{r['power']:.3f}",
        "acceptance rate (accepted ÷ drafted)": f"{r['acceptance']:.2f}",
        "tokens per target pass": f"{r['tokens_per_pass']:.2f}",
        "speedup vs plain sampling": r["speed"].text() if r["speed"] is not None else "–",
    } for r in shipped["rows"]], key="id_shipped_table")
    f = shipped["figures"]
    st.markdown(
        f"{layout.measured_badge()} At this prefix the exact rule keeps a draft with probability β = Σ min(p, q) = "
        f"**{f['exact']:.3f}**; the exact-match rule with Σ p·q = **{f['exact_match']:.3f}**. "
        f"{shipped_reading(shipped['rows'], f)} The power column is the chance that K samples catch a rule, computed "
        "from its exact output distribution at this prefix (for an exact rule it is the test's level). The lossy "
        "rules' gain is in the acceptance and "
        f"speedup columns ({SHIPPED_PROMPTS} held-out prompts, {SHIPPED_TOKENS} tokens each, {c.sampling_text}, "
        f"γ = {c.s.gamma}, median and range of {SHIPPED_REPEATS} interleaved repetitions). A lossy rule accepts more "
        "only where it keeps drafts the exact rule would refuse: typical acceptance also refuses unlikely drafts the "
        "exact rule keeps, so whether it gains depends on how the drafter guesses. The two figures above are not the "
        "same quantity as the table's acceptance rate: β is for the next token after this one prefix (the "
        "chance one judged draft passes; α is its expectation over the positions of a text), while accepted ÷ "
        "drafted pools whole rounds over the held-out prompts and counts the drafts after a rejection, which "
        "nobody judged, so it runs below α even for the exact rule.")
    if c.n_tokens != 1:
        st.caption("The power is computed for the next token only: set **Test the next** to 1 token to see it.")


def _judge_tree_rules(c: LabChoice, progress) -> dict:
    """The exact tree rule and the two naive ones through the same test, two tokens deep."""
    judged = rule_costs.judge_rules(c.pair.target, c.pair.draft, c.prefix, [EXACT_TREE, *BROKEN_TREE_RULES],
                                    n_tokens=lab.DOCUMENTED_TREE_N_TOKENS, k=c.k, sampling=c.sampling, seed=c.s.seed,
                                    shape=lab.DOCUMENTED_TREE_SHAPE, pacing=Pacing(progress=progress))
    return {"rows": [{"tree rule": name, "p-value": f"{v.test.pvalue:.3g}", "χ²": round(v.test.statistic, 1),
                      "df": v.test.df, "verdict": "passes" if v.test.passes else "FAILS"}
                     for name, v in judged.verdicts.items()]}


def _tree_rules(c: LabChoice) -> None:
    """The fourth fold: the tree rule and two naive ones, on the same prefix."""
    st.markdown(
        "A tree round drafts several children per node and verifies them all in one target pass (chapter "
        "*Beyond One Guess*). The exact rule tries the children in turn, and after each rejection replaces p by "
        "norm(max(0, p − q)) and removes the rejected token from q. A one-token test cannot tell a tree from a "
        "chain, so this one looks at the next **two** tokens, with the tree shape "
        f"{lab.DOCUMENTED_TREE_SHAPE} (children per depth).")
    for rule in BROKEN_TREE_RULES:
        st.markdown(f"- **{rule.name.removeprefix('broken: ')}** — {TREE_WHY[rule.name]}")
    st.caption(f"Documented: with the page's default prefix, K = {LAB_K} and seed {LAB_SEED}, the exact tree rule "
               "passes and both naive rules fail (tests/app/test_chapter_trees.py checks it).")
    demo.run(f"Test the tree rule and the two naive ones (K = {c.k} each)", key="id_tree", state="id_tree_result",
             signature=c.signature, work=lambda progress: _judge_tree_rules(c, progress), what="your tree tests",
             failure="Could not run the lab", icon=":material/account_tree:")
    tree_stored = demo.latest("id_tree_result", c.signature, stale="note", again="Test the tree rule")
    if tree_stored:
        tables.show(tree_stored["rows"], key="id_tree_table")
    else:
        st.caption("Press the button to test the tree rules on the same prefix.")
