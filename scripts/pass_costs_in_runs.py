"""Does a target pass cost the same inside a generation as in a tight loop by itself?

Pairs, in one process: ten isolated passes over 1 and over gamma + 1 positions
(`pass_costs.pass_cost`, the benchmark's cost profile), then one speculative and one plain greedy
generation whose own pass timers give the same two costs. Prints v = cost(gamma + 1) / cost(1)
both ways for every pair, and the medians. docs/benchmarks.md uses it to explain why the
benchmark predicts from the runs' own pass costs. Run (about a minute, on a quiet machine):

    python scripts/pass_costs_in_runs.py [--pairs 12] [--gamma 5]
"""
import argparse
import statistics

import torch

from specdec_core.analysis.pass_costs import pass_cost
from specdec_core.pairs import load_pair
from specdec_core.request import GenerationRequest
from specdec_core.sampler import autoregressive_generate, speculative_generate
from specdec_core.sampling import GREEDY
from specdec_core.tools.bench import load_prompts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--gamma", type=int, default=5)
    ap.add_argument("--context", type=int, default=80, help="cached tokens for the isolated passes")
    args = ap.parse_args()
    torch.set_num_threads(1)
    pair = load_pair("shakespeare", device="cpu")
    prompts = [pair.tokenizer.encode(p["text"]) for p in load_prompts() if p["kind"] == "open"]
    k = args.gamma + 1
    iso, run = [], []
    for i in range(args.pairs):
        ids = prompts[i % len(prompts)]
        one, many = pass_cost(pair.target, 1, args.context, repeats=10), pass_cost(pair.target, k, args.context, repeats=10)
        request = GenerationRequest(ids, 64, GREEDY).fixed_length()
        spec = speculative_generate(pair.target, pair.draft, request, gamma=args.gamma, trace=False)
        plain = autoregressive_generate(pair.target, request)
        in_run_many = statistics.mean(r.target_pass_s for r in spec.rounds if len(r.draft_tokens) == args.gamma)
        in_run_one = statistics.mean(plain.target_pass_s)
        iso.append(many / one)
        run.append(in_run_many / in_run_one)
        print(f"pair {i + 1:2d}: isolated 1 pos {1e3 * one:.2f} ms, {k} pos {1e3 * many:.2f} ms, v {iso[-1]:.2f} | "
              f"in the runs 1 pos {1e3 * in_run_one:.2f} ms, {k} pos {1e3 * in_run_many:.2f} ms, v {run[-1]:.2f}")
    print(f"median v({args.gamma}): isolated {statistics.median(iso):.2f}, in the runs {statistics.median(run):.2f}")


if __name__ == "__main__":
    main()
