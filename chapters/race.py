"""Chapter: Wall-Clock Race. Standard and speculative decoding of the same request race live on this
machine; the paper's model races them on ideal hardware and on this machine's measured costs; a γ sweep
lays measured speedups over the formula."""
import time

import plotly.graph_objects as go
import streamlit as st

from specdec_core import model
from specdec_core.analysis import race
from specdec_core.analysis.round_stats import measured_alpha
from ui.content import alpha_estimate, mismatch
from ui.sections import race_peer, race_simulated, race_sweep
from ui.server import demo, measure, models
from ui.state import settings
from ui.widgets import chips, layout

REPLAY_S = 4.0  # a replay lasts about this long, whatever the race's real duration
REPLAY_FRAMES = 48
LANE_COLORS = {"standard": chips.KINDS["target"].color, "speculative": chips.KINDS["accepted"].color,
               "ideal": chips.KINDS["bonus"].color, "machine": chips.KINDS["corrective"].color}

s = settings.current()
pair = models.require_pair()
ids = models.require_prompt_ids(pair)

st.header("Wall-Clock Race")
layout.idea("fewer target passes are only a win if the clock agrees: two lanes decode the same request "
            "on this machine, the target alone against drafter and target, and the clock is real (wall-clock "
            "time for the same number of tokens, prompt processing included).")

profile = measure.cost_profile(pair)
policy = measure.planning_policy(pair, s.for_drafter(pair).draft_policy)  # plans with this machine's c and v
signature = (models.pair_key(pair), s.signature())

