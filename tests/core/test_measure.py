"""The one measurement method (specdec_core.analysis.stats, .pass_costs) on made-up timings, and the live race's
timing on the small test pair: interleaving order, medians and spreads, pass costs from the runs'
own passes, and wall-clock lanes with nothing but the work inside the timed span."""
import contextlib
import inspect
import time

import pytest

from specdec_core.analysis import pass_costs, race, stats
from specdec_core.analysis.pass_costs import PassTimes
from specdec_core.analysis.stats import Pacing, contest, interleave, measured
from specdec_core.request import GenerationRequest
from specdec_core.sampling_config import GREEDY
from specdec_core.trace import GenerationResult, RoundTrace

# --- interleaving -------------------------------------------------------------------------------------

def test_a_contest_alternates_its_order_every_repetition():
    log = []
    run = lambda name: (lambda: log.append(name))
    contest({"A": run("A"), "B": run("B")}, 4)
    assert log == ["A", "B", "B", "A", "A", "B", "B", "A"]
    log.clear()
    contest({"A": run("A"), "B": run("B"), "C": run("C")}, 2, warm_up=True)
    assert log == ["A", "B", "C"] + ["A", "B", "C", "C", "B", "A"]  # untimed warm-ups, then the repetitions
    with pytest.raises(ValueError, match="repeats"):
        contest({"A": run("A")}, 0)


def test_interleave_runs_contestants_in_that_order_each_in_its_own_hold():
    log, holds = [], []

    class Hold:
        def __enter__(self):
            holds.append("in")

        def __exit__(self, *exc):
            holds.append("out")

    results = interleave({"A": lambda: log.append("A") or len(log), "B": lambda: log.append("B") or len(log)},
                         repeats=3, pacing=Pacing(Hold))
    assert log == ["A", "B", "B", "A", "A", "B"]
    assert results == {"A": [1, 4, 5], "B": [2, 3, 6]}
    assert holds == ["in", "out"] * 6  # one run per hold: a server's slot is never held for a whole measurement


def test_interleave_reports_progress_only_between_runs():
    inside, seen = [], []
    running = {"now": False}

    def work():
        running["now"] = True
        time.sleep(0.001)
        running["now"] = False

    interleave({"A": work, "B": work}, 2,
               pacing=Pacing(progress=lambda f, text: (inside.append(running["now"]), seen.append(f))))
    assert inside == [False] * 4 and seen == [0.25, 0.5, 0.75, 1.0]


def test_a_busy_measurement_gets_two_more_repetitions_at_a_time_up_to_the_cap():
    log, texts = [], []
    values = iter([1.0, 3.0] + [1.0] * 7)  # A's 2nd run: a busy moment, which keeps the spread wide
    a = lambda: log.append("A") or next(values)
    b = lambda: log.append("B") or 1.0
    disagree = lambda so_far: measured(so_far["A"]).busy
    out = interleave({"A": a, "B": b}, 3, busy=disagree, max_repeats=9,
                     pacing=Pacing(progress=lambda f, t: texts.append((f, t))))
    assert len(out["A"]) == 9  # 3, then two more at a time while the spread stays wide: 5, 7, 9 (the cap)
    assert log == ["A", "B", "B", "A"] * 4 + ["A", "B"]  # still in alternating order
    assert texts[5] == (1.0, "Repetition 3 of 3: B") and texts[6] == (7 / 10, "Repetition 4 of up to 9 "
                                                                            "(the machine is busy): B")
    assert texts[-1][0] == 1.0

    quiet = interleave({"A": lambda: 1.0, "B": lambda: 1.0}, 3, busy=disagree, max_repeats=9)
    assert len(quiet["A"]) == 3  # runs that agree: no more repetitions
    assert len(interleave({"A": b}, 3, busy=lambda _: True)["A"]) == 3  # without a cap: just the 3
    with pytest.raises(ValueError, match="repeats"):
        interleave({"A": b}, 0)


def test_a_contest_warms_up_each_contestant_once_in_its_own_hold_then_interleaves():
    log, holds = [], []

    def hold():
        holds.append(1)
        return contextlib.nullcontext()

    done = stats.contest({"A": lambda: log.append("A") or len(log), "B": lambda: log.append("B") or len(log)},
                           2, pacing=Pacing(hold), warm_up=True)
    assert log == ["A", "B", "A", "B", "B", "A"] and len(holds) == 6  # warm-ups untimed, then A B, B A
    assert done.warm_up == {"A": 1, "B": 2} and done.results == {"A": [3, 6], "B": [4, 5]}
    assert done.repeats == 2
    assert done.measured("A", float) == measured([3, 6])
    assert done.ratios("A", "B", float).runs == (3 / 4, 6 / 5)  # repetition by repetition


