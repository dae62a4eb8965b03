"""The chapters Wall-Clock Race, Identical Outputs, Where the Speedup Lives, Impact & Lineage and Quiz,
and the core modules behind them (race, lab, usage, quiz). Bundled pair, few tokens, except the lab's
documented run, which uses its documented sample size on purpose."""
import json
import re

import numpy as np
import pytest
import torch

from specdec_core import autoregressive_generate, speculative_generate, theory
from specdec_core.analysis import lab, race
from ui import quiz
from specdec_core.broken import BROKEN_RULES
from specdec_core.pairs import load_pair
from specdec_core.sampler import EXACT
from specdec_core.sampling import GREEDY, SamplingConfig
from specdec_core.trace import GenerationResult, RoundTrace
from specdec_core.analysis.usage import pass_usage, usage_summary
from ui import chapters, settings
from tests.app.helpers import chart, metric, page

NEW_PAGES = ["chapters/race.py", "chapters/identical_outputs.py", "chapters/speedup_lives.py", "chapters/impact.py", "chapters/quiz.py"]


@pytest.fixture(scope="module")
def pair():
    return load_pair("shakespeare")


@pytest.fixture(scope="module")
def prompt_ids(pair):
    return pair.tokenizer.encode(settings.DEFAULTS.prompt)


# --- every page renders ---------------------------------------------------------------------------------

def test_new_chapters_follow_the_alpha_dial_in_order():
    later = [c for c in chapters.CHAPTERS if c.path != "chapters/trees.py"]  # its own suite: test_chapter_trees.py
    titles = [c.title for c in later]
    start = titles.index("The α Dial") + 1
    assert titles[start:start + 5] == ["Wall-Clock Race", "Identical Outputs", "Where the Speedup Lives",
                                       "Impact & Lineage", "Quiz"]
    assert [c.path for c in later[start:start + 5]] == NEW_PAGES


@pytest.mark.parametrize("path", NEW_PAGES)
def test_page_renders_with_a_header_and_intro(path):
    at = page(path, max_new=8)
    assert at.header or at.subheader
    assert any("Try this" in i.value for i in at.info), path


# --- Wall-Clock Race ------------------------------------------------------------------------------------

def test_race_greedy_lanes_produce_identical_texts():
    at = page("chapters/race.py", max_new=12, temp=0, gamma=3)
    at.button(key="race_run").click().run()
    assert not at.exception
    live = at.session_state["race_live"]["race"]
    assert live.identical and len(live.standard.tokens) == 12
    assert live.standard.target_passes == 12 and live.speculative.target_passes <= 12
    assert any("Identical texts" in m.value for m in at.success)
    assert re.fullmatch(r"\d+\.\d\d×", metric(at, "Measured speedup"))  # the median alone; the spread beside it
    assert live.speedups.n == 5 and metric(at, "Measured speedup") == f"{live.speedup:.2f}×"
    spread = live.speedups.text()  # "1.62× (1.55–1.70, 5 runs)", in a caption or, when busy, a warning
    assert any(spread in el.value for el in [*at.caption, *at.warning])
    elapsed = [m.value for m in at.metric if m.label == "Elapsed"]  # the lanes show their wall-clock times
    assert elapsed == [f"{live.standard.elapsed * 1e3:.0f} ms", f"{live.speculative.elapsed * 1e3:.0f} ms"]
    assert live.standard.result.total_s <= live.standard.elapsed  # nothing subtracted from the wall clock
    spec = chart(at, "race_chart")
    assert [t["name"] for t in spec["data"]] == ["standard", "speculative"]
    assert spec["data"][0]["y"][-1] == 12 == spec["data"][1]["y"][-1]
    assert all(b >= a for a, b in zip(spec["data"][1]["x"], spec["data"][1]["x"][1:]))  # time only moves forward


def test_race_simulation_uses_the_theory_module():
    at = page("chapters/race.py", max_new=8)
    at.slider(key="race_alpha").set_value(0.8).run()
    at.slider(key="race_gamma").set_value(4).run()
    at.slider(key="race_c").set_value(0.02).run()
    assert metric(at, "Ideal hardware: expected speedup") == f"{theory.speedup(0.8, 4, 0.02, 1.0):.2f}×"
    lines = chart(at, "race_sim_chart")["data"]
    assert len(lines) == 3 and all(t["y"][-1] == 40 for t in lines)
    assert lines[0]["x"][-1] == 40  # standard: one token per target pass


