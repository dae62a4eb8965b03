"""Home: the idea in a sentence, the paper's figures next to this app's own, the history, the way in."""
import streamlit as st

from specdec_core.analysis import race
from ui.content import chapters
from ui.server import admission, demo, models
from ui.server import headline as headline_mod
from ui.state import settings
from ui.widgets import layout

HEADLINE_TOKENS = headline_mod.HEADLINE_TOKENS
headline = headline_mod.headline

# The last row's claim about the serving stacks, checked in their code: vLLM's drafters live in
# vllm-project/vllm vllm/v1/spec_decode/ (eagle.py, medusa.py, ngram_proposer.py) beside its paged KV cache
# (vllm/v1/core/kv_cache_manager.py); TensorRT-LLM's in NVIDIA/TensorRT-LLM tensorrt_llm/_torch/speculative/
# (eagle3.py, mtp.py, ngram.py) beside its paged KV cache and in-flight batching.
TIMELINE = [
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
     "A small model drafts a few tokens, the large one checks them all in one pass, and a new rejection-sampling "
     "rule keeps the output distribution exactly the large model's, for sampling as well as greedy decoding."),
    ("2023", "Speculative sampling — Chen et al. (DeepMind)",
     "The same idea found independently and shown on Chinchilla 70B."),
    ("2023 →", "Medusa, EAGLE, n-gram drafters, serving stacks",
     "Drafting heads on the target itself (Medusa), a small network that drafts from the target's own features "
     "(EAGLE), drafts copied from the prompt (n-gram drafters); vLLM, TensorRT-LLM and others ship it next to "
     "paged KV caches and continuous batching."),
]


def measure_speedup(ids: list[int], progress) -> dict:
    """The core's race of the headline request (interleaved repetitions, median and spread), kept for
    every visitor (`demo.run(shared=True)`): it sits behind a button so that it never delays Home's
    first paint."""
    cap = demo.repeats_cap(race.RACE_REPEATS, race.RACE_MAX_REPEATS)
    result = race.live_race(pair.target, pair.draft, s.request(ids, min(s.max_new_tokens, HEADLINE_TOKENS)), s.gamma,
                            max_repeats=cap, pacing=admission.pacing("the live figure",
                                                                     lambda f, text: progress(f, f"Racing: {text}")))
    return {"speedups": result.speedups}


st.header(layout.TITLE)  # every chapter opens with a header
layout.idea("a big language model writes one token per full pass, so a small *drafter* guesses the "
            "next few tokens and the big model (the *target*) checks every guess in **one** pass, keeping exactly "
            "its own output distribution (at temperature 0: exactly its text).")

# --- the demo: the sidebar's request, decoded with and without speculation on this machine ----------------
pair, error = models.current_pair()
s = settings.current()
problem = h = request = speedup = None  # set below when the pair and the prompt can be used
with layout.demo():
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
            m = st.columns(3)
            m[0].metric("Tokens per target pass", f"{h['tokens_per_pass']:.2f}",
                        help="Plain decoding makes exactly 1.00: one pass, one token.")
            request = (models.pair_key(pair), s.signature())
            speed_box = m[1].empty()  # filled once the button below has had its say
            with m[1]:
                demo.run("Measure the wall-clock speedup", key="home_speedup", state="home_speedup",
                         signature=request, work=lambda progress: measure_speedup(ids, progress),
                         what="the live figure", slot=False, shared=True, progress_text="Racing…",
                         icon=":material/timer:", type="primary",
                         help=f"Races plain and speculative decoding of this request {race.RACE_REPEATS} times, "
                              f"taking turns (up to {race.RACE_MAX_REPEATS} while the races disagree).")
            stored = demo.latest("home_speedup", request, shared=True)
            speedup = stored["speedups"] if stored else None
            speed_box.metric("Wall-clock speedup here", f"{speedup.median:.2f}×" if speedup else "—",
                             help="Plain time / speculative time of the same request, prompt processing included, "
                                  f"median of {race.RACE_REPEATS} to {race.RACE_MAX_REPEATS} interleaved races. On a "
                                  "CPU a pass over several positions is not free, so expect less than the paper (see "
                                  "*The Serial Tax*).")
            if s.greedy:
                m[2].metric("Same tokens as plain decoding", "yes" if h["identical"] else "NO",
                            help="At temperature 0 (greedy decoding: always the most likely token) both decoders "
                                 "must write the very same tokens.")
            else:
                m[2].metric("Same distribution as plain", "yes (proved)",
                            help="With sampling the two runs use their randomness differently, so the texts differ; "
                                 "the distribution they are drawn from is the same.")
            st.caption(f"{layout.measured_badge()} The sidebar's prompt, {h['tokens']} tokens, {s.gamma} drafts "
                       f"checked per target pass, {s.describe_sampling()}, pair **{pair.name}** "
                       f"(target {pair.target_params / 1e6:.1f}M params, drafter {pair.draft_params / 1e6:.1f}M) "
                       f"on this machine's {pair.device.upper()}.")
            if speedup:
                demo.spread_note(speedup, "Wall-clock speedup")
layout.try_this("set temperature to 0 in the sidebar: the speculative and the plain decoder now produce the "
                "very same tokens.")

st.markdown(
    "**An analogy.** A senior architect gives a junior a paragraph to draft, reads it through once, keeps it up to "
    "the first sentence they would have written differently, and writes that one themselves. The signed document "
    "is one the architect could just as well have written alone (word for word, if they always write their first "
    "choice); the pace is closer to the junior's.")

with layout.deeper("the paper's figures"):
    st.caption(f"{layout.paper_badge()} Leviathan, Kalman & Matias, *Fast Inference from Transformers via "
               "Speculative Decoding* (arXiv 2211.17192, ICML 2023): T5-XXL (11B) on one TPU-v4, batch size 1.")
    c = st.columns(4)
    c[0].metric("Faster decoding", "2–3×", help="Against the standard T5X implementation, same outputs.")
    c[1].metric("Outputs", "identical", help="The accept/resample rule provably samples from the big model's distribution.")
    c[2].metric("Retraining", "none", help="Off-the-shelf checkpoints; no architecture change.")
    c[3].metric("Drafters", "77M–800M", help="T5-small, T5-base and T5-large; T5-small (77M) gave the best speedup.")

with layout.deeper("where the idea comes from"):
    for when, what, detail in TIMELINE:
        st.markdown(f"**{when} · {what}** — {detail}")

st.subheader("Chapters")
st.caption("Each chapter is one idea and one live demo, and ends with the way to the next; the story ends with "
           "**Key Takeaways** and a quiz.")
for chapter in chapters.CHAPTERS[1:]:
    st.page_link(chapter.path, label=f"**{chapter.title}**", icon=chapter.icon, help=chapter.summary)
cm = chapters.CLASS_MODE
st.page_link(cm.path, label="Teaching? **Class mode** runs the quiz with the room's phones", icon=cm.icon, help=cm.summary)