def test_a_contest_grows_while_its_own_figure_disagrees():
    values = iter([1.0, 3.0] + [1.0] * 7)
    done = stats.contest({"A": lambda: next(values), "B": lambda: 1.0}, 3,
                           busy=lambda so_far: so_far.ratios("A", "B", float).busy, max_repeats=7)
    assert done.repeats == 7 and len(done.results["B"]) == 7
    with pytest.raises(ValueError, match="repeats"):
        stats.contest({"A": lambda: 1.0}, 0)


def test_decoding_time_leaves_the_prefill_out_and_is_per_new_token():
    a, b = _result([0.2] * 4), _result([0.4] * 4)  # 4 tokens each, 0.8 and 1.6 s of decoding
    a.prefill_s, a.total_s, b.prefill_s, b.total_s = 0.2, 1.0, 0.4, 2.0
    assert stats.decode_seconds(a) == pytest.approx(0.8)
    assert stats.decode_s_per_token(a) == pytest.approx(0.2)
    assert stats.decode_s_per_token([a, b]) == pytest.approx((0.8 + 1.6) / 8)  # pooled, not averaged


# --- median and spread ----------------------------------------------------------------------------------

def test_measured_median_range_and_text():
    m = measured([1.70, 1.55, 1.62, 1.60, 1.64])
    assert (m.median, m.low, m.high, m.n) == (1.62, 1.55, 1.70, 5)
    assert m.runs == (1.70, 1.55, 1.62, 1.60, 1.64)  # in the order measured
    assert m.text() == "1.62× (1.55–1.70, 5 runs)"
    assert m.spread == pytest.approx(0.15 / 1.62)
    assert not m.busy
    assert measured([0.0123]).text(" ms", 1, 1e3) == "12.3 ms (1 run)"
    with pytest.raises(ValueError):
        measured([])


def test_a_wide_spread_says_the_machine_was_busy():
    assert measured([1.0, 1.3, 1.1]).busy  # (1.3 - 1.0) / 1.1 > 0.25
    assert not measured([1.0, 1.2, 1.1]).busy
    assert not measured([5.0]).busy  # one run has no spread to judge


def test_ratios_pair_repetitions():
    m = stats.ratios([2.0, 3.0, 4.0], [1.0, 2.0, 2.0])
    assert m.runs == (2.0, 1.5, 2.0) and m.median == 2.0
    with pytest.raises(ValueError):
        stats.ratios([1.0], [1.0, 2.0])


def test_pass_seconds_is_the_lower_quartile():
    assert pass_costs.pass_seconds([4.0, 1.0, 3.0, 2.0, 5.0]) == 2.0
    assert pass_costs.pass_seconds([1.0, 2.0]) == 1.25
    assert pass_costs.pass_seconds([7.0]) == 7.0
    # Load only adds time: a third of the passes slowed down tenfold leaves the cost where it was.
    assert pass_costs.pass_seconds([1.0] * 6 + [10.0] * 3) == 1.0
    with pytest.raises(ValueError):
        pass_costs.pass_seconds([])


# --- pass costs from the runs' own passes ---------------------------------------------------------------

def _round(n_drafts: int, target_s: float, draft_s: list[float]) -> RoundTrace:
    return RoundTrace(index=0, position=0, draft_tokens=[0] * n_drafts, n_accepted=0, next_token=0,
                      next_kind="corrective", emitted=[0], q_draft=[1.0] * n_drafts, p_draft=[1.0] * n_drafts,
                      accept_prob=[1.0] * n_drafts, uniforms=None, draft_pass_s=draft_s, target_pass_s=target_s,
                      draft_passes=len(draft_s))


def _result(pass_s: list[float], rounds: list[RoundTrace] = ()) -> GenerationResult:
    return GenerationResult(tokens=[0] * len(pass_s), target_passes=len(pass_s), draft_passes=0, rounds=list(rounds),
                            token_kinds=[], target_pass_s=pass_s, prefill_s=0.0, total_s=sum(pass_s),
                            stop_reason="max_new_tokens", seed=0)


