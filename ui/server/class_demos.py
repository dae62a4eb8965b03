"""Predict-the-demo questions of class mode: the room votes, then the teacher runs the demo live and the
demo, not the question file, says which option was right.

A question's "demo" object (assets/class_quiz.json) names a run and its parameters:

    {"chapter": "chapters/race.py", "run": "gamma_pair", "gammas": [4, 8]}           γ = 8 against γ = 4
    {"chapter": "chapters/race.py", "run": "race", "gamma": 4}                        speculative against plain
    {"chapter": "chapters/round_by_round.py", "run": "alpha_by_temperature",
     "temperatures": [0, 1], "gamma": 4}                                              measured α at two temperatures

Each run calls the same core functions as the chapter it names (race.gamma_sweep, race.live_race,
speculative_generate with measured_alpha) on the sidebar's prompt and sampling settings, and `verdict`
maps its result to an option index with the rule the question's options state: a timing wins only
when the repetitions' ranges do not overlap; α differs when the gap is at least ALPHA_SAME.
Options are, in order: the first wins / the second wins / too close to call.

These questions sit with the others in assets/class_quiz.json, with "answer": null (the store's loader,
classroom.load_bank, allows that only beside a "demo"); `bank()` loads the file and checks each demo's run.
"""
from dataclasses import dataclass
from pathlib import Path

import classroom
from specdec_core import GenerationRequest, SamplingConfig, speculative_generate
from specdec_core.analysis import race
from specdec_core.analysis.round_stats import measured_alpha
from specdec_core.analysis.stats import Pacing

RUNS = ("gamma_pair", "race", "alpha_by_temperature")
ALPHA_SAME = 0.05  # measured α closer than this counts as "about the same"
ALPHA_SEEDS = 3  # seeds per temperature: one short text gives a noisy α
SWEEP_REPEATS = 3  # as the race chapter's γ sweep
FIRST, SECOND, CLOSE = 0, 1, 2  # the option each outcome points to


def bank(path: Path = classroom.BANK_FILE) -> classroom.Bank:
    """The class quiz's questions, each predict-the-demo question's demo checked (BadInput when one names
    no run this module has, or bad parameters)."""
    loaded = classroom.load_bank(path)
    for q in loaded.questions:
        if q.demo is not None:
            try:
                spec(q.demo)
            except ValueError as err:
                raise classroom.BadInput(f"question {q.id!r}: {err}") from err
    return loaded


@dataclass(frozen=True)
class Spec:
    """A validated demo object."""
    run: str
    chapter: str
    gammas: tuple[int, int] = (4, 8)
    gamma: int = 4
    temperatures: tuple[float, float] = (0.0, 1.0)


def spec(demo) -> Spec:
    """The demo object of a question, checked; ValueError says what is wrong."""
    if demo is None or not hasattr(demo, "get"):
        raise ValueError("this question has no demo to run")
    run, chapter = demo.get("run"), demo.get("chapter", "")
    if run not in RUNS:
        raise ValueError(f"unknown demo run {str(run)[:40]!r}: expected one of {', '.join(RUNS)}")

    def ints(values, n=2):
        if not isinstance(values, list | tuple) or len(values) != n or not all(
                isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 16 for v in values):
            raise ValueError(f"the demo needs {n} draft lengths γ between 1 and 16")
        return tuple(values)

    if run == "gamma_pair":
        return Spec(run, chapter, gammas=ints(demo.get("gammas", [4, 8])))
    gamma = ints([demo.get("gamma", 4)], 1)[0]
    if run == "race":
        return Spec(run, chapter, gamma=gamma)
    temps = demo.get("temperatures", [0, 1])
    if not isinstance(temps, list | tuple) or len(temps) != 2 or not all(
            isinstance(t, int | float) and not isinstance(t, bool) and 0 <= t <= 2 for t in temps):
        raise ValueError("the demo needs two temperatures between 0 and 2")
    return Spec(run, chapter, gamma=gamma, temperatures=(float(temps[0]), float(temps[1])))


