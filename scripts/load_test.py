"""Load test: a classroom of students on one SpecDec Lab server, each in its own headless-Chromium
context (Playwright), all starting at the same moment and going through the main demos again and
again for a few minutes, each with its own seed.

    .venv/bin/python scripts/load_test.py --sessions 20 --minutes 3      the full test (docs/load_test.md)
    .venv/bin/python scripts/load_test.py --quick                        4 students, one pass (CI)

It starts `streamlit run app.py` on a local port (HF_HUB_OFFLINE=1, the bundled pair), runs one student
alone first (warm-up, and the single-session reference), then all of them at once, and prints a report:
errors (exceptions shown in a page, timeouts, browser errors, tracebacks in the server log), whether
every output is the one expected, time to result (p50/p95), the server's peak RSS and its RSS growth
per session. Exit status 0 only with no error and no differing output.

What "identical" means here. Every page that generates puts the generated token ids on its token
chips (`data-tokens`). Greedy outputs must equal the single-session run's; seeded sampling outputs
must equal a sequential run with the same seed, made by the core in this process, one call at a time
(`autoregressive_generate`, `race.live_race`, exactly the calls the pages make).

A student's pass: Home (greedy: its "same tokens" metric must say yes), The Serial Tax greedy and
with temperature 1, the Wall-Clock Race with temperature 1 (both lanes), Identical Outputs (greedy
diff; not in --quick). Students use five prompts in turn (one in --quick). One student in four also
starts a race and leaves the page mid-generation every other pass:
the server must stop that run and free its slot (if it did not, everyone would stall behind it).

Chromium is Debian's (/usr/bin/chromium, or $SPECDEC_CHROMIUM), never a Playwright download.
"""
import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from classroom.tools import serve  # noqa: E402
from classroom.tools.serve import CHROMIUM, IDLE, RUN_NUMBER_JS  # noqa: E402

CHROMIUM_ARGS = [*serve.CHROMIUM_ARGS, "--disable-dev-shm-usage"]  # many browsers at once: /dev/shm is small
ERROR_SELECTORS = ('[data-testid="stException"]', 'text="This app has encountered an error"')
STEP_TIMEOUT_MS = 300_000  # a student at the back of a long queue still gets an answer, or an error
PROMPTS = ["ROMEO:\nBut soft, what light through yonder window breaks?",
           "HAMLET:\nTo be, or not to be, that is the question:",
           "First Citizen:\nBefore we proceed any further, hear me speak.",
           "KING HENRY V:\nOnce more unto the breach, dear friends, once more;",
           "Enter MACBETH and BANQUO.\n\nMACBETH:\n"]
GAMMA = 4


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    total = sum(values[:8])
    tick = os.sysconf("SC_CLK_TCK")
    return (total - idle) / tick, total / tick


# --- the server ---------------------------------------------------------------------------------------

