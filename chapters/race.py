"""Chapter: Wall-Clock Race. Standard and speculative decoding of the same request race live on this
machine; the paper's model races them on ideal hardware and on this machine's measured costs; a γ sweep
lays measured speedups over the formula."""
import time

import plotly.graph_objects as go
import streamlit as st

from specdec_core import theory
from specdec_core.analysis import race
from specdec_core.analysis.round_stats import measured_alpha
from ui.server import measure, models
from ui.state import demo, settings
from ui.widgets import charts, chips, layout, tables

SWEEP_GAMMAS = tuple(range(1, 9))
SWEEP_REPEATS = 3  # interleaved repetitions of the γ sweep
REPLAY_S = 4.0  # a replay lasts about this long, whatever the race's real duration
REPLAY_FRAMES = 48
LANE_COLORS = {"standard": chips.KINDS["target"].color, "speculative": chips.KINDS["accepted"].color,
               "ideal": chips.KINDS["bonus"].color, "machine": chips.KINDS["corrective"].color}

s = settings.current()
pair = models.require_pair()
ids = models.require_prompt_ids(pair)

st.header("Wall-Clock Race")
layout.intro(
    "Two lanes decode the same prompt with the same target, sampling settings and seed: on the left the "
    "target alone, one pass per token; on the right the drafter guesses and the target verifies. The clock "
    "is real, on this machine. Below, the paper's model runs the same race on ideal hardware, where a pass "
    "over γ + 1 positions costs one pass, and with the costs measured here.",
    "set temperature to 0 in the sidebar and press **Start the race**: the two texts come out identical. "
    "Then open the simulated race and compare its two speculative lanes.")

profile = measure.cost_profile(pair)
policy = measure.planning_policy(pair, s.for_drafter(pair).draft_policy)  # plans with this machine's c and v
signature = (models.pair_key(pair), s.signature())


# --- live race ---------------------------------------------------------------------------------------
st.subheader("Live, on this machine")
st.caption(f"Target **{pair.target_name}**, drafter **{next(iter(pair.drafts))}**, {s.describe_policy(pair)}, "
           f"{s.describe_sampling()}, seed {s.seed}, {s.max_new_tokens} tokens (end-of-text does not stop a "
           f"lane, so both make the same number). Each press races the two lanes {race.RACE_REPEATS} times, taking "
           f"turns to go first (up to {race.RACE_MAX_REPEATS} times while the races disagree, as on a machine busy "
           "with other work, unless classmates' requests are waiting), with nothing drawn while a lane is timed; "
           "then both lanes of the median race are replayed side by side at their measured pace.")
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
    m[3].metric("Measured α", f"{alpha_live:.2f}", help="Mean of min(1, p(x)/q(x)) over the drafts the target judged.")
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
            st.error(f"The texts differ (first at token {first}). In exact arithmetic greedy speculative decoding "
                     "gives the very same tokens; a near-tie between two tokens can flip when a pass over several "
                     "positions rounds differently from a pass over one, which is what happened here.")
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


# --- simulated race ----------------------------------------------------------------------------------
st.subheader("Simulated: ideal hardware against this machine")
st.markdown(
    "The α Dial's cost model, raced: every draft is accepted independently with probability α; a round costs "
    "γ·c for the drafts plus v for the one target pass over γ + 1 positions. On ideal hardware v = 1. On this "
    f"machine v(γ) and c are measured: c = {profile.c:.3f} and v({s.gamma}) = {profile.v(s.gamma):.2f} for "
    f"the drafter *{next(iter(pair.drafts))}*. Time is counted in target passes of one position.")
# α, γ and c are the α Dial's controls (one set for the app; ui/frame.py keeps them across pages).
st.session_state.setdefault("ad_alpha", 0.8)
st.session_state.setdefault("ad_gamma", s.gamma)
st.session_state.setdefault("ad_c", round(min(max(profile.c, 0.0), 1.0), 3))
st.session_state.setdefault("race_tokens", 40)


def use_measured_alpha() -> None:
    st.session_state["ad_alpha"] = st.session_state["race_alpha_measured"]


