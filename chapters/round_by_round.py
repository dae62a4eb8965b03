"""Chapter: A Round, Token by Token. Real rounds of speculative decoding on the sidebar prompt, shown
step by step from the core's trace: drafts and q, one target pass and p, each verdict, then the
corrective token (from the residual) or the bonus token."""
import plotly.graph_objects as go
import streamlit as st
import torch

from specdec_core import drafts_frame, rounds_frame, speculative, speculative_generate
from specdec_core.policies import STOP_CONFIDENCE, STOP_GAMMA, STOP_IN_WORDS, make_policy
from specdec_core.request import GenerationRequest
from ui.content import alpha_estimate
from ui.sections import round_distributions, round_drafting, round_rule
from ui.server import admission, measure, models
from ui.state import settings
from ui.widgets import charts, chips, layout, stepper, tables
from ui.widgets.stepper import Cursor

s = settings.current()
pair = models.require_pair()
ids = models.require_prompt_ids(pair)



@admission.cached(max_entries=32, what="these rounds")
def generation(pair_id: str, request: GenerationRequest, policy_args: tuple, _pair, _policy, drafter: str = "draft"):
    """A whole speculative generation of the request with full traces (its seed makes it reproducible). `_policy` is
    the one `policy_args` names, planning with this machine's costs (fixed per server process); `drafter`
    is "draft" or a key of the pair's self_drafters."""
    d = _pair.self_drafters[drafter] if drafter in _pair.self_drafters else _pair.draft
    return speculative_generate(_pair.target, d, request, gamma=_policy, trace=True, on_round=admission.on_round)


st.header("A Round, Token by Token")
# p and q named as in Leviathan et al. 2022 (§2.3: p the target's distribution, q the approximation's) and Chen
# et al. 2023 (Algorithm 2, where q is the target's and p the drafter's: the opposite letters).
layout.idea("with p the target's next-token probabilities and q the drafter's, the target keeps each draft x with "
            "probability min(1, p(x)/q(x)) and, at the first rejection, draws from what p has left over, so every "
            "token has exactly the target's distribution.")


# --- a worked example: two tokens, computed by the sampler's own functions --------------------------
EXAMPLE_P, EXAMPLE_Q = (0.6, 0.4), (0.3, 0.7)  # the worked example's two-token distributions (target, drafter)


def worked_example() -> None:
    p_t, q_t = torch.tensor(EXAMPLE_P, dtype=torch.float64), torch.tensor(EXAMPLE_Q, dtype=torch.float64)
    accept = speculative.acceptance_probability(p_t, q_t).tolist()  # min(1, p/q) per token
    residual = speculative.residual_distribution(p_t, q_t).tolist()  # norm(max(0, p − q))
    p, q = p_t.tolist(), q_t.tolist()
    st.markdown(
        f"**By hand.** Tokens A and B: target p = ({p[0]:g}, {p[1]:g}), drafter q = ({q[0]:g}, {q[1]:g}). "
        f"Drafted B is kept with min(1, {p[1]:g}/{q[1]:g}) = **{accept[1]:.2f}**, drafted A with "
        f"min(1, {p[0]:g}/{q[0]:g}) = **{accept[0]:g}**. After a rejection, draw from norm(max(0, p − q)), p's "
        f"excess over q rescaled to sum to 1: **({residual[0]:g}, {residual[1]:g})**, so A, never the rejected B.")


worked_example()
# The drafter and the draft-length policy are set in "Go deeper" below; the stepper reads them first.
which = st.session_state.get("rr_drafter", "draft")
if which != "draft" and which not in pair.self_drafters:
    which = "draft"
chosen = s.for_drafter(pair, which)  # the adaptive default is the policy measured best for this drafter
try:
    with st.spinner("Generating the rounds…", show_time=True):
        result = generation(models.pair_key(pair), s.request(ids, eos_token_id="model"), chosen.policy_args, pair,
                            measure.planning_policy(pair, make_policy(*chosen.policy_args)), which)
except ValueError as err:
    st.error(f"Could not generate: {err}")
    st.stop()
rounds = result.rounds
signature = (models.pair_key(pair), s.signature(), which)
if st.session_state.get("rr_signature") != signature:
    st.session_state["rr_signature"] = signature
    st.session_state["rr_cursor"] = Cursor()



def _move(how) -> None:
    st.session_state["rr_cursor"] = how(rounds, st.session_state["rr_cursor"])


def _reset() -> None:
    st.session_state["rr_cursor"] = Cursor()


def _text(tokens) -> str:
    return "".join(pair.tokenizer.decode([t]) for t in tokens).replace("\n", "↵")


