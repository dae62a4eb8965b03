"""Measurements of the loaded pair on this machine, cached once per process (`st.cache_data`, keyed
by the pair's identity; the model itself is excluded from the hash), with a progress bar the first time.

Every chapter asks for the same sweep (one target pass over k = 1…32 new positions, one draft pass
per drafter), so whichever chapter a student opens first pays for it and the rest reuse it. The
sweep runs alone on the server (an exclusive admission slot), so other students' generations do not
slow the passes it times.
"""
from contextlib import nullcontext

import streamlit as st

from specdec_core.analysis.measure import CostProfile, pass_cost
from specdec_core.pairs import ModelPair

from . import admission
from .models import pair_key

SWEEP_KS = tuple(range(1, 33))  # positions per target pass
CONTEXT = 64  # tokens already in the KV cache when a pass is timed
REPEATS, WARMUP = 9, 2  # median of REPEATS timed passes after WARMUP untimed ones
ROUNDS = 3  # the whole sweep is timed ROUNDS times over; each pass keeps its least median


@st.cache_data(show_spinner=False, max_entries=1024)
def pass_seconds(pair_id: str, role: str, k: int, round_: int, _model) -> float:
    """Median seconds of one forward pass of `_model` over k new positions in timing round `round_`
    (role names the model within the pair: "target" or a drafter's label)."""
    return pass_cost(_model, k, context=CONTEXT, repeats=REPEATS, warmup=WARMUP)


def _drafter(pair: ModelPair, label: str | None):
    label = label or next(iter(pair.drafts))
    return label, pair.drafts[label]


def sweep(pair: ModelPair, ks=SWEEP_KS, drafters=None) -> tuple[dict[int, float], dict[str, float]]:
    """Target pass time for each k, and one-position pass time of each drafter (default: all of the
    pair's drafters). Shows a progress bar while anything is measured for the first time.

    Each time is the least of ROUNDS medians taken in separate sweeps over every pass, every other
    sweep in reverse order: other work on the machine only ever adds time, and a burst of it (a
    browser rendering, another process) then lands in one round of a few passes rather than in all
    the medians of one pass."""
    key = pair_key(pair)
    labels = list(pair.drafts) if drafters is None else list(drafters)
    jobs = [("target", k, pair.target) for k in ks] + [(lab, 1, pair.drafts[lab]) for lab in labels]
    known = _measured()
    fresh = any((key, role, k, r) not in known for role, k, _ in jobs for r in range(ROUNDS))
    best: dict[tuple[str, int], float] = {}
    # Timing runs alone (an exclusive slot): passes timed next to other generations would be slower.
    with admission.slot("timing this machine's forward passes", exclusive=True) if fresh else nullcontext():
        bar = st.progress(0.0, text="Timing forward passes on this machine (once per server process)…") if fresh else None
        for r in range(ROUNDS):
            # Odd rounds go backwards: no pass is always timed at the same moment of a round.
            for i, (role, k, model) in enumerate(jobs if r % 2 == 0 else jobs[::-1]):
                seconds = pass_seconds(key, role, k, r, model)
                known.add((key, role, k, r))
                best[role, k] = min(seconds, best.get((role, k), seconds))
                if bar is not None:
                    bar.progress((r * len(jobs) + i + 1) / (ROUNDS * len(jobs)),
                                 text=f"Timing forward passes on this machine (round {r + 1} of {ROUNDS}): {role}, k = {k}")
        if bar is not None:
            bar.empty()
    target = {k: t for (role, k), t in best.items() if role == "target"}
    draft = {role: t for (role, _), t in best.items() if role != "target"}
    return target, draft


@st.cache_resource(show_spinner=False)
def _measured() -> set:
    """(pair, role, k, round) already timed in this process: no progress bar flashes when all are cached."""
    return set()


def cost_profile(pair: ModelPair, draft_label: str | None = None, ks=SWEEP_KS) -> CostProfile:
    """The core's CostProfile (c and v(γ)) for the pair and one of its drafters, from the cached sweep."""
    label, _ = _drafter(pair, draft_label)
    target, draft = sweep(pair, ks, [label])
    return CostProfile(target_s=target[1], draft_s=draft[label], verify_s=dict(target))


def draft_costs(pair: ModelPair) -> dict[str, float]:
    """c (draft pass / target pass) of each of the pair's drafters."""
    target, draft = sweep(pair)
    return {label: s / target[1] for label, s in draft.items()}