# --- the demo: the live race ---------------------------------------------------------------------------
with layout.demo():
    st.caption(f"Target **{pair.target_name}**, drafter **{next(iter(pair.drafts))}**, {s.describe_policy(pair)}, "
               f"{s.describe_sampling()}, seed {s.seed}, {s.max_new_tokens} tokens per lane.")
    start_box = st.container()
    lane_cols = st.columns(2)
    lane_boxes = {"standard": lane_cols[0].empty(), "speculative": lane_cols[1].empty()}
    LANE_TITLES = {"standard": "Standard decoding: target alone", "speculative": "Speculative decoding: draft, then verify"}


    def draw_lane(name: str, tokens, kinds, passes: int, elapsed: float | None, done: bool = False) -> None:
        with lane_boxes[name].container(border=True):
            st.markdown(f"**{LANE_TITLES[name]}**" + (" ✓" if done else ""))
            m = st.columns(4)
            m[0].metric("Target passes", passes)
            m[1].metric("Tokens", len(tokens))
            m[2].metric("Elapsed", f"{elapsed * 1e3:.0f} ms" if elapsed is not None else "—")
            rate = len(tokens) / elapsed if elapsed else None
            m[3].metric("Tokens/s", f"{rate:.0f}" if rate else "—")
            st.html(chips.provenance_html(pair.tokenizer, ids, tokens, kinds))


    def draw_finished(lane: race.LiveLane) -> None:
        draw_lane(lane.name, lane.tokens, lane.kinds, lane.target_passes, lane.elapsed, done=True)


    def replay(live: race.LiveRace) -> None:
        """Both lanes at once, at their measured pace, slowed down so the race lasts about REPLAY_S."""
        end = max(live.standard.elapsed, live.speculative.elapsed)
        for _, n_std, n_spec in race.replay_frames(live, REPLAY_FRAMES):
            for lane, n in ((live.standard, n_std), (live.speculative, n_spec)):
                draw_lane(lane.name, lane.tokens[:n], lane.kinds[:n], lane.passes[n - 1] if n else 0,
                          lane.times[n - 1] if n else None, done=n == len(lane.tokens))
            time.sleep(REPLAY_S / REPLAY_FRAMES if end > 0 else 0)


    # Every press measures afresh: nothing cached answers a new click. The core warms both decoders up and
    # takes a generation slot per lane (the pacing); the page draws the lanes afterwards.
    ran = None
    if start_box.button("Start the race", key="race_run", type="primary", icon=":material/sports_score:"):
        for name in lane_boxes:
            draw_lane(name, [], [], 0, None)
        with demo.measuring("your race", "Racing…", "Could not race") as pacing:
            live = race.live_race(pair.target, pair.draft, s.request(ids), policy, pacing=pacing,
                                  max_repeats=demo.repeats_cap(race.RACE_REPEATS, race.RACE_MAX_REPEATS))
        ran = demo.keep("race_live", signature, {"race": live})
    stored = demo.latest("race_live", signature)
    live = stored["race"] if stored else None
    if live is None:
        for name in lane_boxes:
            draw_lane(name, [], [], 0, None)
        st.caption("Press **Start the race** to decode.")
    else:
        if ran or st.button("Replay side by side", key="race_replay", icon=":material/replay:",
                            help=f"Both lanes at once, slowed down to last about {REPLAY_S:.0f} s, at their measured pace."):
            replay(live)
        draw_finished(live.standard)
        draw_finished(live.speculative)
        slower = REPLAY_S / max(live.standard.elapsed, live.speculative.elapsed, 1e-9)
        st.caption(f"The replay runs {slower:.0f}× slower than the race did, both lanes at once and each at its own "
                   "measured pace; the lanes shown are the repetition with the median speedup.")
        m = st.columns(4)
        m[0].metric("Measured speedup", f"{live.speedup:.2f}×",
                    help=f"{live.speedups.text()}: standard elapsed / speculative elapsed, prompt processing included in "
                         f"both, median of {live.speedups.n} interleaved races.")
        m[1].metric("Target passes", f"{live.standard.target_passes} → {live.speculative.target_passes}")
        spec = live.speculative.result
        m[2].metric("Tokens per target pass", f"{spec.tokens_per_pass:.2f}")
        alpha_live = measured_alpha(spec.rounds)
        m[3].metric("Measured α", f"{alpha_live:.2f}", help="Mean of min(1, p(x)/q(x)) over the drafts the target judged: an "
                    "estimate of α, the mean of β = Σ min(p, q) over positions; a rough one that leans high, since "
                    f"{alpha_estimate.WHY_IT_LEANS_HIGH}.")
        demo.spread_note(live.speedups, "Measured speedup")
        st.caption(f"Standard lane {live.standard_s.text(' ms', 0, 1e3)}; speculative lane "
                   f"{live.speculative_s.text(' ms', 0, 1e3)}.")
        if s.greedy:
            if live.identical:
                st.success(f"**Identical texts.** Both lanes produced the same {len(live.standard.tokens)} token ids, "
                           "in the same order: greedy speculative decoding is greedy decoding, only faster or slower.",
                           icon=":material/check_circle:")
            else:
                first = next((i for i, (a, b) in enumerate(zip(live.standard.tokens, live.speculative.tokens)) if a != b), None)
                st.error(f"The texts differ (first at token {first}). "
                         + mismatch.greedy_mismatch_reason(model.batch_invariant(pair.target)))
        else:
            same = "identical" if live.identical else "different"
            st.info(f"With sampling the two texts are {same} here: each decoder uses its random numbers in its own "
                    "way, so one seed gives different texts. What is equal is the distribution both are drawn from: "
                    "see *Identical Outputs*. Set temperature to 0 to see token-for-token identity.",
                    icon=":material/casino:")

        fig = go.Figure()
        for lane in (live.standard, live.speculative):
            fig.add_scatter(x=[0] + [t * 1e3 for t in lane.times], y=list(range(len(lane.tokens) + 1)),
                            mode="lines+markers", line_shape="hv", name=lane.name, line_color=LANE_COLORS[lane.name],
                            customdata=[0] + lane.passes,
                            hovertemplate="%{x:.1f} ms: %{y} tokens after %{customdata} target passes<extra></extra>")
        fig.update_layout(title="The race: tokens against elapsed time (each step is one target pass)",
                          xaxis_title="elapsed (ms)", yaxis_title="tokens", height=360, margin=dict(t=40, b=8),
                          legend=dict(orientation="h", y=-0.25))
        st.plotly_chart(fig, key="race_chart")
        st.session_state["race_alpha_measured"] = round(alpha_live, 2) if alpha_live == alpha_live else None
layout.try_this("set temperature to 0 in the sidebar and press **Start the race**: the two texts come out "
                "identical, token for token.")

# --- go deeper -----------------------------------------------------------------------------------------
with layout.deeper("how the race is timed"):
    st.markdown(f"End-of-text does not stop a lane, so both make the same number of tokens. Each press races the two "
                f"lanes {race.RACE_REPEATS} times, taking turns to go first (up to {race.RACE_MAX_REPEATS} times while "
                "the races disagree, as on a machine busy with other work, unless classmates' requests are waiting), "
                "with nothing drawn while a lane is timed; then both lanes of the median race are replayed side by "
                "side at their measured pace. Both lanes are warmed up first, untimed.")
with layout.deeper("the same race simulated, on ideal hardware and on this machine"):
    race_simulated.show(pair, s, profile, LANE_COLORS)
with layout.deeper("a γ sweep, measured speedup against the formula"):
    race_sweep.show(pair, s, ids, signature, LANE_COLORS)
with layout.deeper("the same pair in llama.cpp (recorded)"):
    race_peer.show()
