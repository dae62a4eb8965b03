"""Chapter: Key Takeaways, as the explainer's Reference section ends: each takeaway beside the chapter
that shows it live, with this machine's figure next to the paper's, then the papers to read next."""
import streamlit as st

from specdec_core import model, theory
from ui.content import chapters, mismatch, paper, reading
from ui.server import demo, measure, models
from ui.server.headline import HEADLINE_TOKENS, headline
from ui.state import settings
from ui.widgets import layout

s = settings.current()
pair = models.require_pair()
ids, problem = models.prompt_problem(pair, s)

st.header("Key Takeaways")
st.markdown("Six things to remember, each beside the chapter that shows it live. Open one to see this machine's "
            "figure next to the paper's.")
st.info("**Try this:** change γ or the temperature in the sidebar and open a card again: this machine's figures "
        "move, the paper's stay.", icon=":material/lightbulb:")
CHAPTER = {c.path: c for c in chapters.CHAPTERS}


COMPUTED_FROM_PAPER = ":blue-badge[computed here from the paper's figures]"


def takeaway(text: str, chapter: str, here: str, paper_figure: str) -> None:
    """One takeaway: the sentence and the link on the card, this machine's figure and the paper's folded."""
    with st.container(border=True):
        st.markdown(f"**{text}**")
        with st.expander("This machine, and the paper"):
            st.markdown(f"{layout.measured_badge()} {here}  \n{layout.paper_badge()} {paper_figure}")
        st.page_link(CHAPTER[chapter].path, label=f"See it live: {CHAPTER[chapter].title}", icon=CHAPTER[chapter].icon)


task, drafter_name, _, g_paper, a_paper, speed_paper = paper.HEADLINE_ROW
def takeaways(h: dict, profile, speedup_here) -> None:
    """The six takeaways of the explainer, in its order."""
    alpha_here = h["alpha"]
    best_here = theory.optimal_gamma(alpha_here, profile.c, profile.v) if alpha_here == alpha_here else None
    takeaway("Generating is serial; checking is parallel. Speculation turns most of the first into the second.",
             "chapters/serial_tax.py",
             f"one target pass over γ + 1 = {s.gamma + 1} positions costs {profile.v(s.gamma):.2f} passes over one, "
             f"on this machine's {pair.device.upper()}.",
             "a pass over γ + 1 positions is charged as one (v = 1): an accelerator waiting on memory.")
    takeaway("A cheap drafter proposes γ tokens; the target scores all of them, and one more position, in ONE pass.",
             "chapters/round_by_round.py",
             f"{h['tokens_per_pass']:.2f} tokens per target pass at γ = {s.gamma}, with a drafter costing "
             f"c = {profile.c:.3f} of a target pass.",
             f"{task}, {drafter_name} drafting for T5-XXL at γ = {g_paper}: α = {a_paper:.2f}.  \n"
             f"{COMPUTED_FROM_PAPER} that α and γ give (1 − α^(γ+1)) / (1 − α) = "
             f"{theory.expected_tokens(a_paper, g_paper):.2f} tokens per target pass.")
    takeaway("The accept/resample rule keeps the output exactly the target's: lossless.",
             "chapters/identical_outputs.py",
             ("greedy here: the speculative tokens are " + ("identical to plain decoding's." if h["identical"] else
              "NOT identical to plain decoding's. " + mismatch.greedy_mismatch_reason(model.batch_invariant(pair.target))))
             if s.greedy else
             "sampling here: the texts differ draw by draw; the distribution is the same, which the chi-square "
             "test checks.",
             "outputs identical to the T5X implementation's, proved for sampling.")
    takeaway("It pays where a wide pass is nearly free: the paper's accelerator, not every machine.",
             "chapters/race.py",
             f"{speedup_here.median:.2f}× wall-clock (median of interleaved races)." if speedup_here else
             "not measured yet for these settings: press *Measure the wall-clock speedup here* on Home.",
             f"{paper.SPEEDUP} faster than T5X on T5-XXL, no retraining, identical outputs.")
    takeaway("The gain is set by α (earned by the drafter) and γ (a slider), with a best γ for each α and c.",
             "chapters/alpha_dial.py",
             (f"measured α = {alpha_here:.2f} on the sidebar prompt; with this machine's c and v the best γ is {best_here}."
              if best_here is not None else "no draft was judged on this request: try more tokens."),
             f"{drafter_name} on {task}: α = {a_paper:.2f}, run at γ = {g_paper} for {speed_paper}× "
             f"(Table 2; the app recomputes Table 1 on the α Dial).")
    alphas = [row[4] for row in paper.TABLE_2]
    n_drafters = len(pair.drafts) + len(pair.self_drafters) + 2  # the models, the heads, prompt lookup, unigram
    # Chen et al.'s speculative sampling is the same method found independently (arXiv 2302.01318), not a descendant.
    takeaway("Found twice (Chen et al.'s speculative sampling), then it grew a family: Medusa, EAGLE, n-gram "
             "drafters; now standard in serving stacks.",
             "chapters/impact.py",
             f"the shoot-out on Impact races {n_drafters} kinds of drafter for the same target on this machine: "
             "small models, heads that read the target, prompt lookup and a unigram floor.",
             f"smaller T5 models drafting for T5-XXL (Table 2): α from {min(alphas):.2f} to {max(alphas):.2f}.")


lesson = st.container(key="lesson-demo")
if problem:
    lesson.warning(f"The figures measured here need a usable prompt: {problem}", icon=":material/edit_note:")
else:
    h = headline(models.pair_key(pair), s.request(ids, min(s.max_new_tokens, HEADLINE_TOKENS), "model"), s.gamma, pair)
    stored = demo.latest("home_speedup", (models.pair_key(pair), s.signature()), shared=True)
    speedup = stored["speedups"] if stored else None
    profile = measure.cost_profile(pair)
    with lesson:
        takeaways(h, profile, speedup)
with st.expander("Further reading: the papers to read next"):
    reading.show("Further reading")