@st.fragment
def simulated_race() -> None:
    """The simulated race: a fragment, so its sliders and Play rerun only this section."""
    alpha, gamma, c = (st.session_state[k] for k in ("ad_alpha", "ad_gamma", "ad_c"))
    cols = st.columns([6, 3, 2], vertical_alignment="bottom")
    with cols[0]:
        st.markdown(f"α = **{alpha:.2f}**, γ = **{gamma}**, c on ideal hardware = **{c:.3f}**")
        st.page_link("chapters/alpha_dial.py", label="Set α, γ and c on The α Dial", icon=":material/tune:")
    n_tokens = cols[1].slider("Tokens", 10, 200, step=10, key="race_tokens")
    cols[2].button("Use the live α", key="race_use_alpha", on_click=use_measured_alpha,
                   disabled=not st.session_state.get("race_alpha_measured"),
                   help="The α measured in the live race above (run it first).")

    v_here = profile.v(gamma)
    lanes = {
        "standard": theory.simulated_plain(n_tokens),
        "ideal": theory.simulated_speculative(alpha, gamma, c, n_tokens, v=1.0, seed=s.seed, name="speculative, ideal hardware"),
        "machine": theory.simulated_speculative(alpha, gamma, profile.c, n_tokens, v=v_here, seed=s.seed,
                                              name="speculative, this machine"),
    }
    expected = {"standard": float(n_tokens), "ideal": theory.expected_finish(alpha, gamma, c, n_tokens, 1.0),
                "machine": theory.expected_finish(alpha, gamma, profile.c, n_tokens, v_here)}
    labels = {"standard": "standard decoding", "ideal": f"speculative, ideal hardware (v = 1, c = {c:.3f})",
              "machine": f"speculative, this machine (v = {v_here:.2f}, c = {profile.c:.3f})"}

    m = st.columns(3)
    m[0].metric("Ideal hardware: expected speedup", f"{theory.speedup(alpha, gamma, c, 1.0):.2f}×",
                help="E(α, γ) / (γc + 1), the paper's Theorem 3.8.")
    m[1].metric("This machine: expected speedup", f"{theory.speedup(alpha, gamma, profile.c, v_here):.2f}×",
                help="E(α, γ) / (γc + v(γ)) with this machine's measured c and v(γ).")
    m[2].metric("Target passes (this run)", f"{lanes['standard'].passes} → {lanes['ideal'].passes}",
                help="Standard lane against the speculative lanes (both speculative lanes share the same random acceptances).")

    fig = go.Figure()
    for key, lane in lanes.items():
        fig.add_scatter(x=[0.0] + lane.times, y=list(range(len(lane.times) + 1)), mode="lines", line_shape="hv",
                        name=labels[key], line=dict(color=LANE_COLORS["standard" if key == "standard" else key], width=3))
        fig.add_vline(x=expected[key], line_dash="dot", line_color=LANE_COLORS["standard" if key == "standard" else key])
    fig.update_layout(title=f"{n_tokens} tokens at α = {alpha:.2f}, γ = {gamma} (dotted: expected finish from the formula)",
                      xaxis_title="time (target passes of one position)", yaxis_title="tokens", height=380,
                      margin=dict(t=40, b=8), legend=dict(orientation="h", y=-0.25))
    st.plotly_chart(fig, key="race_sim_chart")

    play = st.button("Play the simulated race", key="race_sim_play", icon=":material/play_arrow:")
    bars = {key: st.empty() for key in lanes}
    end = max(lane.finish for lane in lanes.values())

    def draw_bars(t: float) -> None:
        for key, lane in lanes.items():
            done = sum(1 for x in lane.times if x <= t)
            bars[key].progress(done / n_tokens, text=f"{labels[key]}: {done}/{n_tokens} tokens at t = {min(t, end):.1f}")

    if play:
        for i in range(REPLAY_FRAMES + 1):
            draw_bars(end * i / REPLAY_FRAMES)
            time.sleep(REPLAY_S / REPLAY_FRAMES)
    else:
        draw_bars(end)
    st.caption("Both speculative lanes use the same random acceptances (seed from the sidebar), so they differ only "
               "in what a round costs. The live race above is the measured version of the *this machine* lane.")


simulated_race()


# --- gamma sweep ---------------------------------------------------------------------------------------
st.subheader("γ sweep: measured speedup against the formula")
st.caption(f"Runs the live request with plain decoding and at γ = {SWEEP_GAMMAS[0]}…{SWEEP_GAMMAS[-1]}, all "
           f"interleaved, {SWEEP_REPEATS} times over (prompt processing excluded), and draws the median measured "
           "speedup over the formula. The formula uses the α measured over all these runs and the c and v(γ) of the "
           "passes these very runs made.")
