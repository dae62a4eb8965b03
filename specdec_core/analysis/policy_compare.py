"""Fixed against adaptive draft length, measured: several policies on the same prompts, timed in
interleaved repetitions against plain decoding (`stats.contest`: A B C, then C B A, ...), with
the serving stacks' acceptance metrics.

Prompt by prompt, every contestant decodes the prompt once per repetition, interleaved; a run's
time is its decoding phase (the generation's time less the target's prefill of the prompt). A
contestant's speedup is `stats.ratios` of plain decoding's time over its own, both summed over
the prompts, repetition by repetition: the median with the range beside it. Interleaving prompt by
prompt keeps the runs compared close together in time, so a slow moment of a shared machine lands
on all of them.
"""
import math
from dataclasses import dataclass, field

from ..policies import ADAPTIVE, Costs, as_policy
from ..request import GenerationRequest
from ..speculative import autoregressive_generate, speculative_generate
from ..trace import RoundTrace
from .round_stats import acceptance_metrics, measured_alpha, modelled_speedup, oracle_speedup
from .stats import Measured, Pacing, contest, decode_seconds, ratios

PLAIN = "plain decoding"
MAX_REPEATS = 10
MAX_PROMPTS = 16


@dataclass
class Contestant:
    label: str
    seconds: list[float] = field(default_factory=list)  # decoding seconds of each (prompt, repetition) run
    tokens: int = 0  # over the prompts, one repetition
    target_passes: int = 0  # over the prompts, one repetition
    repeats: int = 0
    rounds: list[RoundTrace] = field(default_factory=list)  # the first repetition's rounds, all prompts

    def per_repetition(self) -> list[float]:
        """Decoding seconds over all prompts, per repetition (runs are stored prompt by prompt)."""
        return [sum(self.seconds[r::self.repeats]) for r in range(self.repeats)]

    def speedup(self, plain: "Contestant") -> Measured:
        return ratios(plain.per_repetition(), self.per_repetition())


def compare_policies(target, drafter, prompts: list[list[int]], policies: dict, request: GenerationRequest, *,
                     repeats: int = 3, pacing: Pacing = Pacing()) -> dict[str, Contestant]:
    """Run plain decoding and every policy (label -> policy or int gamma) on every prompt, `repeats`
    times interleaved, each run asked for `request` on that prompt at its fixed length (the template's
    own prompt is not used; prompt i uses seed + i for every contestant). Returns label -> Contestant,
    plain decoding under `PLAIN`. `pacing` as in `stats.contest`."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
        raise ValueError(f"repeats must be an integer in [1, {MAX_REPEATS}], got {repeats!r}")
    if not prompts or len(prompts) > MAX_PROMPTS:
        raise ValueError(f"prompts must hold 1 to {MAX_PROMPTS} prompts, got {len(prompts)}")
    resolved = {label: as_policy(p) for label, p in policies.items()}
    if PLAIN in resolved:
        raise ValueError(f"a policy may not be labelled {PLAIN!r}")
    out = {label: Contestant(label, repeats=repeats) for label in [PLAIN, *resolved]}
    request = request.fixed_length()

    def run(label: str, i: int, prompt: list[int]):
        asked = request.for_prompt(prompt, i)
        if label == PLAIN:
            return autoregressive_generate(target, asked)
        return speculative_generate(target, drafter, asked, gamma=resolved[label], trace=False)

    for i, prompt in enumerate(prompts):  # one contest per prompt: the runs compared stay close in time
        part = pacing.part(i / len(prompts), (i + 1) / len(prompts), f"Prompt {i + 1} of {len(prompts)}: ")
        done = contest({label: (lambda label=label, i=i, prompt=prompt: run(label, i, prompt)) for label in out},
                       repeats, pacing=part)
        for label, results in done.results.items():
            c = out[label]
            c.seconds += [decode_seconds(res) for res in results]
            c.rounds += results[0].rounds
            c.tokens += len(results[0].tokens)
            c.target_passes += results[0].target_passes
    return out


def summary(results: dict[str, Contestant], costs: Costs | None = None) -> list[dict]:
    """One JSON-ready row per contestant: median speedup over plain decoding and its range, tokens per
    target pass, the acceptance metrics, and the cost model's speedup of the same rounds (and of their
    hindsight gammas: the oracle bound) when `costs` is given."""
    plain = results[PLAIN]
    rows = []
    for label, c in results.items():
        up = c.speedup(plain)
        row = {"policy": label, "speedup": up.median, "speedup_low": up.low, "speedup_high": up.high,
               "speedup_text": up.text(), "busy": up.busy,
               "ms_per_token": 1e3 * sum(c.seconds) / max(1, c.tokens * c.repeats),
               "tokens_per_target_pass": c.tokens / c.target_passes if c.target_passes else float("nan"),
               "repeats": c.repeats, "runs": len(c.seconds)}
        if label != PLAIN:
            row.update(alpha=measured_alpha(c.rounds), **acceptance_metrics(c.rounds))
            if costs is not None:
                row.update(modelled_speedup=modelled_speedup(c.rounds, costs),
                           oracle_speedup=oracle_speedup(c.rounds, costs))
        rows.append(row)
    return rows


def calibration_rounds(target, drafter, prompts: list[list[int]], gamma: int,
                       request: GenerationRequest) -> list[RoundTrace]:
    """Traced rounds (with the drafter's raw confidence per draft) at a constant, long gamma, for
    `round_stats.calibration`, from `request` on every prompt at its fixed length (prompt i seeded
    seed + i, as in `compare_policies`): not timed."""
    request = request.fixed_length()
    rounds = []
    for i, prompt in enumerate(prompts):
        rounds += speculative_generate(target, drafter, request.for_prompt(prompt, i), gamma=gamma, trace=True).rounds
    return rounds


def best_adaptive(settings: dict[str, list[dict]], adaptive=ADAPTIVE) -> dict:
    """The adaptive policy to offer by default, from `summary` rows per setting (e.g. per temperature):
    the one whose median speedup over the best fixed gamma's, in the same setting, has the highest
    geometric mean across the settings. Every row that is neither plain decoding nor in `adaptive`
    counts as a fixed gamma. Returns {"policy", "score" (that mean), "settings": {setting: {"speedup",
    "vs_best_fixed", "best_fixed", "best_fixed_speedup"}}}."""
    if not settings:
        raise ValueError("best_adaptive needs the rows of at least one setting")
    speedups, best_fixed = {}, {}
    for key, rows in settings.items():
        by_name = {r["policy"]: r for r in rows}
        missing = [name for name in adaptive if name not in by_name]
        fixed = [r for r in rows if r["policy"] not in adaptive and r["policy"] != PLAIN]
        if missing or not fixed:
            raise ValueError(f"setting {key!r} lacks {'the policies ' + ', '.join(missing) if missing else 'a fixed gamma'}")
        best_fixed[key] = max(fixed, key=lambda r: r["speedup"])
        speedups[key] = {name: by_name[name]["speedup"] for name in adaptive}
    ratio = lambda key, name: speedups[key][name] / best_fixed[key]["speedup"]
    score = {name: math.exp(sum(math.log(ratio(key, name)) for key in settings) / len(settings)) for name in adaptive}
    choice = max(adaptive, key=score.get)
    return {"policy": choice, "score": score[choice], "settings": {
        key: {"speedup": speedups[key][choice], "vs_best_fixed": ratio(key, choice),
              "best_fixed": best_fixed[key]["policy"], "best_fixed_speedup": best_fixed[key]["speedup"]}
        for key in settings}}
