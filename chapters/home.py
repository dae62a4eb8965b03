"""Home: the idea in a sentence, the paper's figures next to this app's own, the history, the way in."""
import streamlit as st

from specdec_core import autoregressive_generate, speculative_generate
from specdec_core.analysis import race
from specdec_core.sampling import SamplingConfig
from ui import admission, chapters, demo, layout, models, settings

HEADLINE_TOKENS = 64  # at most this many tokens for the live figure, so Home stays quick


@admission.cached(max_entries=64, what="the live figure")
def headline(pair_id: str, prompt_ids: tuple[int, ...], gamma: int, max_new: int, temperature: float,
             top_k: int, top_p: float, seed: int, _pair) -> dict:
    """One speculative and one plain generation of the same request: tokens per target pass,
    acceptance, and whether the tokens agree (nothing timed: the wall clock is `measure_speedup`)."""
    sampling = SamplingConfig.from_controls(temperature, top_k, top_p)
    spec = speculative_generate(_pair.target, _pair.draft, list(prompt_ids), gamma=gamma, max_new_tokens=max_new,
                                sampling=sampling, seed=seed, trace=False, on_round=admission.on_round)
    plain = autoregressive_generate(_pair.target, list(prompt_ids), max_new, sampling, seed=seed,
                                    on_token=admission.on_token)
    return {"tokens": len(spec.tokens), "tokens_per_pass": spec.tokens_per_pass,
            "acceptance": spec.acceptance_rate, "identical": spec.tokens == plain.tokens}


def measure_speedup(ids: list[int], progress) -> dict:
    """The core's race of the headline request (interleaved repetitions, median and spread), kept for
    every visitor (`demo.run(shared=True)`): it sits behind a button so that it never delays Home's
    first paint."""
    with admission.slot("the live figure"):
        race.warm_up(pair.target, pair.draft, ids, s.gamma)
    cap = demo.repeats_cap(race.RACE_REPEATS, race.RACE_MAX_REPEATS)
    result = race.live_race(pair.target, pair.draft, ids, s.gamma, min(s.max_new_tokens, HEADLINE_TOKENS), s.sampling,
                            s.effective_seed, max_repeats=cap, warm=False, hold=demo.hold("the live figure"),
                            progress=lambda f, text: progress(f, f"Racing: {text}"))
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
if pair is None:
    st.warning(f"No live figure: the model pair cannot be loaded here. {error}", icon=":material/cloud_off:")
else:
    ids, problem = models.prompt_problem(pair, s)
    if problem:
        st.warning(problem, icon=":material/edit_note:")
    else:
        with st.spinner("Generating with and without speculation on this machine…", show_time=True):
            h = headline(models.pair_key(pair), tuple(ids), s.gamma, min(s.max_new_tokens, HEADLINE_TOKENS), s.temperature,
                         s.top_k, s.top_p, s.effective_seed, pair)
        st.caption(f"{layout.measured_badge()} pair **{pair.name}** (target {pair.target_params / 1e6:.1f}M "
                   f"params, draft {pair.draft_params / 1e6:.1f}M), {h['tokens']} tokens, γ = {s.gamma}, "
                   f"{s.describe_sampling()}, on this machine's {pair.device.upper()}.")
        m = st.columns(4)
        m[0].metric("Tokens per target pass", f"{h['tokens_per_pass']:.2f}",
                    help="Plain decoding makes exactly 1.00: one pass, one token.")
        m[1].metric("Drafts accepted", f"{h['acceptance']:.0%}")
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
                         "γ+1 positions is not free, so expect less than the paper (see *Why Verification Is Free*).")
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
    ("1990s", "Speculative execution in CPUs",
     "Processors guess which way a branch goes, run ahead on the guess, and throw the work away when wrong."),
    ("2018–2022", "The autoregressive bottleneck",
     "Transformers grow; each new token still needs one full, serial pass, so better models answer slower."),
    ("Nov 2022", "Speculative decoding — Leviathan, Kalman & Matias (Google)",
     "A small model drafts γ tokens, the large one checks them all in one pass, and a new rejection-sampling "
     "rule keeps the output distribution exactly the large model's."),
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

st.subheader("Take-aways")
st.markdown(
    "- Generating is serial; checking is parallel. Speculation turns most of the first into the second.\n"
    "- A cheap drafter proposes γ tokens; the target scores all of them, plus one more position, in one pass.\n"
    "- The accept/resample rule makes the output exactly the target's: greedy gives the same tokens, "
    "sampling the same distribution.\n"
    "- The gain is set by α (how often the drafter agrees) and γ (how far it guesses), with a best γ for each α.\n"
    "- It pays when a pass over several positions costs about as much as one, as on a GPU waiting on memory.")

st.subheader("Chapters")
for chapter in chapters.CHAPTERS[1:]:
    st.page_link(chapter.path, label=f"**{chapter.title}** — {chapter.summary}", icon=chapter.icon)