def test_race_gamma_sweep_draws_measured_points_over_the_formula():
    at = page("chapters/race.py", max_new=8, temp=0)
    at.button(key="race_sweep").click().run()
    assert not at.exception
    sweep = at.session_state["race_sweep_result"]["sweep"]
    assert [r["gamma"] for r in sweep["rows"]] == list(range(1, 9))
    assert all(r["speedup"] > 0 and r["tokens_per_pass"] >= 1 for r in sweep["rows"])
    traces = chart(at, "race_sweep_chart")["data"]
    measured = next(t for t in traces if t["name"] == "measured here")
    assert measured["x"] == list(range(1, 9))
    ideal = next(t for t in traces if t["name"].startswith("formula, ideal"))
    alpha = sweep["alpha"]  # the formula uses the α the sweep measured, and one c for every γ
    c = theory.expected_tokens(alpha, 1) / ideal["y"][0] - 1
    assert ideal["y"] == pytest.approx([theory.speedup(alpha, g, c, 1.0) for g in range(1, 9)], rel=1e-9)


def test_simulated_race_follows_the_model():
    plain = race.simulated_plain(40)
    assert plain.times == [float(i) for i in range(1, 41)] and plain.finish == 40
    lane = race.simulated_speculative(0.8, 4, 0.02, 40, v=1.0, seed=3)
    assert len(lane.times) == 40 and all(b >= a for a, b in zip(lane.times, lane.times[1:]))
    assert lane.finish == pytest.approx(lane.passes * (4 * 0.02 + 1))
    finishes = [race.simulated_speculative(0.8, 4, 0.02, 400, seed=s).finish for s in range(200)]
    assert np.mean(finishes) == pytest.approx(race.expected_finish(0.8, 4, 0.02, 400), rel=0.03)
    with pytest.raises(ValueError):
        race.simulated_speculative(0.8, 4, -0.1)


# --- Identical Outputs: the exactness lab ----------------------------------------------------------------

@pytest.mark.parametrize("n_tokens", [1, 2])
@pytest.mark.parametrize("sampling", [SamplingConfig(1.0), SamplingConfig(0.8, top_k=20)], ids=["t1", "t0.8-k20"])
def test_lab_replay_gives_the_generators_tokens(pair, prompt_ids, n_tokens, sampling):
    """The lab's fast replay draws what speculative_generate / autoregressive_generate draw for the same seed."""
    dist = lab.Distributions(pair.target, pair.draft, prompt_ids)
    spec_same = plain_same = 0
    for seed in range(12):
        replay = lab.speculative_sample(dist, n_tokens, 3, sampling, torch.Generator().manual_seed(seed))
        real = speculative_generate(pair.target, pair.draft, prompt_ids, gamma=3, max_new_tokens=n_tokens + 1,
                                    sampling=sampling, seed=seed, eos_token_id=None, trace=False).tokens[:n_tokens]
        spec_same += replay == tuple(real)
        replay = lab.plain_sample(dist, n_tokens, sampling, torch.Generator().manual_seed(seed))
        real = autoregressive_generate(pair.target, prompt_ids, n_tokens, sampling, seed=seed, eos_token_id=None).tokens
        plain_same += replay == tuple(real)
    assert spec_same >= 11 and plain_same >= 11  # a cached vs uncached pass may differ in the last bits


def test_lab_cells_are_a_partition_of_the_exact_distribution(pair, prompt_ids):
    dist = lab.Distributions(pair.target, pair.draft, prompt_ids)
    for n_tokens in (1, 2):
        cells = lab.exact_cells(dist, n_tokens, SamplingConfig(1.0), 2000)
        assert cells.probs.sum() == pytest.approx(1.0) and (cells.probs >= 0).all()
        assert all(p * 2000 >= lab.MIN_EXPECTED for key, p in zip(cells.keys, cells.probs) if lab.OTHER not in key)
        outcome = (int(dist.p((), SamplingConfig(1.0)).argmax()),) * n_tokens
        assert 0 <= cells.cell_of(outcome) < len(cells.keys)