class Server(serve.Server):
    """The app on a local port (`classroom.tools.serve.Server`: no file watcher), its memory sampled twice a second."""

    def __init__(self, port: int, env: dict, log_path: Path):
        super().__init__(log_path, port, env, address="127.0.0.1")
        self.samples: list[tuple[float, int]] = []  # (time, RSS bytes)
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)

    def _status(self, field_name: str) -> int:
        try:
            text = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return 0
        m = re.search(rf"^{field_name}:\s+(\d+) kB", text, re.M)
        return int(m.group(1)) * 1024 if m else 0

    def rss(self) -> int:
        return self._status("VmRSS")

    def cpu_seconds(self) -> float:
        """User + system CPU time the server has used so far."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def peak_rss(self) -> int:
        """The kernel's high-water mark of the server's RSS (VmHWM), or the highest sample."""
        return max(self._status("VmHWM"), max((r for _, r in self.samples), default=0))

    def _sample(self) -> None:
        while not self._stop.wait(0.5):
            self.samples.append((time.monotonic(), self.rss()))

    def wait_healthy(self, timeout_s: float = serve.START_TIMEOUT_S) -> "Server":
        super().wait_healthy(timeout_s)
        self._sampler.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        super().stop()


# --- what each output must be ---------------------------------------------------------------------------

class Expected:
    """Outputs computed by the core in this process, sequentially: what each page must show."""

    def __init__(self, max_new: int):
        import torch

        from specdec_core import GREEDY, GenerationRequest, SamplingConfig, autoregressive_generate
        from specdec_core.analysis import race
        from specdec_core.pairs import load_pair

        torch.set_num_threads(1)
        self.pair = load_pair("shakespeare")
        self.max_new = max_new
        self._cache: dict = {}
        self._greedy, self._sampling = GREEDY, SamplingConfig(1.0)
        self._plain, self._race, self._request = autoregressive_generate, race.live_race, GenerationRequest

    def ids(self, prompt: str) -> list[int]:
        return self.pair.tokenizer.encode(prompt)

    def get(self, what: str, prompt: str, seed: int) -> list[list[int]]:
        key = (what, prompt, seed)
        if key not in self._cache:
            p, ids = self.pair, self.ids(prompt)
            if what == "serial_greedy":
                out = [self._plain(p.target, ids, self.max_new, self._greedy, seed=seed).tokens]
            elif what == "serial_seeded":
                out = [self._plain(p.target, ids, self.max_new, self._sampling, seed=seed).tokens]
            elif what == "race_seeded":
                asked = self._request(ids, self.max_new, self._sampling, seed, None)
                lanes = self._race(p.target, p.draft, asked, GAMMA, repeats=1)
                out = [lanes.standard.tokens, lanes.speculative.tokens]
            elif what == "identical_greedy":  # plain and speculative greedy, EOS not stopping either
                plain = self._plain(p.target, self._request(ids, self.max_new, self._greedy, 0).fixed_length()).tokens
                out = [plain, plain]
            else:
                raise KeyError(what)
            self._cache[key] = out
        return self._cache[key]


# --- one student ------------------------------------------------------------------------------------------

@dataclass
class Step:
    student: int
    name: str
    seconds: float  # time to result: from the click (or the page request) to the result on screen
    ok: bool
    error: str | None = None
    outputs: list[list[int]] | None = None  # token ids read from the page
    expected: str | None = None  # "single-session" | "sequential" (what the outputs were compared with)
    matches: bool | None = None


@dataclass
class Student:
    index: int
    seed: int
    prompt: str
    steps: list[Step] = field(default_factory=list)
    page_loads: int = 0
    abandoned: int = 0
    js_errors: list[str] = field(default_factory=list)


async def wait_idle(page, after_action: bool) -> None:
    """As classroom.tools.serve.wait_idle: after an action, until the page has drawn a later run than the one
    the last wait ended on, and is idle (no time window: a rerun may start seconds after a click here)."""
    seen = await page.evaluate("() => window.__specdecSeenRun || 0") if after_action else 0
    await page.wait_for_function(f"seen => ({RUN_NUMBER_JS})() > seen && document.querySelector({IDLE!r}) !== null",
                                 arg=seen, timeout=STEP_TIMEOUT_MS)
    await page.evaluate(f"() => {{ window.__specdecSeenRun = ({RUN_NUMBER_JS})(); }}")


async def shown_error(page) -> str | None:
    for selector in ERROR_SELECTORS:
        if await page.locator(selector).count():
            text = (await page.locator(selector).first.inner_text())[:300]
            return f"page shows an error: {text!r}"
    return None


async def token_runs(page) -> list[list[int]]:
    values = await page.eval_on_selector_all(".tok-run[data-tokens]", "els => els.map(e => e.dataset.tokens)")
    return [[int(t) for t in v.split()] for v in values]


async def metrics(page) -> dict[str, str]:
    pairs = await page.eval_on_selector_all(
        '[data-testid="stMetric"]',
        """els => els.map(e => [(e.querySelector('[data-testid="stMetricLabel"]') || {}).innerText,
                                (e.querySelector('[data-testid="stMetricValue"]') || {}).innerText])""")
    return {str(k).strip(): str(v).strip() for k, v in pairs}


class Run:
    """Everything one load-test run shares: the server URL, the expected outputs, the settings."""

    def __init__(self, url: str, expected: Expected, max_new: int):
        self.url, self.expected, self.max_new = url, expected, max_new
        self.single: dict[str, list[list[int]]] = {}  # greedy outputs of the single-session run

    def link(self, path: str, student: Student, temperature: float) -> str:
        query = {"prompt": student.prompt, "temp": f"{temperature:g}", "seed": student.seed,
                 "max_new": self.max_new, "gamma": GAMMA}
        return f"{self.url}/{path}?{urllib.parse.urlencode(query)}"

    async def open(self, page, student: Student, path: str, temperature: float, ready: str) -> float:
        start = time.monotonic()
        student.page_loads += 1
        await page.goto(self.link(path, student, temperature), timeout=STEP_TIMEOUT_MS)
        await page.wait_for_selector(ready, timeout=STEP_TIMEOUT_MS)
        await wait_idle(page, after_action=False)
        return time.monotonic() - start

    async def click(self, page, key: str, result: str) -> float:
        start = time.monotonic()
        await page.locator(f".st-key-{key} button").first.click()
        await page.wait_for_selector(result, timeout=STEP_TIMEOUT_MS)
        await wait_idle(page, after_action=True)
        return time.monotonic() - start

    def check(self, step: Step, student: Student, what: str, greedy: bool) -> None:
        """Compare the step's outputs with the single-session run (greedy) or a sequential run (seeded)."""
        sequential = self.expected.get(what, student.prompt, student.seed)
        if greedy:
            step.expected = "single-session"
            reference = self.single.setdefault((what, student.prompt), step.outputs)
            step.matches = step.outputs == reference == sequential
        else:
            step.expected = "sequential"
            step.matches = step.outputs == sequential

    # The demos. Each returns a Step; an exception inside becomes a failed step.
    async def home(self, page, student: Student) -> Step:
        seconds = await self.open(page, student, "", 0.0, '[data-testid="stMetric"]')
        await page.wait_for_selector('text="Same tokens as plain decoding"', timeout=STEP_TIMEOUT_MS)
        m = await metrics(page)
        ok = m.get("Same tokens as plain decoding") == "yes"
        return Step(student.index, "home (greedy figure)", seconds, ok, None if ok else f"metrics: {m}")

    async def serial(self, page, student: Student, temperature: float) -> Step:
        await self.open(page, student, "serial_tax", temperature, ".st-key-st_run")
        await page.locator(".st-key-st_slow label").first.click()  # slow motion off
        await wait_idle(page, after_action=True)
        seconds = await self.click(page, "st_run", ".st-key-st_cumulative")
        greedy = temperature == 0
        step = Step(student.index, f"serial tax ({'greedy' if greedy else 'seeded'})", seconds, True,
                    outputs=await token_runs(page))
        self.check(step, student, "serial_greedy" if greedy else "serial_seeded", greedy)
        return step

    async def race(self, page, student: Student) -> Step:
        await self.open(page, student, "race", 1.0, ".st-key-race_run")
        seconds = await self.click(page, "race_run", ".st-key-race_chart")
        step = Step(student.index, "race (seeded, both lanes)", seconds, True, outputs=await token_runs(page))
        self.check(step, student, "race_seeded", greedy=False)
        return step

    async def identical(self, page, student: Student) -> Step:
        seconds = await self.open(page, student, "identical_outputs", 0.0, 'text="(empty: no line differs)"')
        runs = await token_runs(page)  # standard, speculative, then the lab's prefix (no generated tokens)
        step = Step(student.index, "identical outputs (greedy diff)", seconds, True, outputs=runs[:2])
        self.check(step, student, "identical_greedy", greedy=True)
        return step

    async def abandon(self, page, student: Student) -> None:
        """Start a race and leave mid-generation (the tab moves on; the server must free the slot)."""
        await self.open(page, student, "race", 1.0, ".st-key-race_run")
        await page.locator(".st-key-race_run button").first.click()
        await asyncio.sleep(0.3)
        await page.goto("about:blank")
        student.abandoned += 1

    def demos(self, page, student: Student, quick: bool) -> list:
        demos = [("home", lambda: self.home(page, student)),
                 ("serial greedy", lambda: self.serial(page, student, 0.0)),
                 ("serial seeded", lambda: self.serial(page, student, 1.0)),
                 ("race", lambda: self.race(page, student))]
        return demos if quick else demos + [("identical", lambda: self.identical(page, student))]

    async def student(self, browser, student: Student, deadline: float, passes: int | None,
                      abandons: bool, quick: bool = False, only: str | None = None) -> None:
        context = await browser.new_context(viewport={"width": 1200, "height": 900}, reduced_motion="reduce")
        context.set_default_timeout(STEP_TIMEOUT_MS)  # a page starved of CPU by the other browsers is slow, not broken
        page = await context.new_page()
        page.on("pageerror", lambda err: student.js_errors.append(str(err)[:300]))
        n = 0
        try:
            while True:
                for name, demo in self.demos(page, student, quick):
                    if only is not None and name != only:
                        continue
                    try:
                        step = await demo()
                        step.error = step.error or await shown_error(page)
                        step.ok = step.ok and step.error is None
                    except Exception as err:  # a timeout, a missing element, a crash
                        step = Step(student.index, name, float("nan"), False, f"{type(err).__name__}: {str(err)[:300]}")
                    student.steps.append(step)
                if abandons and n % 2 == 0:
                    try:
                        await self.abandon(page, student)
                    except Exception as err:
                        student.steps.append(Step(student.index, "abandon", float("nan"), False,
                                                  f"{type(err).__name__}: {str(err)[:300]}"))
                n += 1
                if (passes is not None and n >= passes) or time.monotonic() >= deadline:
                    break
        finally:
            await context.close()


