"""Draft-length policies on the pages: the sidebar/URL setting (bounded, constant γ by default), the
step-through's per-round γ and stop reason, and the α Dial's fixed-against-adaptive race with its
calibration chart."""

import pytest

from specdec_core import speculative_generate
from specdec_core.analysis.policy_compare import PLAIN
from specdec_core.policies import STOP_IN_WORDS, describe, make_policy
from tests.app.helpers import chart, page
from ui.state import settings


def test_links_without_a_policy_keep_constant_gamma_and_write_no_policy_keys():
    s, warnings = settings.settings_from_query({"gamma": "5"})
    assert s.policy == "constant" and s.draft_policy.gamma == 5 and not warnings
    assert not set(s.to_query()) & {"policy", "pmax", "pthr", "psig"}


def test_policy_values_from_a_link_are_bounded_with_a_message():
    s, warnings = settings.settings_from_query({"policy": "confidence", "pthr": "7", "pmax": "99", "psig": "top"})
    assert (s.policy, s.policy_threshold, s.policy_max_gamma, s.policy_signal) == ("confidence", 1.0, 16, "top")
    assert len(warnings) == 2 and any("threshold" in w for w in warnings)
    s, warnings = settings.settings_from_query({"policy": "<script>", "psig": "entropy"})
    assert s.policy == "constant" and s.policy_signal == "margin" and len(warnings) == 2
    s, _ = settings.settings_from_query({"policy": "heuristic", "gamma": "3", "pmax": "6"})
    assert s.to_query()["policy"] == "heuristic" and settings.settings_from_query(s.to_query())[0] == s


def test_round_by_round_shows_each_rounds_gamma_and_why_it_stopped(pair):
    at = page("chapters/round_by_round.py", max_new=16, temp=0, policy="confidence", pthr=0.3, pmax=6)
    s = at.session_state["settings"]
    expected = speculative_generate(pair.target, pair.draft, pair.tokenizer.encode(s.prompt),
                                    gamma=make_policy("confidence", s.gamma, 6, 0.3), max_new_tokens=16,
                                    sampling=s.sampling)
    first = expected.rounds[0]
    text = " ".join(m.value for m in at.markdown)
    assert f"This round's γ: **{first.gamma}** · drafted **{len(first.draft_tokens)}**" in text
    assert STOP_IN_WORDS[first.draft_stop] in text
    assert "confidence stop" in " ".join(c.value for c in at.caption)


def test_alpha_dial_races_fixed_and_adaptive_policies():
    at = page("chapters/alpha_dial.py", max_new=12, temp=0)
    at.multiselect(key="ad_pol_fixed").set_value([3]).run()
    at.slider(key="ad_pol_repeats").set_value(2).run()
    at.slider(key="ad_pol_prompts").set_value(1).run()
    at.button(key="ad_pol_run").click().run()
    assert not at.exception, at.exception
    rows = at.session_state["ad_policies"]["rows"]
    labels = [r["policy"] for r in rows]
    assert labels[0] == PLAIN and labels[1] == "fixed γ = 3" and len(labels) == 7
    for r in rows[1:]:
        assert r["repeats"] == 2 and r["speedup_low"] <= r["speedup"] <= r["speedup_high"]
        assert r["mean_acceptance_length"] >= 1 and r["oracle_speedup"] >= r["modelled_speedup"] - 1e-9
    points = [t for t in chart(at, "ad_pol_chart")["data"] if t.get("mode") == "markers"]
    assert len(points) == 6 and points[0]["x"] == [3]
    bars = chart(at, "ad_pol_calibration")["data"][0]
    assert bars["type"] == "bar" and all(0 <= y <= 1 for y in bars["y"])


def test_the_sidebar_offers_the_policy_and_writes_it_into_the_url():
    at = page("chapters/round_by_round.py", max_new=8, temp=0)
    assert not [w for w in at.number_input if w.key == "s_policy_threshold"]  # shown only for a confidence stop
    assert "policy" not in at.query_params  # constant γ: the link stays as it was before policies
    at.selectbox(key="s_policy").set_value("confidence").run()
    assert not at.exception, at.exception
    at.number_input(key="s_policy_threshold").set_value(0.1).run()
    assert at.session_state["settings"].describe_policy().startswith("confidence stop")
    assert at.query_params["policy"] == "confidence" and at.query_params["pthr"] == "0.1"


class RecordedPair:
    """A pair as far as the settings need one: its adaptive default per drafter."""
    def adaptive_policy(self, drafter: str = "draft") -> str:
        return {"draft": "heuristic", "eagle": "confidence"}.get(drafter, "hybrid")


def test_the_adaptive_default_comes_from_a_link_and_resolves_per_drafter():
    s, warnings = settings.settings_from_query({"policy": "adaptive", "pmax": "7"})
    assert s.policy == settings.ADAPTIVE_DEFAULT and not warnings
    assert settings.settings_from_query(s.to_query())[0] == s
    with pytest.raises(ValueError, match="for_drafter"):
        _ = s.draft_policy  # which policy it is depends on the drafter
    recorded = RecordedPair()
    assert s.for_drafter(recorded).draft_policy.name == "heuristic"
    eagle = s.for_drafter(recorded, "eagle").draft_policy
    assert eagle.name == "confidence" and eagle.max_gamma == 7
    assert s.describe_policy(recorded, "eagle").startswith(describe(eagle))
    plain = settings.settings_from_query({"policy": "hybrid"})[0]
    assert plain.for_drafter(recorded, "eagle") is plain  # a policy the user named stays the one used


def test_the_step_through_runs_each_drafter_with_its_own_adaptive_default(pair):
    at = page("chapters/round_by_round.py", max_new=12, temp=0, policy="adaptive")
    assert not at.exception, at.exception
    at.radio(key="rr_drafter").set_value("eagle").run()
    assert not at.exception, at.exception
    s = at.session_state["settings"]
    chosen = make_policy(pair.adaptive_policy("eagle"), s.gamma, s.policy_max_gamma, s.policy_threshold, s.policy_signal)
    caption = " ".join(c.value for c in at.caption)
    assert f"{describe(chosen)} (the adaptive default for this drafter)" in caption
    sidebar = " ".join(c.value for c in at.sidebar.caption)
    assert "Adaptive default per drafter" in sidebar and "EAGLE drafter" in sidebar
