"""Chapter: Drafters That Read the Target. The lesson: a drafter can read the vector the target has already
computed for the text instead of reading the text itself, so a few small layers on the target draft about as
well as a separate model. On the first screen: each drafter's first round on the sidebar prompt, beside the
tokens the target writes. Folded beneath: the four drafters measured (ui/sections/self_drafting_measured.py),
EAGLE-3 on the held-out benchmark with its ablation (ui/sections/self_drafting_eagle3.py), and what the heads
read and how they were trained here (ui/sections/self_drafting_heads.py)."""
import streamlit as st

from specdec_core import autoregressive_generate, speculative_generate
from specdec_core.sampling_config import GREEDY
from ui.sections import self_drafting_eagle3, self_drafting_heads, self_drafting_measured
from ui.server import models
from ui.state import settings
from ui.widgets import charts, layout, tables

GAMMA = 5  # the Medusa heads draft at most five tokens a round (one per head)
TARGET_ROW = "target (what it writes)"

s = settings.current()
pair = models.require_pair()
ids = models.require_prompt_ids(pair)

st.header("Drafters That Read the Target")
layout.idea("a drafter need not be a second model that reads the text: a few small layers can read what the "
            "target has already worked out about the text, and draft from that.")

if not pair.self_drafters:
    st.info("This pair has no heads trained on its target (only the bundled Shakespeare pair has them). "
            + (" ".join(pair.notes) if pair.notes else "Choose the bundled pair in the sidebar."),
            icon=":material/info:")
    st.stop()

medusa, eagle, eagle3 = (pair.self_drafters.get(k) for k in ("medusa", "eagle", "eagle3"))
width = next(iter(pair.self_drafters.values())).config.width
heads = {d.name: d for d in (medusa, eagle, eagle3) if d is not None}  # each drafter names itself
params = {name: sum(p.numel() for p in d.net.parameters()) for name, d in heads.items()}

# Medusa: Cai et al. 2024 (arXiv 2401.10774), heads on the last hidden state; EAGLE: Li et al. 2024 (arXiv
# 2401.15077), a one-layer drafter that predicts the next feature (hidden state) and reuses the LM head; EAGLE-3:
# Li et al. 2025 (arXiv 2503.01840), trained on its own drafts (training-time test), no feature loss, a reduced
# draft vocabulary (its release's d2t map), features fused from low, middle and high layers.
st.markdown(
    f"What the target has worked out is its **hidden state**: the {width} numbers its last layer leaves at each "
    "position, which its **LM head** turns into p. A **head** is a small layer that reads the same vector: Medusa "
    "adds one per draft position, EAGLE one layer that guesses the next hidden state"
    + (f"; EAGLE-3 trains that layer on its own guesses, over the {eagle3.config.draft_vocab:,} most frequent "
       "tokens" if eagle3 is not None else "")
    + ". All race the **distilled draft**, the separate small model of the other chapters, trained to imitate the "
    "target.")

with layout.demo():
    st.subheader("One round, four drafters")
    truth = autoregressive_generate(pair.target, ids, GAMMA, GREEDY).tokens
    words = lambda toks: [charts.token_label(pair.tokenizer.decode([t])) for t in toks]
    first = {TARGET_ROW: (words(truth), [None] * len(truth))}
    for label, d in {"distilled draft": pair.draft, **heads}.items():
        r = speculative_generate(pair.target, d, ids, gamma=GAMMA, max_new_tokens=GAMMA + 1, sampling=GREEDY, max_rounds=1)
        rnd = r.rounds[0] if r.rounds else None
        drafts = rnd.draft_tokens if rnd else []
        first[label] = (words(drafts), (rnd.draft_top or [None] * len(drafts)) if rnd else [])
    table = []
    for label, (toks, conf) in first.items():
        row = {"": label}
        for k in range(GAMMA):
            if k < len(toks):
                mark = "" if label == TARGET_ROW else (" ✓" if k < len(truth) and toks[k] == first[TARGET_ROW][0][k]
                                                       else " ✗")
                row[f"token {k + 1}"] = toks[k] + mark + (f" ({conf[k]:.0%})" if conf[k] is not None else "")
            else:
                row[f"token {k + 1}"] = "—"
        table.append(row)
    tables.show(table, key="sd_first_round")
    st.caption(f"Each drafter's first round of {GAMMA} drafts on the sidebar prompt (greedy), under the tokens the "
               "target writes itself. ✓ / ✗: the target's token or not; a round keeps drafts only up to its first ✗. "
               "In brackets: the drafter's own top probability.")
layout.try_this("change the sidebar prompt and see which drafter's run of ✓ lasts longest, and whether its "
                "bracketed confidence drops where it goes wrong.")

with layout.deeper("the four drafters measured on this prompt"):
    self_drafting_measured.show(pair, s, {"distilled draft": pair.draft, **heads}, ids, GAMMA)
with layout.deeper("EAGLE-3 on the held-out prompts, and what each of its changes bought"):
    self_drafting_eagle3.show()
with layout.deeper("what a head reads, and how the heads were trained here"):
    self_drafting_heads.show(medusa, eagle, width, params, eagle3)
