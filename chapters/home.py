"""Home: the idea in a sentence, the paper's figures next to this app's own, the history, the way in."""
import streamlit as st

from specdec_core.analysis import race
from ui.content import chapters
from ui.content import headline as headline_mod
from ui.server import admission, models
from ui.state import demo, settings
from ui.widgets import layout

HEADLINE_TOKENS = headline_mod.HEADLINE_TOKENS
headline = headline_mod.headline


def measure_speedup(ids: list[int], progress) -> dict:
    """The core's race of the headline request (interleaved repetitions, median and spread), kept for
    every visitor (`demo.run(shared=True)`): it sits behind a button so that it never delays Home's
    first paint."""
    cap = demo.repeats_cap(race.RACE_REPEATS, race.RACE_MAX_REPEATS)
    result = race.live_race(pair.target, pair.draft, s.request(ids, min(s.max_new_tokens, HEADLINE_TOKENS)), s.gamma,
                            max_repeats=cap, pacing=admission.pacing("the live figure",
                                                                     lambda f, text: progress(f, f"Racing: {text}")))
    return {"speedups": result.speedups}


st.header(layout.TITLE)  # every chapter opens with a header, then subheaders
layout.intro(
    "A big language model writes one token per full pass of the network, and most of the machine waits "
    "while it does. Speculative decoding lets a small drafter guess a few tokens ahead and has the big "
    "model check every guess in **one** pass, keeping exactly the text the big model would have written alone.",
    "scroll to *Measured here*, then set temperature to 0 in the sidebar: the speculative and the plain "
    "decoder now produce the very same tokens.")

st.subheader("The paper's figures")
st.caption(f"{layout.paper_badge()} Leviathan, Kalman & Matias, *Fast Inference from Transformers via "
           "Speculative Decoding* (arXiv 2211.17192, ICML 2023): T5-XXL (11B) on one TPU-v4, batch size 1.")
c = st.columns(4)
c[0].metric("Faster decoding", "2–3×", help="Against the standard T5X implementation, same outputs.")
c[1].metric("Outputs", "identical", help="The accept/resample rule provably samples from the big model's distribution.")
c[2].metric("Retraining", "none", help="Off-the-shelf checkpoints; no architecture change.")
c[3].metric("Drafters", "77M–800M", help="T5-small, T5-base and T5-large; T5-small (77M) gave the best speedup.")

st.subheader("Measured here")
pair, error = models.current_pair()
s = settings.current()
problem = h = request = speedup = None  # set below when the pair and the prompt can be used
if pair is None:
    st.warning(f"No live figure: the model pair cannot be loaded here. {error}", icon=":material/cloud_off:")
else:
    ids, problem = models.prompt_problem(pair, s)
    if problem:
        st.warning(problem, icon=":material/edit_note:")
    else:
        with st.spinner("Generating with and without speculation on this machine…", show_time=True):
            h = headline(models.pair_key(pair), s.request(ids, min(s.max_new_tokens, HEADLINE_TOKENS), "model"),
                         s.gamma, pair)
        st.caption(f"{layout.measured_badge()} pair **{pair.name}** (target {pair.target_params / 1e6:.1f}M "
                   f"params, draft {pair.draft_params / 1e6:.1f}M), {h['tokens']} tokens, γ = {s.gamma}, "
                   f"{s.describe_sampling()}, on this machine's {pair.device.upper()}.")
        m = st.columns(4)
        m[0].metric("Tokens per target pass", f"{h['tokens_per_pass']:.2f}",
                    help="Plain decoding makes exactly 1.00: one pass, one token.")
        m[1].metric("Drafts accepted (accepted ÷ drafted)", f"{h['acceptance']:.0%}",
                    help="Every draft made, including those after a rejection that were never judged; α, the mean "
                         f"verdict over judged drafts, is {h['alpha']:.2f} here.")
        request = (models.pair_key(pair), s.signature())
        demo.run("Measure the wall-clock speedup here", key="home_speedup", state="home_speedup", signature=request,
                 work=lambda progress: measure_speedup(ids, progress), what="the live figure", slot=False,
                 shared=True, progress_text="Racing…", icon=":material/timer:",
                 help=f"Races plain and speculative decoding of this request {race.RACE_REPEATS} times, taking turns "
                      f"(up to {race.RACE_MAX_REPEATS} while the races disagree).")
        stored = demo.latest("home_speedup", request, shared=True)
        speedup = stored["speedups"] if stored else None
        m[2].metric("Wall-clock speedup here", f"{speedup.median:.2f}×" if speedup else "—",
                    help="Plain time / speculative time of the same request, prompt processing included, median of "
                         f"{race.RACE_REPEATS} to {race.RACE_MAX_REPEATS} interleaved races. On a CPU a pass over "
                         "γ+1 positions is not free, so expect less than the paper (see *The Serial Tax*).")
        if s.greedy:
            m[3].metric("Same tokens as plain greedy", "yes" if h["identical"] else "NO")
        else:
            m[3].metric("Same distribution as plain", "yes (proved)",
                        help="With sampling the two runs use their randomness differently, so the texts differ; "
                             "the distribution they are drawn from is the same.")
        if speedup:
            demo.spread_note(speedup, "Wall-clock speedup")

st.subheader("Where the idea comes from")
timeline = [
    ("1960s →", "Speculative execution in processors",
     "Machines such as IBM's Stretch (1961) already fetched ahead past a branch on a guess and undid the work "
     "when the guess was wrong; branch prediction and out-of-order cores made it the rule in the 1990s."),
    ("2018", "Blockwise parallel decoding — Stern, Shazeer & Uszkoreit",
     "Extra heads propose several next tokens at once and the model keeps the longest prefix it agrees with: "
     "draft-then-verify for greedy decoding, with no second model."),
    ("2022", "The name — Xia et al., *Speculative Decoding*",
     "A dedicated drafter proposes a block and the translation model verifies it in parallel; the first use of "
     "the name, for greedy (or near-greedy) seq2seq decoding."),
    ("Nov 2022", "Speculative decoding — Leviathan, Kalman & Matias (Google)",
     "A small model drafts γ tokens, the large one checks them all in one pass, and a new rejection-sampling "
     "rule keeps the output distribution exactly the large model's, for sampling as well as greedy decoding."),
    ("2023", "Speculative sampling — Chen et al. (DeepMind)",
     "The same idea found independently and shown on Chinchilla 70B."),
    ("2023 →", "Medusa, EAGLE, n-gram drafters, serving stacks",
     "Drafting heads on the target itself, feature-level drafters, drafts copied from the prompt; vLLM, "
     "TensorRT-LLM and others ship it next to paged KV caches and continuous batching."),
]
for when, what, detail in timeline:
    st.markdown(f"**{when} · {what}** — {detail}")

st.subheader("An analogy: the senior architect")
st.markdown(
    "A senior architect who drafts every line of a document personally is slow. Give a junior a paragraph "
    "to write first: the architect reads it through once, keeps it up to the first sentence they would have "
    "written differently, and writes that sentence themselves. The signed document is exactly the "
    "architect's; the pace is closer to the junior's. Here the architect is the **target** model, the junior "
    "is the **drafter**, and *reading it through once* is the single verification pass.")

st.markdown("The story ends with its **Key Takeaways**, each next to the chapter that shows it live, and the "
            "papers to read next.")

st.subheader("Chapters")
for chapter in chapters.CHAPTERS[1:]:
    st.page_link(chapter.path, label=f"**{chapter.title}** — {chapter.summary}", icon=chapter.icon)
