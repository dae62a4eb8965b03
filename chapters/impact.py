"""Chapter: Impact & Lineage. The lesson: after the paper the question became *who drafts*; a live
shoot-out of drafters on one prompt (the small model(s), heads on the target, prompt lookup, a trivial
unigram) shows it. Folded beneath: the lineage (ui/sections/impact_lineage.py) and what speculation did
not solve, with the batch regime measured live (ui/sections/impact_limits.py)."""
import streamlit as st
from plotly.subplots import make_subplots

from specdec_core import NgramDrafter, UnigramDrafter
from specdec_core.analysis import race
from ui.sections import impact_limits, impact_lineage
from ui.server import admission, demo, measure, models
from ui.state import settings
from ui.widgets import charts, chips, layout, palette, tables

# A prompt that repeats itself: prompt lookup can copy what followed the earlier occurrence.
REPEATING_PROMPT = ("HAMLET:\nTo be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"
                    "HAMLET:\nTo be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"
                    "HAMLET:\nTo be, or not to be,")
PROMPTS = {"sidebar": "The sidebar prompt", "repeating": "A prompt that repeats itself"}
SHOOTOUT_REPEATS = 3  # interleaved repetitions: every figure is their median

s = settings.current()
pair = models.require_pair()

st.header("Impact & Lineage")
st.markdown("After the paper, the question moved from *whether* to speculate to **who drafts**: a small model, "
            "heads that read the target itself, or no model at all, copying from the prompt. Race them on one "
            "prompt.")