PHASE_TEXT = {
    "draft": "**1 · Draft.** The drafter runs {n} cheap passes, sampling each x_i from its own q_i.",
    "verify": "**2 · Verify.** ONE target pass over the text's last token (the last one kept for good) and all {n} "
              "drafts gives p at {n1} positions. The ratio min(1, p(x)/q(x)) is now known for every draft.",
    "check": "**3 · Judge draft {i}.** {rule}",
    "emit_corrective": "**4 · Corrective token.** Draft {i} was rejected, so it and everything after it is "
                       "dropped. The replacement is drawn from the residual norm(max(0, p − q)) at that position.",
    "emit_bonus": "**4 · Bonus token.** Every draft passed, and the target pass already computed p at position "
                  "{n1}: one more token is drawn from it, for free.",
}


def rollback_view(r) -> None:
    """The KV caches around a rejection, from the trace: the target's rollback and the drafter's catch-up."""
    if r.target_cache is None:
        return
    before, after_pass, after = r.target_cache
    n, kept = len(r.draft_tokens), r.n_accepted
    following = rounds[r.index + 1] if r.index + 1 < len(rounds) else None
    rows = [{"cache": "target", "before the round": before, "after the verify pass": after_pass,
             "after the rollback": after,
             "what changed": f"+1 last token +{n} drafts in one pass, then the {n - kept} rejected draft(s) forgotten"}]
    if r.draft_cache is not None:
        d_before, d_kept, d_after = r.draft_cache
        catch = following.draft_cache if following is not None and following.draft_cache is not None else None
        rows.append({"cache": "drafter", "before the round": d_kept, "after the verify pass": d_after,
                     "after the rollback": catch[1] if catch else None,
                     "what changed": "fed the drafts as it drew them; at its next call it drops what the text no longer "
                                     "shares and feeds the corrective token (its catch-up)"})
    st.markdown("**The KV caches around the rejection.** Each model keeps a KV cache: the keys and values it has "
                "computed for every token it has read, so that a pass only works on new tokens (The Serial Tax). "
                "Rejected drafts must leave both caches:")
    tables.show(rows, key="rr_caches")
    st.caption(f"{layout.measured_badge()} Token counts read from this round's trace. The target's cache never "
               "holds the corrective token: it is the text's last token, fed by the next verify pass. The "
               "drafter's rollback happens at its next call (the next round's first pass), which also feeds the "
               "corrective token; a drafter with no cache (one that copies its drafts from the text so far) has "
               "nothing to roll back.")


