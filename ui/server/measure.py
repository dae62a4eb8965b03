"""This machine's pass costs and pass sweep, measured once per server process and shared by every
session, with the core's one method (specdec_core.analysis.pass_costs).

- `cost_profile` / `draft_costs`: c and v(γ) from the passes of a few short greedy generations
  (`measure.calibrate`, about a second on the bundled pair): the first page that needs them pays
  for it in its first paint, behind a progress bar, and holds a generation slot one run at a time.
- `pass_sweep`: one target pass over k = 1…32 positions (the Serial Tax chart), interleaved
  repetitions, behind a button (`demo.run(shared=True)` keeps the latest for everyone).

No lock is held while measuring (a lock held while waiting for a slot could deadlock with a session
that holds a slot): two sessions arriving together at a fresh server may both measure, and the
later result is kept.
"""
import streamlit as st

from specdec_core.analysis import pass_costs
from specdec_core.analysis.pass_costs import PassTimes
from specdec_core.analysis.stats import Measured
from specdec_core.costs import Costs
from specdec_core.pairs import ModelPair
from ui.server import admission
from ui.server.models import pair_key
from ui.state.settings import DEFAULTS

SWEEP_KS = tuple(range(1, 33))  # positions per target pass in the Serial Tax chart
CONTEXT = 64  # tokens already in the KV cache when a pass of the sweep is timed
SWEEP_REPEATS, SWEEP_PASSES = 5, 3  # interleaved repetitions; each sample the median of this many passes
CALIBRATION_REPEATS = 2  # repetitions of the calibration's short generations


@st.cache_resource(show_spinner=False)
def _store() -> dict:
    """(what, pair key) -> a measurement, for the whole server process."""
    return {}


def pass_times(pair: ModelPair) -> PassTimes:
    """The passes of this process's calibration generations for `pair` (measured on first use, with a
    progress bar)."""
    key = ("calibration", pair_key(pair))
    store = _store()
    if key not in store:
        ids = pair.tokenizer.encode(DEFAULTS.prompt)[-max(1, pair.context_length // 2):]
        bar = st.progress(0.0, text="Timing this machine's passes (once per server process)…")
        store[key] = pass_costs.calibrate(
            pair.target, pair.drafts, pass_costs.CALIBRATION.for_prompt(ids), repeats=CALIBRATION_REPEATS,
            pacing=admission.pacing(
                "timing this machine's passes",
                lambda f, text: bar.progress(min(f, 1.0), text=f"Timing this machine's passes: {text}")))
        bar.empty()
    return store[key]


def cost_profile(pair: ModelPair, draft_label: str | None = None) -> Costs:
    """c and v(γ) for the pair and one of its drafters (default: the first), from the runs' passes."""
    return pass_times(pair).profile(draft_label or next(iter(pair.drafts)))


def draft_costs(pair: ModelPair) -> dict[str, float]:
    """c (draft pass / target pass) of each of the pair's drafters."""
    return pass_times(pair).c()


def pass_sweep(pair: ModelPair, progress=None) -> dict[int, Measured]:
    """Measure one target pass over each k of SWEEP_KS afresh (interleaved repetitions, a generation
    slot one run at a time)."""
    return pass_costs.pass_sweep(pair.target, SWEEP_KS, CONTEXT, repeats=SWEEP_REPEATS, passes=SWEEP_PASSES,
                                 pacing=admission.pacing("timing one pass over k positions", progress))


def planning_policy(pair: ModelPair, policy):
    """`policy` planning with this machine's measured c and v(γ) (policies that plan with no costs come
    back as they are, and nothing is measured for them): the core's default costs are one machine's."""
    if not policy.plans_with_costs:
        return policy
    return policy.with_costs(cost_profile(pair).planning())