def describe(s: Spec) -> str:
    """What pressing the demo button will run, in one sentence."""
    if s.run == "gamma_pair":
        a, b = s.gammas
        return (f"times plain decoding and speculative decoding at γ = {a} and γ = {b}, interleaved, "
                f"{SWEEP_REPEATS} times over, on this machine (the race chapter's γ sweep)")
    if s.run == "race":
        return (f"races plain against speculative decoding at γ = {s.gamma}, several times, taking turns "
                "(the race chapter's live race)")
    t0, t1 = s.temperatures
    return (f"decodes at temperature {t0:g} and {t1:g} with γ = {s.gamma}, {ALPHA_SEEDS} seeds each, and measures α "
            "(the mean of min(1, p/q) over the drafts the target judged)")


def run(s: Spec, pair, ids, settings, pacing: Pacing) -> dict:
    """Run the demo on the loaded pair and the sidebar prompt ids; `pacing` (a generation slot around
    each timed run, progress between runs), as the chapters do."""
    if s.run == "gamma_pair":
        sweep = race.gamma_sweep(pair.target, pair.draft, settings.request(ids), list(s.gammas), repeats=SWEEP_REPEATS,
                                 pacing=pacing)
        return {"rows": {row["gamma"]: row["measured"] for row in sweep["rows"]}, "alpha": sweep["alpha"]}
    if s.run == "race":
        live = race.live_race(pair.target, pair.draft, settings.request(ids), s.gamma, pacing=pacing)
        return {"speedups": live.speedups, "alpha": measured_alpha(live.speculative.result.rounds)}
    alphas = {}
    steps = len(s.temperatures) * ALPHA_SEEDS
    for i, t in enumerate(s.temperatures):
        rounds = []
        sampling = SamplingConfig.from_controls(t, settings.top_k, settings.top_p)
        for k in range(ALPHA_SEEDS):
            pacing.report((i * ALPHA_SEEDS + k) / steps, f"temperature {t:g}, seed {settings.seed + k}")
            with pacing.slot():
                asked = GenerationRequest(ids, settings.max_new_tokens, sampling, settings.seed + k).fixed_length()
                res = speculative_generate(pair.target, pair.draft, asked, gamma=s.gamma, trace=False)
            rounds += res.rounds
        alphas[t] = measured_alpha(rounds)
    pacing.report(1.0, "done")
    return {"alphas": alphas}


def verdict(s: Spec, result: dict) -> tuple[int, str]:
    """(the option the demo points to, a sentence saying why, with the figures)."""
    if s.run == "gamma_pair":
        a, b = (result["rows"][g] for g in s.gammas)
        g0, g1 = s.gammas
        figures = f"γ = {g0}: {a.text()}; γ = {g1}: {b.text()} speedup over plain decoding"
        if b.low > a.high:
            return FIRST, f"Faster at γ = {g1}: {figures}. Every run at γ = {g1} beat every run at γ = {g0}."
        if b.high < a.low:
            return SECOND, f"Slower at γ = {g1}: {figures}. Every run at γ = {g1} lost to every run at γ = {g0}."
        return CLOSE, f"Too close to call: {figures}. The ranges overlap, so this machine cannot tell them apart."
    if s.run == "race":
        m = result["speedups"]
        if m.low > 1:
            return FIRST, f"Faster: speculative decoding won every race, speedup {m.text()}."
        if m.high < 1:
            return SECOND, f"Slower: speculative decoding lost every race, speedup {m.text()}."
        return CLOSE, f"Too close to call: speedup {m.text()}; the range covers 1×."
    (t0, a0), (t1, a1) = result["alphas"].items()
    figures = f"α = {a0:.2f} at temperature {t0:g}, {a1:.2f} at temperature {t1:g}"
    if a0 != a0 or a1 != a1:  # NaN: no draft was judged
        return CLOSE, f"No draft was judged at one temperature ({figures}): try a longer text."
    if abs(a0 - a1) < ALPHA_SAME:
        return CLOSE, f"About the same: {figures} (within {ALPHA_SAME})."
    return (FIRST, f"Higher at temperature {t0:g}: {figures}.") if a0 > a1 else \
        (SECOND, f"Higher at temperature {t1:g}: {figures}.")