if st.button(f"Sweep γ = {SWEEP_GAMMAS[0]}…{SWEEP_GAMMAS[-1]}", key="race_sweep", icon=":material/query_stats:"):
    with demo.measuring("your γ sweep", "Sweeping γ…", "Could not sweep") as pacing:
        sweep = race.gamma_sweep(pair.target, pair.draft, s.request(ids), SWEEP_GAMMAS, repeats=SWEEP_REPEATS,
                                 pacing=pacing)
    demo.keep("race_sweep_result", signature, {"sweep": sweep})
swept = demo.latest("race_sweep_result", signature)
if swept:
    sweep = swept["sweep"]
    a = sweep["alpha"]
    costs = sweep["costs"]  # c and v(γ) of the sweep's own passes
    gs = [row["gamma"] for row in sweep["rows"]]
    fine = list(range(1, SWEEP_GAMMAS[-1] + 1))
    fig = go.Figure()
    fig.add_scatter(x=fine, y=[theory.speedup(a, g, costs.c, costs.v) for g in fine], mode="lines",
                    name=f"formula, this machine's c and v(γ), measured α = {a:.2f}", line_color=LANE_COLORS["machine"])
    fig.add_scatter(x=fine, y=[theory.speedup(a, g, costs.c, 1.0) for g in fine], mode="lines",
                    name="formula, ideal hardware (v = 1), same α and c", line=dict(dash="dash", color=LANE_COLORS["ideal"]))
    fig.add_scatter(x=gs, y=[row["speedup"] for row in sweep["rows"]], mode="markers+lines", name="measured here",
                    marker=dict(size=11, symbol="diamond", color=LANE_COLORS["speculative"],
                                line=dict(width=1, color=charts.INK)),
                    line=dict(dash="dot", color=LANE_COLORS["speculative"]),
                    error_y=dict(type="data", symmetric=False,
                                 array=[row["measured"].high - row["speedup"] for row in sweep["rows"]],
                                 arrayminus=[row["speedup"] - row["measured"].low for row in sweep["rows"]]),
                    customdata=[[row["tokens_per_pass"], row["alpha"], row["measured"].text()] for row in sweep["rows"]],
                    hovertemplate="γ = %{x}: %{customdata[2]} (%{customdata[0]:.2f} tokens/pass, α %{customdata[1]:.2f})"
                                  "<extra></extra>")
    fig.add_hline(y=1, line_dash="dot", line_color=charts.MUTED)
    fig.update_layout(title="Speedup over standard decoding against γ (bars: the range over the repetitions)",
                      xaxis_title="γ", yaxis_title="speedup (×)",
                      height=380, margin=dict(t=40, b=8), legend=dict(orientation="h", y=-0.3), xaxis=dict(dtick=1))
    st.plotly_chart(fig, key="race_sweep_chart")
    widest = max(sweep["rows"], key=lambda row: row["measured"].spread)
    demo.spread_note(widest["measured"], f"Speedup at γ = {widest['gamma']}, the widest spread of the sweep")
    best = max(sweep["rows"], key=lambda row: row["speedup"])
    st.markdown(f"{layout.measured_badge()} Best measured γ here: **{best['gamma']}** ({best['measured'].text()}); the "
                f"formula with these runs' costs (c = {costs.c:.3f}) predicts γ = "
                f"{theory.optimal_gamma(a, costs.c, costs.v, SWEEP_GAMMAS[-1])}, ideal hardware γ = "
                f"{theory.optimal_gamma(a, costs.c, 1.0, SWEEP_GAMMAS[-1])}.")
    tables.show([{"γ": row["gamma"], "speedup (measured, median)": round(row["speedup"], 2),
                   "range over the runs": f"{row['measured'].low:.2f}–{row['measured'].high:.2f}",
                   "speedup (formula, this machine)": round(theory.speedup(a, row["gamma"], costs.c, costs.v), 2),
                   "tokens per target pass": round(row["tokens_per_pass"], 2), "α (this run)": round(row["alpha"], 2),
                   "ms per token": round(row["s_per_token"] * 1e3, 2)} for row in sweep["rows"]],
                key="race_sweep_table")
else:
    st.caption("Press the sweep button to measure.")