def test_lab_rejects_bad_inputs(pair, prompt_ids):
    with pytest.raises(ValueError, match="K must be"):
        lab.run_lab(pair.target, pair.draft, prompt_ids, k=lab.MAX_K + 1)
    with pytest.raises(ValueError, match="temperature"):
        lab.run_lab(pair.target, pair.draft, prompt_ids, k=200, sampling=GREEDY)
    with pytest.raises(ValueError, match="1 or 2"):
        lab.run_lab(pair.target, pair.draft, prompt_ids, k=200, n_tokens=3)
    with pytest.raises(ValueError, match="empty"):
        lab.Distributions(pair.target, pair.draft, [])


def test_chi_square_catches_impossible_outcomes_and_skewed_counts():
    cells = lab.Cells([(0,), (1,), (lab.OTHER,)], np.array([0.5, 0.5, 0.0]), {(0,): 0, (1,): 1, (lab.OTHER,): 2}, 1)
    assert lab.chi_square(np.array([500, 500, 0]), cells).passes
    assert not lab.chi_square(np.array([600, 400, 0]), cells).passes
    assert lab.chi_square(np.array([500, 499, 0]), cells, impossible=1).pvalue == 0.0


@pytest.fixture(scope="module")
def documented_runs(pair, prompt_ids):
    """The page's documented run: default settings, the documented prefix, n tokens, K and seed."""
    prefix = prompt_ids[:lab.DOCUMENTED_PREFIX_TOKENS]
    dist = lab.Distributions(pair.target, pair.draft, prefix)
    return {rule.name: lab.run_lab(pair.target, pair.draft, prefix, n_tokens=lab.DOCUMENTED_N_TOKENS,
                                   k=lab.DOCUMENTED_K, gamma=settings.DEFAULTS.gamma,
                                   sampling=settings.DEFAULTS.sampling, rule=rule, seed=lab.DOCUMENTED_SEED,
                                   with_plain=rule is EXACT, dist=dist)
            for rule in (EXACT, *BROKEN_RULES)}


def test_lab_exact_rule_passes_at_the_documented_sample_size(documented_runs):
    res = documented_runs[EXACT.name]
    assert res.k == lab.DOCUMENTED_K <= lab.MAX_K
    assert res.speculative_test.df >= 2, "the documented prefix must give the test something to test"
    assert res.speculative_test.passes, res.speculative_test
    assert res.plain_test.passes, res.plain_test


@pytest.mark.parametrize("rule", BROKEN_RULES, ids=lambda r: r.name)
def test_lab_broken_rule_fails_at_the_documented_sample_size(documented_runs, rule):
    res = documented_runs[rule.name]
    assert not res.speculative_test.passes, f"{rule.name} passed (p = {res.speculative_test.pvalue:.3g})"


def test_identical_outputs_page_greedy_diff_is_empty():
    at = page("chapters/identical_outputs.py", max_new=10, gamma=3)
    assert any("(empty" in c.value for c in at.code)
    assert any(m.value.startswith("Identical") for m in at.success)


def test_identical_outputs_page_lab_and_broken_rules(documented_runs):
    """Default settings = the documented run: the page shows the same verdicts as the core."""
    at = page("chapters/identical_outputs.py", max_new=10)
    assert at.number_input(key="id_k").value == lab.DOCUMENTED_K
    at.button(key="id_sample").click().run()
    assert not at.exception
    res = at.session_state["id_result"]["result"]
    assert res.speculative_test.pvalue == pytest.approx(documented_runs[EXACT.name].speculative_test.pvalue)
    hist = chart(at, "id_hist")["data"]
    assert [t["name"] for t in hist] == ["exact p", f"speculative ({EXACT.name})", "plain sampling"]
    at.button(key="id_break").click().run()
    assert not at.exception
    verdicts = {r["rule"]: r["verdict"] for r in at.session_state["id_break_result"]["rows"]}
    assert verdicts == {EXACT.name: "passes", **{r.name: "FAILS" for r in BROKEN_RULES}}