# --- the run and its report --------------------------------------------------------------------------------

def percentile(values: list[float], q: float) -> float:
    values = sorted(v for v in values if v == v)
    if not values:
        return float("nan")
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


async def drive(args, server: Server, expected: Expected) -> dict:
    from playwright.async_api import async_playwright

    run = Run(server.url, expected, args.max_new)
    seeds = [args.seed0 + i for i in range(args.sessions)]
    prompts = PROMPTS[:1] if args.quick else PROMPTS
    students = [Student(i, seed, prompts[i % len(prompts)]) for i, seed in enumerate(seeds)]
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            # One student alone: loads the models, times the passes, and is the single-session reference.
            solo = Student(-1, args.seed0 - 1, PROMPTS[0])
            t0 = time.monotonic()
            await run.student(browser, solo, deadline=0, passes=1, abandons=False, quick=args.quick)
            solo_s = time.monotonic() - t0
            for prompt in prompts[1:]:  # the single-session greedy reference for every other prompt used
                ref = Student(-2, args.seed0 - 2, prompt)
                await run.student(browser, ref, deadline=0, passes=1, abandons=False, quick=args.quick)
                solo.steps += ref.steps
            await asyncio.sleep(1)
            warm_rss = server.rss()
            start, cpu0, machine0 = time.monotonic(), server.cpu_seconds(), machine_cpu()
            deadline = start + args.minutes * 60
            await asyncio.gather(*(run.student(browser, s, deadline, 1 if args.quick else None,
                                               abandons=(s.index % 4 == 3), quick=args.quick) for s in students))
            load_s = time.monotonic() - start
            server_cpu = server.cpu_seconds() - cpu0
            machine_busy, machine_total = (b - a for a, b in zip(machine0, machine_cpu()))
            # After the crowd: is the server free again? (A leaked slot would make this wait forever.)
            after = Student(-3, args.seed0 - 3, PROMPTS[0])
            t0 = time.monotonic()
            await run.student(browser, after, deadline=0, passes=1, abandons=False, only="serial greedy")
            after_s = time.monotonic() - t0
        finally:
            await browser.close()
    await asyncio.sleep(3)
    end_rss = server.rss()
    return {"students": students, "solo": solo, "after": after, "solo_s": solo_s, "after_s": after_s,
            "load_s": load_s, "warm_rss": warm_rss, "end_rss": end_rss, "server_cpu_s": server_cpu,
            "machine_busy_s": machine_busy, "machine_total_s": machine_total}


