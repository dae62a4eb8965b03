"""Drafters That Read the Target, folded: what a Medusa head, the EAGLE drafter and the EAGLE-3 drafter read,
and how they were trained here with the target frozen (with their held-out agreement)."""
import streamlit as st

from ui.widgets import tables


def show(medusa, eagle, width: int, params: dict, eagle3=None) -> None:
    """The drafters' anatomy and their training record."""
    c = st.columns(2)
    if medusa is not None:
        with c[0].container(border=True):
            st.markdown(
                f"**Medusa heads** (Cai et al. 2024): {medusa.n_heads} small blocks, each h + SiLU(W h) on h, the target's "
                f"{width}-wide hidden state (EAGLE calls it the *feature*) at the latest token it has scored. "
                f"Head *k* guesses the token *k* places after the "
                "one the target predicts there, all in **one** pass, and none of them sees the guesses before it. "
                f"Here the heads share the target's own LM head, frozen ({params['Medusa heads']:,} trained parameters in "
                "all); Medusa gives each head an LM head of its own.")
    if eagle is not None:
        with c[1].container(border=True):
            st.markdown(
                "**EAGLE drafter** (Li et al. 2024): one decoder layer that reads pairs (the target's feature at *t*, "
                "the token at *t* + 1) and predicts the feature at *t* + 1; the target's LM head reads the guess out. "
                "It drafts step by step *in feature space*, feeding its own predicted features back in, and after each "
                f"round catches up from the target's real features ({params['EAGLE drafter']:,} trained parameters).")
    st.markdown(
        "**Trained with the target frozen.** `specdec train heads` ran the target once over windows of the training "
        "plays and kept its features; only the heads learned. Medusa's heads learned the target's own distribution "
        "*k* tokens on; EAGLE learned to regress the next feature (smooth L1) plus a small cross-entropy on what the "
        "LM head makes of it, with noise on its inputs so that its own imperfect guesses do not throw it (EAGLE's "
        "recipe). The target's weights are fingerprinted: heads offered to another target are refused.")
    if eagle3 is not None:
        eagle3_card(eagle3, params)
    summary = {d.name: d.training for d in (medusa, eagle) if d is not None}
    if any(summary.values()):
        t = next(v for v in summary.values() if v)
        agree = t.get("val_medusa_agree", [])
        rows = [{"drafter": medusa.name if medusa else "Medusa", "what": f"head {k + 1}: token {k + 2} ahead",
                 "agrees with the target's top token (held-out plays)": a} for k, a in enumerate(agree)]
        if "val_eagle_agree" in t:
            rows.append({"drafter": eagle.name if eagle else "EAGLE", "what": "the next token, from the target's true feature",
                         "agrees with the target's top token (held-out plays)": t["val_eagle_agree"]})
        st.caption(f"After {t.get('steps', '?')} training steps ({t.get('seconds', 0) / 60:.0f} min of CPU training, the "
                   "target frozen), on windows of the held-out plays (Macbeth, The Tempest):")
        tables.show(rows, key="sd_training", formats={"agrees with the target's top token (held-out plays)": ".1%"})


def eagle3_card(eagle3, params: dict) -> None:
    """The EAGLE-3 drafter: what changed from EAGLE-1, and its training record (held-out, unrolled)."""
    t = eagle3.training
    vocab = eagle3.config.draft_vocab or eagle3.config.vocab
    fusion = ""
    if eagle3.target_layers:  # EAGLE-3's fusion: indices as transformers' hidden_states, the last the final state
        *low, _ = eagle3.target_layers
        width = eagle3.config.width
        fusion = (f" Its input is EAGLE-3's fusion: the target's states after blocks {' and '.join(map(str, low))} "
                  f"and its final state, side by side ({len(eagle3.target_layers) * width:,} numbers, the lower ones "
                  f"RMS-normalised), through one fc to {width}; its own guesses go back in as they are.")
    with st.container(border=True):
        st.markdown(
            "**EAGLE-3 drafter** (Li et al. 2025): the EAGLE drafter's layer, trained further by *training-time "
            "test*: during training it drafts three steps on its own predicted features, as it will when drafting, "
            "and is judged at every step by cross-entropy against the target's distribution (no loss on the features "
            f"themselves).{fusion} It drafts over the {vocab:,} most frequent tokens of the training plays only, read out by "
            "those rows of the target's LM head: its q is zero for every other token, and the verification rule "
            "stays exact, since a rejected draft's residual max(0, p − q) keeps all of p outside the draft "
            f"vocabulary ({params.get(eagle3.name, 0):,} trained parameters).")
        if t:
            agree = t.get("val_agree_by_step", [])
            start = t.get("start", {}).get("val_agree_by_step", [])
            st.caption(f"{t.get('steps', '?')} steps from the EAGLE drafter, {t.get('seconds', 0) / 60:.0f} min of CPU "
                       "training on a shared machine, target frozen. Held-out agreement with the target's top token, "
                       f"unrolled on its own drafts (draft {', '.join(str(i + 1) for i in range(len(agree)))}): "
                       + " · ".join(f"{a:.1%}" for a in agree)
                       + (" (before: " + " · ".join(f"{a:.1%}" for a in start) + ")" if start else "") + ".")