# --- Where the Speedup Lives -------------------------------------------------------------------------------

def _round(index, position, drafts, n_accepted, kind, emitted):
    n = len(drafts)
    return RoundTrace(index=index, position=position, draft_tokens=drafts, n_accepted=n_accepted, next_token=99,
                      next_kind=kind, emitted=emitted, q_draft=[1.0] * n, p_draft=[1.0] * n, accept_prob=[1.0] * n,
                      uniforms=None, draft_pass_s=[0.0] * n, target_pass_s=0.0, draft_passes=n)


def test_pass_usage_marks_used_and_discarded_distributions():
    rounds = [_round(0, 0, [1, 2, 3], 1, "corrective", [1, 99]),  # 4 computed: accepted, corrective, 2 discarded
              _round(1, 2, [4, 5, 6], 3, "bonus", [4, 5, 6, 99])]  # 4 computed, all used
    result = GenerationResult([1, 99, 4, 5, 6, 99], 2, 6, rounds, [], [0.0, 0.0], 0.0, 0.0, "max_new_tokens", 0)
    frame = pass_usage(result)
    assert list(frame["status"]) == ["accepted", "corrective", "discarded", "discarded",
                                     "accepted", "accepted", "accepted", "bonus"]
    assert list(frame["position"]) == [0, 1, 2, 3, 2, 3, 4, 5]
    assert usage_summary(frame) == {"passes": 2, "computed": 8, "used": 6, "used_share": 0.75, "tokens_per_pass": 3.0}
    plain = GenerationResult([7, 8], 2, 0, [], ["target"] * 2, [0.0, 0.0], 0.0, 0.0, "max_new_tokens", 0)
    assert list(pass_usage(plain)["status"]) == ["target", "target"]


def test_speedup_lives_grid_from_real_traces():
    at = page("chapters/speedup_lives.py", max_new=16, temp=0, gamma=4)
    plain = chart(at, "sl_grid_plain")["data"]
    assert len(plain) == 1 and plain[0]["x"] == plain[0]["y"] == list(range(1, 17))  # the diagonal
    spec = chart(at, "sl_grid_spec")["data"]
    used = sum(len(t["x"]) for t in spec if not t["name"].startswith("computed"))
    assert used == 16  # one used distribution per token
    # The lossless-vs-lossy table is measured behind a button; once measured, this process keeps it.
    measured = at.button(key="sl_fidelity_run").label == "Measure again"
    assert bool(at.dataframe) == measured
    assert any("latency arbitrage" in m.value for m in at.success)
    at.radio(key="sl_drafter").set_value("n-gram lookup (no model)").run()
    assert not at.exception


# --- Impact & Lineage ---------------------------------------------------------------------------------------

def test_impact_shootout_measures_every_drafter(pair):
    at = page("chapters/impact.py", max_new=10, temp=0, gamma=3)
    at.radio(key="im_prompt").set_value("repeating").run()
    at.button(key="im_run").click().run()
    assert not at.exception
    rows = at.session_state["im_result"]["out"]["rows"]
    assert [r["drafter"] for r in rows] == [f"model: {label}" for label in pair.drafts] + [
        "n-gram prompt lookup", "unigram (context counts)"]
    assert all(r["speedup"] > 0 and r["tokens_per_pass"] >= 1 for r in rows)
    assert next(r for r in rows if r["drafter"] == "n-gram prompt lookup")["draft_passes_per_token"] == 0
    assert all(r["measured"].n == 3 and r["measured"].low <= r["speedup"] <= r["measured"].high for r in rows)
    assert next(r for r in rows if r["drafter"] == "n-gram prompt lookup")["c"] == 0
    assert all(r["c"] > 0 for r in rows if r["drafter"].startswith("model: "))  # from the runs' own draft passes
    assert any(re.search(r"× \(\d+\.\d\d–\d+\.\d\d, 3 runs\)", el.value) for el in [*at.caption, *at.warning])
    assert len(at.dataframe[-1].value) == len(rows)
    assert any("Medusa" in m.value for m in at.markdown) and any("first token" in m.value.lower() for m in at.markdown)


# --- Quiz ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def bank():
    return quiz.load(chapters={c.path for c in chapters.CHAPTERS})