@st.fragment
def round_view() -> None:
    layout.run_marker()  # the test drivers wait on it (tests/serve.py)
    cur: Cursor = st.session_state["rr_cursor"]
    r = rounds[cur.round]
    n = len(r.draft_tokens)
    name, i = stepper.phase(r, cur.step)
    shown = stepper.revealed(r, cur.step)
    verified = name != "draft"

    b = st.columns([1, 1, 1, 3], vertical_alignment="center")
    b[0].button("Next step", key="rr_next", icon=":material/skip_next:", type="primary",
                on_click=_move, args=(stepper.next_step,), disabled=stepper.finished(rounds, cur))
    b[1].button("Run round", key="rr_round", icon=":material/fast_forward:", on_click=_move,
                args=(stepper.run_round,), disabled=stepper.finished(rounds, cur))
    b[2].button("Reset", key="rr_reset", icon=":material/restart_alt:", on_click=_reset)
    b[3].markdown(f"**Round {cur.round + 1} of {len(rounds)}** · step {cur.step + 1} of {stepper.steps_in(r)}"
                  + (" · generation complete" if stepper.finished(rounds, cur) else ""))
    # A round that drafted its whole γ needs no reason; one that stopped early says why.
    why = "" if r.draft_stop == STOP_GAMMA else (
        f" · drafting stopped because {STOP_IN_WORDS.get(r.draft_stop, r.draft_stop)}"
        + (f" (after draft {n}, the drafter's {'margin' if s.policy_signal == 'margin' else 'top probability'}"
           f" for a next draft was under {s.policy_threshold:g})"
           if r.draft_stop == STOP_CONFIDENCE and chosen.policy in ("confidence", "hybrid") else ""))
    st.markdown(f"This round's γ: **{r.gamma}** · drafted **{n}**{why}.")

    # What happens at this step, in words.
    if name == "check":
        if s.greedy:
            verdict = "accepted" if i < r.n_accepted else "rejected"
            rule = (f"Greedy: the draft is kept only if it is the target's top token. It is "
                    f"{'' if verdict == 'accepted' else 'not '}the target's top token, so it is **{verdict}**.")
        else:
            u, a = r.uniforms[i], r.accept_prob[i]
            rule = (f"Draw u uniformly in [0, 1) and keep the draft if u < min(1, p/q): u = {u:.3f}, "
                    f"min(1, p/q) = {a:.3f}, so it is "
                    f"**{'accepted' if u < a else 'rejected'}**.")
        st.markdown(PHASE_TEXT["check"].format(i=i + 1, rule=rule))
    elif name == "emit":
        st.markdown(PHASE_TEXT[f"emit_{r.next_kind}"].format(i=(r.rejected_at or 0) + 1, n1=n + 1))
    else:
        st.markdown(PHASE_TEXT[name].format(n=n, n1=n + 1))

    # The drafts of this round, coloured as far as the verdicts are revealed.
    texts = chips.token_strings(pair.tokenizer, r.draft_tokens)
    kinds = []
    for j in range(n):
        if j >= shown:
            kinds.append("unchecked" if name == "emit" else "drafted")
        else:
            kinds.append("accepted" if j < r.n_accepted else "rejected")
    if name == "emit":
        texts.append(pair.tokenizer.decode([r.next_token]))
        kinds.append(r.next_kind)
    chips.show(chips.chips(texts, kinds))

    # Per-position numbers, straight from the trace.
    frame = drafts_frame([r]).drop(columns=["round"])
    frame.insert(2, "text", [t.replace("\n", "↵") for t in chips.token_strings(pair.tokenizer, r.draft_tokens)])
    if not verified:
        frame[["p(x)", "accept_prob"]] = None
    frame.loc[frame["draft_pos"] > shown, ["u", "verdict"]] = None
    frame = frame.rename(columns={"draft_pos": "position", "accept_prob": "min(1, p/q)"})

    left = right = st.container()  # one above the other: side by side, the table hid columns on a projector
    with left:
        labels = [f"{j + 1} {charts.token_label(t)}" for j, t in enumerate(chips.token_strings(pair.tokenizer,
                                                                                              r.draft_tokens))]
        fig = go.Figure()
        fig.add_bar(x=labels, y=r.q_draft, name="q(x): drafter", marker_color=charts.Q_COLOR)
        if verified:
            fig.add_bar(x=labels, y=r.p_draft, name="p(x): target", marker_color=charts.P_COLOR)
            fig.add_scatter(x=labels, y=r.accept_prob, mode="markers", name="min(1, p/q)",
                            marker=dict(symbol="line-ew", size=26, line_width=3, color=charts.INK))
        if r.uniforms is not None and shown:
            fig.add_scatter(x=labels[:shown], y=r.uniforms[:shown], mode="markers", name="u (uniform draw)",
                            marker=dict(symbol="diamond", size=11, color=charts.RESIDUAL_COLOR))
        fig.update_layout(barmode="group", height=300, margin=dict(t=36, b=8), yaxis=dict(range=[0, 1.05]),
                          title=dict(text="the drafted tokens: q(x), p(x), min(1, p/q) and u", font_size=13),
                          legend=dict(orientation="h", y=-0.25), xaxis=dict(type="category"))
        st.plotly_chart(fig, key="rr_bars")
    with right:
        tables.show(frame, key="rr_positions", formats={c: ".3f" for c in ("q(x)", "p(x)", "min(1, p/q)", "u")})
        if s.greedy:
            st.caption("Greedy: p and q are one-hot (all their probability on the top token), so p(x) is 1 exactly "
                       "when the draft is the target's top token; no uniform draws are needed.")
        with layout.deeper("β, α and other acceptance figures", key="rr_acceptance_figures"):
            acceptance_figures(r, verified)

    # The corrective or bonus token and where it came from.
    if name == "emit":
        if r.next_kind == "corrective":
            j = r.rejected_at
            c = st.columns(3)
            c[0].plotly_chart(charts.prob_bars(r.q_top[j], pair.tokenizer, f"q at position {j + 1}", charts.Q_COLOR,
                                               highlight=r.draft_tokens[j], highlight_color=chips.KINDS["rejected"].color),
                              key="rr_q")
            c[1].plotly_chart(charts.prob_bars(r.p_top[j], pair.tokenizer, f"p at position {j + 1}", charts.P_COLOR,
                                               highlight=r.next_token), key="rr_p")
            c[2].plotly_chart(charts.prob_bars(r.residual_top or [], pair.tokenizer, "residual norm(max(0, p − q))",
                                               charts.RESIDUAL_COLOR, highlight=r.next_token, highlight_color=charts.INK),
                              key="rr_residual")
            rollback_view(r)
            st.caption(f"The corrective token {charts.token_label(pair.tokenizer.decode([r.next_token]))} "
                       f"(outlined) was drawn from the residual, where it had probability {r.next_prob:.3f}. "
                       "The rejected draft (outlined in q) never has residual mass: a draft can be rejected only where "
                       "p(x) < q(x), so max(0, p(x) − q(x)) is 0 there.")
        else:
            st.plotly_chart(charts.prob_bars(r.p_top[n], pair.tokenizer, f"p at position {n + 1}: the bonus distribution",
                                             charts.P_COLOR, highlight=r.next_token, highlight_color=chips.KINDS["bonus"].color),
                            key="rr_bonus")
    elif verified:
        with st.expander(f"Top candidates of q and p at each position (p at all {n + 1} came from the one target pass)"):
            rows = []
            for j in range(n + 1):  # the last row is position γ+1: p only, where a bonus token would come from
                rows.append({"position": j + 1, "draft": _text([r.draft_tokens[j]]) if j < n else "—",
                             "q top": ", ".join(f"{_text([t])} {p:.2f}" for t, p in r.q_top[j][:4]) if j < n else "—",
                             "p top": ", ".join(f"{_text([t])} {p:.2f}" for t, p in r.p_top[j][:4])})
            st.dataframe(rows, hide_index=True, key="rr_tops")

    # The text so far and the table of finished rounds.
    done = stepper.rounds_completed(rounds, cur)
    upto = rounds[done - 1].position + len(rounds[done - 1].emitted) if done else 0
    st.markdown("**The text so far:**")
    chips.show(chips.provenance_html(pair.tokenizer, ids, result.tokens[:upto], result.token_kinds[:upto]))
    if done:
        table = rounds_frame(rounds[:done])
        table.insert(5, "next_text", [_text([r_.next_token]) for r_ in rounds[:done]])
        table.insert(2, "drafts_text", [_text(r_.draft_tokens) for r_ in rounds[:done]])
        tables.show(table, key="rr_rounds")
        st.download_button("Download the rounds (CSV)", table.to_csv(index=False).encode(), "rounds.csv",
                           mime="text/csv", key="rr_csv", icon=":material/download:", on_click="ignore")