# --- the lesson's demo: the drafter shoot-out -------------------------------------------------------------
with st.container(key="lesson-demo"):
    st.subheader("Live drafter shoot-out")
    which = st.radio("Prompt", list(PROMPTS), format_func=PROMPTS.get, horizontal=True, key="im_prompt")
    st.info("**Try this:** run it on the sidebar prompt, then on the prompt that repeats itself with temperature 0: "
            "prompt lookup, which costs nothing, jumps from last place towards first.", icon=":material/lightbulb:")
    if which == "sidebar":
        ids = models.require_prompt_ids(pair)
        prompt_text = s.prompt
    else:
        prompt_text = REPEATING_PROMPT
        ids = pair.tokenizer.encode(REPEATING_PROMPT)
        room = pair.context_length - len(ids)
        if room < 2:
            st.warning("The repeating prompt does not fit this pair's context window.")
            st.stop()
    max_new = min(s.max_new_tokens, pair.context_length - len(ids))
    with st.expander("The prompt"):
        st.html(chips.provenance_html(pair.tokenizer, ids, [], []))
    drafters = {**{f"model: {label}": model for label, model in pair.drafts.items()},
                **{f"reads the target: {d.name}": d for d in pair.self_drafters.values()},
                **{d.name: d for d in (NgramDrafter(), UnigramDrafter())}}  # each drafter names itself
    # Each drafter's key in the pair's record of adaptive defaults (pairs.ModelPair.adaptive_policy).
    record_keys = {f"model: {next(iter(pair.drafts))}": "draft",
                   **{f"reads the target: {d.name}": key for key, d in pair.self_drafters.items()}}
    if s.policy == settings.ADAPTIVE_DEFAULT:
        length_text = ("Each drafter drafts with the adaptive policy measured best for it (" + "; ".join(
            f"{label}: {s.describe_policy(pair, record_keys[label])}" for label in drafters if label in record_keys)
            + f"; any other drafter: {s.describe_policy(pair, '')}, the built-in choice)")
    else:
        length_text = f"Every drafter drafts with the same length policy ({s.describe_policy()})"
    how_run = (f"{length_text} for the same target, prompt, "
               f"{s.describe_sampling()} and seed {s.seed}; {max_new} tokens. Plain decoding and every drafter run in turn, "
               f"{SHOOTOUT_REPEATS} times over in alternating order; a speedup is the median over those repetitions of plain "
               "time / drafter time (prompt processing excluded). c comes from the draft passes these runs made, once a "
               "round has warmed the drafter up (its first passes, slower after the target's pass, count in the speedup "
               "but not in c), so two drafters of one architecture get the same c.")
    signature = (models.pair_key(pair), s.signature(), which)
    policy = {label: measure.planning_policy(pair, s.for_drafter(pair, record_keys.get(label, "")).draft_policy)
              for label in drafters}  # each plans with this machine's c and v
    demo.run("Run the shoot-out", key="im_run", state="im_result", signature=signature, what="your shoot-out",
             slot=False, type="primary", icon=":material/emoji_events:",
             work=lambda progress: {"out": race.drafter_shootout(
                 pair.target, drafters, s.request(ids, max_new), policy, repeats=SHOOTOUT_REPEATS,
                 pacing=admission.pacing("your shoot-out", progress))})
    stored = demo.latest("im_result", signature, stale="note", again="Run the shoot-out")
    if stored:
        rows = stored["out"]["rows"]
        table = [{"drafter": r["drafter"], "measured α": round(r["alpha"], 3) if r["alpha"] == r["alpha"] else None,
                  "tokens per target pass": round(r["tokens_per_pass"], 2),
                  "mean acceptance length": round(r["mean_acceptance_length"], 2),
                  "draft passes per token": round(r["draft_passes_per_token"], 2),
                  "c (draft pass / target pass)": round(r["c"], 3),
                  "speedup (measured, median)": round(r["speedup"], 2),
                  "range over the runs": f"{r['measured'].low:.2f}–{r['measured'].high:.2f}"} for r in rows]
        tables.show(table, key="im_table")
        st.caption("*Measured α*: the mean of min(1, p/q) over the drafts the target judged (as on the α Dial; "
                   "empty when no draft was judged). "
                   "Two counts of one yield: *tokens per target pass* divides the tokens written by the target's "
                   "passes; *mean acceptance length* (vLLM's name) averages accepted drafts + 1 over the rounds. They "
                   "differ only in how the prompt's pass and the end of the text are counted. *Draft passes per "
                   "token*: the drafter's passes ÷ the tokens written (none for prompt lookup). c: one draft pass as "
                   "a fraction of a target pass.")
        names = [r["drafter"] for r in rows]
        # one colour per drafter, however many the pair offers (the names on the axis carry the meaning)
        colors = [palette.color(palette.CATEGORICAL[i % len(palette.CATEGORICAL)]) for i in range(len(rows))]
        fig = make_subplots(rows=1, cols=3, subplot_titles=("measured α", "tokens per target pass", "speedup (×)"))
        for col, key in enumerate(("alpha", "tokens_per_pass", "speedup"), start=1):
            fig.add_bar(x=names, y=[r[key] if r[key] == r[key] else 0 for r in rows], marker_color=colors, row=1, col=col,
                        showlegend=False, text=[f"{r[key]:.2f}" for r in rows], textposition="auto")
        fig.add_hline(y=1, line_dash="dot", line_color=charts.INK, row=1, col=3)
        fig.update_layout(height=380, margin=dict(t=40, b=8))
        fig.update_xaxes(tickangle=-25)
        st.plotly_chart(fig, key="im_chart")
        widest = max(rows, key=lambda r: r["measured"].spread)
        demo.spread_note(widest["measured"], f"Speedup with the {widest['drafter']}, the widest spread here")
        best = max(rows, key=lambda r: r["speedup"])
        st.markdown(f"{layout.measured_badge()} Fastest here: **{best['drafter']}** ({best['measured'].text()}).")
        st.caption("A model drafter earns its α by imitating the target and pays for it with draft passes; prompt "
                   "lookup pays nothing and is right only where the text repeats; the unigram drafter is the floor: "
                   "guesses from word counts, almost always rejected, a round then yields one token like plain "
                   "decoding, plus overhead.")
    else:
        st.caption("Press **Run the shoot-out** to measure every drafter on this prompt (half a minute or so).")
    with st.expander("How the shoot-out is measured"):
        st.caption(how_run)

st.subheader("Go deeper")
with st.expander("The lineage: from two papers to every serving stack"):
    impact_lineage.show()
with st.expander("What speculation did not solve, with batches measured live"):
    impact_limits.show(pair)