def test_pass_times_give_c_and_v_from_the_runs():
    times = PassTimes().add(_result([0.010] * 8))
    # Rounds of 3 drafts: target passes over 4 positions; the run's first draft pass reads the prompt.
    spec = [_round(3, 0.016, [0.050 if i == 0 else 0.003, 0.002, 0.001]) for i in range(6)]  # warming up
    times.add(_result([r.target_pass_s for r in spec], spec), "drafter A")
    times.add(_result([r.target_pass_s for r in spec], spec), "drafter B")
    p = times.profile("drafter A")
    assert p.target_s == 0.010 and p.verify_s == {1: 0.010, 4: 0.016}
    assert p.draft_s == pytest.approx(0.001)  # the warmest position of a round
    assert times.round_draft_seconds("drafter A") == pytest.approx(0.002)  # (3 + 2 + 1) / 3 ms: a round's mean
    assert p.c == pytest.approx(0.1) and p.v(3) == pytest.approx(1.6)
    assert times.c() == {"drafter A": pytest.approx(0.1), "drafter B": pytest.approx(0.1)}


def test_a_drafter_needing_more_rounds_gets_the_same_c():
    """Early passes of a round are slow (cold caches); a drafter that accepts less makes more rounds, and
    its short last round adds only slow early passes. c is the warm pass, so it does not move."""
    passes = [0.008, 0.007, 0.006, 0.005, 0.004, 0.003, 0.002]  # by position in a round of 7 drafts

    def rounds(full: int, last: int) -> list[RoundTrace]:
        return [_round(7, 0.02, passes) for _ in range(full)] + [_round(last, 0.02, passes[:last])]

    times = PassTimes().add(_result([0.010] * 8))
    for label, (full, last) in {"accepts more": (1, 4), "accepts less": (6, 2)}.items():
        spec = [_round(1, 0.02, [0.05])] + rounds(full, last)  # the prompt's pass first
        times.add(_result([r.target_pass_s for r in spec], spec), label)
    c = times.c()
    assert c["accepts more"] == pytest.approx(c["accepts less"]) == pytest.approx(0.002 / 0.010)
    # Pooling the two drafters' passes (lower quartile of all) would give 0.45 against 0.30 here.


def test_pass_times_without_a_plain_run_or_draft_passes():
    lookup = [_round(2, 0.012, []) for _ in range(3)]  # prompt lookup: no draft passes
    times = PassTimes().add(_result([0.012] * 3, lookup), "n-gram")
    with pytest.raises(ValueError, match="plain"):
        times.profile("n-gram")
    times.add(_result([0.010] * 4))
    assert times.profile("n-gram").c == 0.0


def test_gamma_one_keeps_its_draft_passes():
    spec = [_round(1, 0.015, [0.002]) for _ in range(5)]  # one draft pass per round: only "first" passes
    times = PassTimes().add(_result([0.01] * 3)).add(_result([0.015] * 5, spec), "d")
    assert times.profile("d").c == pytest.approx(0.2)


# --- the live race: wall-clock lanes --------------------------------------------------------------------

def test_lanes_take_no_callback_that_could_run_while_timed():
    for fn in (race.run_plain_lane, race.run_speculative_lane):
        assert not any(name.startswith("on_") for name in inspect.signature(fn).parameters)


def test_race_elapsed_is_wall_clock_and_slow_drawing_between_lanes_is_not_in_it(small_pair, monkeypatch):
    target, draft = small_pair
    calls, pause, skipped = [], 1000.0, [0.0]
    real = time.perf_counter
    # A page drawing its progress bar between lanes: the clock jumps 1000 s each time (no real sleep, so
    # the verdict does not depend on how long a lane takes on a busy machine).
    monkeypatch.setattr(time, "perf_counter", lambda: real() + skipped[0])

    def slow_progress(fraction, text):
        calls.append(fraction)
        skipped[0] += pause

    t0 = time.perf_counter()
    result = race.live_race(target, draft, GenerationRequest([1, 2, 3], 12, GREEDY, 0), 3, repeats=3, max_repeats=3,
                            pacing=Pacing(progress=slow_progress))
    wall = time.perf_counter() - t0
    assert calls == pytest.approx([0.0, 1 / 6, 2 / 6, 3 / 6, 4 / 6, 5 / 6, 1.0])  # the warm-up, then each lane
    assert result.identical and len(result.repetitions) == 3 and result.speedups.n == 3
    for plain, spec in result.repetitions:
        for lane in (plain, spec):
            # The lane's time is the generation's own wall time plus the clock reads around it ...
            assert lane.result.total_s <= lane.elapsed
            assert lane.elapsed < pause  # ... and none of the pauses is inside
            assert lane.times == sorted(lane.times) and lane.times[-1] <= lane.elapsed
    assert sum(p.elapsed + s.elapsed for p, s in result.repetitions) + 6 * pause <= wall
    assert result.speedups.runs == tuple(p.elapsed / s.elapsed for p, s in result.repetitions)
    assert result.speedup == result.speedups.median
    shown = result.standard.elapsed / result.speculative.elapsed
    assert shown == pytest.approx(result.speedups.median)  # the replayed repetition is the median one