def acceptance_figures(r, verified: bool) -> None:
    """The acceptance figures beyond min(1, p/q), folded: β per position of this round, then the whole run's
    tokens per target pass and accepted ÷ drafted, each said to be what it is (and what it is not)."""
    # β = Σ min(p, q): Leviathan et al. 2022, §3.2 (Theorem 3.5, Corollary 3.6); α = E(β), Definition 3.2.
    shared = [min(a, b) for a, b in zip(EXAMPLE_P, EXAMPLE_Q)]
    st.markdown(f"**β, the chance a draft passes at one position.** A draft x drawn from q passes with chance "
                f"Σ_x q(x)·min(1, p(x)/q(x)) = Σ min(p, q) = β. In the example above: β = {shared[0]:g} + "
                f"{shared[1]:g} = **{sum(shared):g}**.")
    if verified and r.overlap is not None:
        tables.show([{"position": j + 1, "β = Σ min(p, q) = 1 − TV(p, q)": b} for j, b in enumerate(r.overlap)],
                    key="rr_overlap", formats={"β = Σ min(p, q) = 1 − TV(p, q)": ".3f"})
        st.caption(f"{layout.measured_badge()} β at each position of this round, from the full rows of p and q: "
                   "Σ min(p, q), the chance that a draft drawn from q passes there. It equals 1 − TV(p, q), one "
                   "minus the total variation distance. The paper's α is β's expectation over the positions a text "
                   "runs into; the mean of the min(1, p/q) column over judged drafts (what the app calls measured "
                   "α) estimates it from the one draft each position actually got, leaning high: "
                   f"{alpha_estimate.WHY_IT_LEANS_HIGH}.")
    else:
        st.caption("β at each position appears once the target pass has given p (the Verify step).")
    st.caption(f"{layout.measured_badge()} The whole run: {len(rounds)} rounds, {result.tokens_per_pass:.2f} tokens "
               f"per target pass, acceptance rate (accepted ÷ drafted) {result.acceptance_rate:.0%}. The acceptance "
               "rate is not α: it also counts the drafts after a rejection, which the target never judged, so it "
               "runs below α.")


# --- the demo: real rounds on the sidebar prompt, step by step -----------------------------------------
with layout.demo():
    st.caption(f"Real rounds on your prompt · γ (drafts per round): {s.describe_policy(pair, which)} · "
               f"{s.describe_sampling()} · seed {s.seed}: {len(rounds)} rounds.")
    chips.show_legend(("prompt", "drafted", "accepted", "rejected", "unchecked", "corrective", "bonus"))
    st.caption("A round ends with one target token: *corrective* after a rejection (later drafts: *not "
               "checked*), or *bonus* if all passed.")
    round_view()
layout.try_this("set temperature to 0 and step through a round: no draws u, and a draft passes only if it "
                "is the target's top choice.")

# --- go deeper ------------------------------------------------------------------------------------------
with layout.deeper("the rule and its proof"):
    round_rule.show()
with layout.deeper("who chose γ; other drafters"):
    round_drafting.show(pair)
with layout.deeper("one pass, γ + 1 distributions"):
    round_distributions.show(pair, s)
