"""The benchmark: our core against plain decoding and against Hugging Face assisted generation.

    specdec bench [--quick] [--pair shakespeare ...] [--out DIR]      (or python -m specdec_core bench)

On the fixed held-out prompts of assets/bench_prompts.json, in ONE process, with every configuration
interleaved (each repetition visits prompts and configurations in a fresh shuffled order, so a slow
moment of the machine hits all of them alike) and the median of the repetitions reported:

  - plain greedy and plain sampling with our core (`autoregressive_generate`);
  - speculative greedy and sampling for every gamma, with the model drafter and the n-gram drafter;
  - transformers `generate()` plain, and with `assistant_model=` (greedy), once per constant
    `num_assistant_tokens = gamma` and once with the library's default (dynamic) setting.

Each row gets wall time, tokens/s, target passes per token, measured alpha, the speedup end to end
and for the decoding phase alone (the prompt's prefill left out, as the cost model leaves it out),
the theory's predicted speedup E / (gamma c + v(gamma)) from the measured alpha and the c and v of
the row's own passes (and, for comparison, from an isolated `pass_costs.cost_profile`), and the peak
memory of the run. Output goes to --out: bench.md (tables and the targets with PASS / MISS),
bench.csv (aggregated rows), runs.csv (every run) and bench.png.
Speedups are median over prompts of the per-prompt ratio to plain decoding of the same kind.

The modules, in the order a run uses them: plan (settings, rows, prompts), runs (timing one run and
the interleaved plan), fit (medians, the cost model fitted to the runs, targets), report (markdown,
CSV, chart), main (the command line).
"""
from ...costs import Costs
from .fit import aggregate, best_gamma, check_targets, in_run_fit, time_breakdown
from .main import add_arguments, main, parse_gammas, run, settings_from_args
from .plan import PROMPTS_FILE, SAMPLING, TARGETS, Config, Settings, baseline_of, configs, load_prompts, quick_settings
from .report import markdown_table, report_markdown
from .runs import PeakMemory, measure_pair, run_one

__all__ = ["Costs", "aggregate", "best_gamma", "check_targets", "in_run_fit", "time_breakdown", "add_arguments",
           "main", "parse_gammas", "run", "settings_from_args", "PROMPTS_FILE", "SAMPLING", "TARGETS", "Config", "Settings",
           "baseline_of", "configs", "load_prompts", "quick_settings", "markdown_table", "report_markdown",
           "PeakMemory", "measure_pair", "run_one"]