def report(args, server: Server, out: dict, env: dict) -> tuple[str, dict]:
    students: list[Student] = out["students"]
    steps = [st for s in students for st in s.steps]
    solo_steps = out["solo"].steps + out["after"].steps
    log = server.log()
    tracebacks = log.count("Traceback (most recent call last)")
    uncaught = log.count("Uncaught app execution")
    queued = len(re.findall(r"admitted .* after [\d.]+ s in the queue", log))
    slots = [(float(w), float(h)) for w, h in re.findall(r"slot: .* waited ([\d.]+) s, held ([\d.]+) s", log)]
    failed = [st for st in steps + solo_steps if not st.ok]
    js_errors = [e for s in students + [out["solo"], out["after"]] for e in s.js_errors]
    compared = [st for st in steps + solo_steps if st.matches is not None]
    greedy = [st for st in compared if st.expected == "single-session"]
    seeded = [st for st in compared if st.expected == "sequential"]
    differing = [st for st in compared if not st.matches]
    errors = len(failed) + len(js_errors) + tracebacks + uncaught
    times = [st.seconds for st in steps if st.ok]
    by_step: dict[str, list[float]] = {}
    for st in steps:
        if st.ok:
            by_step.setdefault(st.name, []).append(st.seconds)
    page_loads = sum(s.page_loads for s in students)
    growth = out["end_rss"] - out["warm_rss"]
    mib = lambda b: b / 2**20
    summary = {
        "sessions": len(students), "minutes": round(out["load_s"] / 60, 2), "quick": args.quick,
        "max_concurrent": env.get("SPECDEC_MAX_CONCURRENT", "default"), "cpu_count": os.cpu_count(),
        "steps": len(steps), "page_loads": page_loads, "abandoned": sum(s.abandoned for s in students),
        "errors": errors, "failed_steps": len(failed), "js_errors": len(js_errors), "server_tracebacks": tracebacks,
        "uncaught_app_exceptions": uncaught, "greedy_identical": f"{sum(st.matches for st in greedy)}/{len(greedy)}",
        "seeded_identical": f"{sum(st.matches for st in seeded)}/{len(seeded)}", "differing": len(differing),
        "p50_s": percentile(times, 0.5), "p95_s": percentile(times, 0.95), "max_s": max(times, default=float("nan")),
        "solo_pass_s": out["solo_s"], "after_pass_s": out["after_s"], "queued_over_1s": queued,
        "rss_warm_mib": mib(out["warm_rss"]), "rss_peak_mib": mib(server.peak_rss()), "rss_end_mib": mib(out["end_rss"]),
        "rss_growth_per_student_mib": mib(growth) / max(1, len(students)),
        "rss_growth_per_page_load_kib": growth / 1024 / max(1, page_loads),
        "server_cores": out["server_cpu_s"] / max(1e-9, out["load_s"]),
        "machine_busy_fraction": out["machine_busy_s"] / max(1e-9, out["machine_total_s"]),
        "server_cpu_s_per_step": out["server_cpu_s"] / max(1, len(steps)),
        "slots": len(slots), "slot_wait_p50_s": percentile([w for w, _ in slots], 0.5),
        "slot_wait_p95_s": percentile([w for w, _ in slots], 0.95),
        "slot_held_p50_s": percentile([h for _, h in slots], 0.5),
        "slot_held_p95_s": percentile([h for _, h in slots], 0.95),
    }
    lines = [
        f"SpecDec Lab load test — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"machine: {os.cpu_count()} CPU cores; server: streamlit run app.py, bundled pair, 1 torch thread, "
        f"SPECDEC_MAX_CONCURRENT={summary['max_concurrent']}",
        f"students: {len(students)} concurrent headless-Chromium contexts, {summary['minutes']:.1f} min of load, "
        f"seeds {args.seed0}…{args.seed0 + len(students) - 1}, {args.max_new} new tokens per generation, γ = {GAMMA}",
        f"work: {len(steps)} demo steps, {page_loads} page loads (Streamlit sessions), "
        f"{summary['abandoned']} races left mid-generation, {queued} runs queued over 1 s",
        "",
        f"ERRORS: {errors}  (failed steps {len(failed)}, browser JS errors {len(js_errors)}, tracebacks in the "
        f"server log {tracebacks}, uncaught app exceptions {uncaught})",
        f"OUTPUTS: greedy identical to the single-session run {summary['greedy_identical']}; seeded sampling "
        f"identical to a sequential run with the same seed {summary['seeded_identical']}",
        "",
        f"time to result, all steps: p50 {summary['p50_s']:.2f} s, p95 {summary['p95_s']:.2f} s, "
        f"max {summary['max_s']:.2f} s",
    ]
    for name, values in by_step.items():
        lines.append(f"  {name:34s} n={len(values):4d}  p50 {percentile(values, 0.5):6.2f} s  "
                     f"p95 {percentile(values, 0.95):6.2f} s")
    lines += [
        f"one student alone before the load: {summary['solo_pass_s']:.1f} s for a first pass through the demos "
        f"(models loaded, passes timed); after the load, a fresh student decoded in {summary['after_pass_s']:.1f} s "
        "(every slot was free again)",
        f"server side, {len(slots)} generation slots (whole run): queue wait p50 {summary['slot_wait_p50_s']:.2f} s, "
        f"p95 {summary['slot_wait_p95_s']:.2f} s; slot held p50 {summary['slot_held_p50_s']:.2f} s, "
        f"p95 {summary['slot_held_p95_s']:.2f} s",
        f"CPU during the load: the machine was {summary['machine_busy_fraction']:.0%} busy; the server used "
        f"{summary['server_cores']:.2f} of its {os.cpu_count()} cores ({summary['server_cpu_s_per_step']:.2f} CPU s per "
        "demo step), the browsers on the same machine and anything else running the rest",
        f"server RSS: {summary['rss_warm_mib']:.0f} MiB warm, peak {summary['rss_peak_mib']:.0f} MiB, "
        f"{summary['rss_end_mib']:.0f} MiB after; growth {summary['rss_growth_per_student_mib']:.1f} MiB per student "
        f"({summary['rss_growth_per_page_load_kib']:.0f} KiB per page load)",
    ]
    if failed or differing or js_errors or tracebacks or uncaught:
        lines.append("")
        lines.append("PROBLEMS (first 10):")
        for st in failed[:10]:
            lines.append(f"  student {st.student}, {st.name}: {st.error}")
        for st in differing[:10]:
            lines.append(f"  student {st.student}, {st.name}: output differs from the {st.expected} run")
        for e in js_errors[:10]:
            lines.append(f"  browser JS error: {e}")
        if tracebacks or uncaught:
            lines.append(f"  server log: {server.log_path}")
    return "\n".join(lines), summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=20, help="students at once (browser contexts); default 20")
    ap.add_argument("--minutes", type=float, default=3.0, help="how long the crowd keeps going; default 3")
    ap.add_argument("--port", type=int, default=0, help="server port (default: a free one)")
    ap.add_argument("--quick", action="store_true", help="CI: 4 students, one pass each, 16 tokens")
    ap.add_argument("--max-new", type=int, default=40, help="new tokens per generation; default 40")
    ap.add_argument("--max-concurrent", type=int, default=None, help="SPECDEC_MAX_CONCURRENT for the server")
    ap.add_argument("--seed0", type=int, default=1000, help="student i uses seed seed0 + i")
    ap.add_argument("--json", type=Path, default=None, help="also write the summary as JSON here")
    args = ap.parse_args(argv)
    if args.quick:
        args.sessions, args.minutes, args.max_new = min(args.sessions, 4), 0.0, 16
    if not Path(CHROMIUM).exists():
        print(f"no Chromium at {CHROMIUM}: apt-get install chromium (or set SPECDEC_CHROMIUM)", file=sys.stderr)
        return 2
    env = {"SPECDEC_THREADS": "1",
           "SPECDEC_LOG_LEVEL": "DEBUG"}  # one log line per generation slot: waited and held, server-side
    if args.max_concurrent:
        env["SPECDEC_MAX_CONCURRENT"] = str(args.max_concurrent)
    expected = Expected(args.max_new)
    log_dir = Path(tempfile.mkdtemp(prefix="specdec-load-"))
    server = Server(args.port or None, env, log_dir / "server.log")
    try:
        server.wait_healthy()
        out = asyncio.run(drive(args, server, expected))
    finally:
        server.stop()
    text, summary = report(args, server, out, env)
    print(text)
    if args.json:
        args.json.write_text(json.dumps({**summary, "report": text}, indent=1, default=str))
    return 0 if summary["errors"] == 0 and summary["differing"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