def test_quiz_file_covers_every_chapter(bank):
    assert len(bank) >= 12
    covered = {q.chapter for q in bank}
    assert covered == {c.path for c in chapters.CHAPTERS if c.path != "chapters/quiz.py"}
    assert sum(q.kind == "numeric" for q in bank) >= 3
    text = " ".join(q.prompt + " " + " ".join(q.options) for q in bank).lower()
    for misconception in ("p(x) ≥ q(x)", "temperature 1.0", "first token", "identical, token for token"):
        assert misconception.lower() in text, misconception


def test_quiz_numeric_answers_match_theory(bank):
    numeric = {q.id: q for q in bank if q.kind == "numeric"}
    for q in numeric.values():
        assert q.answer == getattr(theory, q.function)(**dict(q.args))
        assert q.is_correct(round(q.answer, 2)) and not q.is_correct(q.answer + 0.05) and not q.is_correct("abc")
    assert numeric["expected-tokens"].answer == pytest.approx((1 - 0.8 ** 5) / 0.2)  # 3.3616
    assert numeric["walltime-speedup"].answer == pytest.approx(3.3616 / 1.2)
    assert numeric["optimal-gamma"].answer == 3


def test_quiz_order_is_shuffled_by_seed(bank):
    ids = lambda seed: [q.id for q in quiz.shuffled(bank, seed)]
    assert ids(1) == ids(1) and ids(1) != ids(2) and sorted(ids(1)) == sorted(q.id for q in bank)


def test_quiz_rejects_malformed_files(tmp_path):
    bad = tmp_path / "quiz.json"
    bad.write_text(json.dumps({"questions": [{"id": "x", "kind": "numeric", "chapter": "chapters/home.py", "prompt": "?",
                                              "explanation": ".", "compute": {"function": "eval", "args": {}}}]}))
    with pytest.raises(ValueError, match="compute.function"):
        quiz.load(bad)
    bad.write_text(json.dumps({"questions": [{"id": "x", "kind": "choice", "chapter": "chapters/nope.py", "prompt": "?",
                                              "explanation": ".", "options": ["a", "b"], "answer": 0}]}))
    with pytest.raises(ValueError, match="unknown chapter"):
        quiz.load(bad, chapters={"chapters/home.py"})


def _answer(at, bank_by_id, right: bool) -> str:
    state = at.session_state["qz"]
    q = bank_by_id[state["order"][state["index"]]]
    key = f"qz_{q.id}_{state['attempt']}"
    if q.kind == "choice":
        value = q.answer if right else (q.answer + 1) % len(q.options)
        at.radio(key=key).set_value(value).run()
    else:
        at.number_input(key=key).set_value(round(q.answer, 2) + (0 if right else 1.0)).run()
    at.button(key="qz_check").click().run()
    assert not at.exception
    return q.id


def test_quiz_page_scores_reviews_and_retries(bank):
    by_id = {q.id: q for q in bank}
    at = page("chapters/quiz.py", seed=7)
    first_order = list(at.session_state["qz"]["order"])
    assert first_order == [q.id for q in quiz.shuffled(bank, 7 * 1009)]
    wrong = set()
    for i in range(len(bank)):
        qid = _answer(at, by_id, right=i % 4 != 0)
        if i % 4 == 0:
            wrong.add(qid)
            assert any("Not quite" in e.value for e in at.error)
        else:
            assert any(m.value.startswith("**Right.**") for m in at.success)
        assert any(link.proto.label == f"Go to the chapter: {chapters_title(by_id[qid].chapter)}"
                   for link in at.get("page_link"))
        at.button(key="qz_next").click().run()
    expected = len(bank) - len(wrong)
    assert at.subheader[-1].value == f"Score: {expected} / {len(bank)}"
    review = at.dataframe[-1].value
    assert list(review["result"]).count("✓") == expected and len(review) == len(bank)
    at.button(key="qz_retry").click().run()
    state = at.session_state["qz"]
    assert state["index"] == 0 and state["answers"] == {} and state["order"] != first_order


def chapters_title(path: str) -> str:
    return next(c.title for c in chapters.CHAPTERS if c.path == path)