def test_races_that_disagree_are_raced_again(small_pair, monkeypatch):
    target, draft = small_pair
    lane, calls = race.run_speculative_lane, []

    def slowed_once(*args):  # the second speculative lane is hit by a busy moment of the machine
        calls.append(1)
        out = lane(*args)
        if len(calls) == 2:
            out.elapsed += 0.5
        return out

    monkeypatch.setattr(race, "run_speculative_lane", slowed_once)
    result = race.live_race(target, draft, GenerationRequest([1, 2, 3], 6, GREEDY, 0), 3, repeats=3, max_repeats=7)
    assert result.speedups.busy and result.speedups.n == 7 == len(calls) == len(result.repetitions)


def test_replay_frames_show_both_lanes_at_once(small_pair):
    target, draft = small_pair
    result = race.live_race(target, draft, GenerationRequest([1, 2, 3], 6, GREEDY, 0), 3, repeats=1, max_repeats=1)
    frames = race.replay_frames(result, 10)
    assert frames[-1][1:] == (6, 6)
    assert all(a[1] <= b[1] and a[2] <= b[2] for a, b in zip(frames, frames[1:]))


def test_the_race_warms_up_and_takes_its_slots_through_its_one_pacing(small_pair):
    """The core owns the race's warm-up: it runs inside the pacing's slot, and every lane takes a slot of its
    own; nothing else is entered (the page takes no slot of its own)."""
    target, draft = small_pair
    slots = []

    @contextlib.contextmanager
    def slot():
        slots.append(1)
        yield

    result = race.live_race(target, draft, GenerationRequest([1, 2, 3], 6, GREEDY, 0), 3, repeats=1, max_repeats=1,
                            pacing=Pacing(slot))
    assert len(slots) == 1 + 2 and result.identical  # the warm-up, then the two lanes


def test_pass_times_say_where_their_costs_come_from():
    spec = [_round(3, 0.016, [0.009, 0.001, 0.001]) for _ in range(2)]
    times = PassTimes().add(_result([0.010] * 5)).add(_result([0.016] * 2, spec), "d")
    assert times.describe().startswith("from the passes short generations made here: 7 target passes over 1 to 4 "
                                       "positions and 5 draft passes")


def test_tree_against_chain_is_one_contest_with_its_spreads(small_pair):
    from specdec_core.analysis.trees import CONTESTANTS, tree_vs_chain
    target, draft = small_pair
    holds = []

    def hold():
        holds.append(1)
        return contextlib.nullcontext()

    out = tree_vs_chain(target, draft, GenerationRequest([1, 2, 3], 8, GREEDY, 0), (2, 1), repeats=3,
                        pacing=Pacing(hold))
    assert len(holds) == 3 + 3 * 3  # one warm-up each, then every run in its own hold
    assert out["repeats"] == 3 and out["identical"]
    for name in CONTESTANTS:
        assert out[name]["s_per_token"].n == 3 and out[name]["speedup"].n == 3
    assert out["plain"]["speedup"].runs == (1.0, 1.0, 1.0)  # plain over itself, repetition by repetition


def test_pacing_is_one_object_for_the_slot_and_the_progress():
    log, seen = [], []

    @contextlib.contextmanager
    def slot():
        log.append("in")
        yield
        log.append("out")

    pace = stats.Pacing(slot, lambda f, text: seen.append((round(f, 3), text)))
    contest({"A": lambda: log.append("A"), "B": lambda: log.append("B")}, 1, pacing=pace.part(0.5, 1.0, "half: "))
    assert log == ["in", "A", "out", "in", "B", "out"]  # one run per slot
    assert [f for f, _ in seen] == [0.75, 1.0] and all(text.startswith("half: ") for _, text in seen)
    assert stats.Pacing().part(0.0, 0.5).progress is None  # nothing to report: nothing wrapped
