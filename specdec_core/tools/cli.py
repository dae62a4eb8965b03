"""Command line (installed as `specdec`, or `python -m specdec_core`):

    specdec generate --prompt "..." --gamma 4 --temperature 0 --max-new-tokens 40 [--json]
    specdec generate --prompt "..." --tree 2,2,1,1 [--node-budget 16] [--json]     (token trees)
    specdec generate --prompt "..." --policy confidence --threshold 0.05 --max-gamma 10 --json
    specdec race --prompt "..." --gamma 4 --temperature 1 --max-new-tokens 40 [--repeats 5] [--max-repeats 15]
    specdec bench [--quick] [--pair shakespeare ...] [--out DIR]
    specdec bench-policies [--drafter eagle] [--record]   (adaptive draft length against every fixed gamma)
    specdec bench-drafters [--gamma 5] [--reps 3]      (distilled draft, Medusa heads, EAGLE and EAGLE-3 drafters)
    specdec bench-batch [--sizes 1,2,4,8,16,32] [--reps 3]   (batch sizes: where speculation stops paying)
    specdec train [--tiny] [--out DIR]      (its own options: specdec train --help)
    specdec train heads [--minutes 45]      (Medusa heads + EAGLE drafter on the frozen bundled target)
    specdec train eagle3 --variant vocab --draft-vocab 2048   (the EAGLE-3 drafter; its ablation: --variant)
"""
import argparse
import json
import sys

from ..analysis import race
from ..analysis.round_stats import acceptance_metrics
from ..drafters import NgramDrafter, UnigramDrafter
from ..pairs import PAIRS, PRECISION_HELP, PRECISIONS, PairUnavailable, load_pair
from ..policies import POLICIES, SIGNALS, make_policy
from ..request import GenerationRequest
from ..sampling_config import SamplingConfig
from ..speculative import autoregressive_generate, speculative_generate
from ..trace import rounds_frame
from ..tree import tree_generate
from .bench import add_arguments as bench_arguments
from .bench import main as bench_main


def _shape(text: str) -> tuple[int, ...]:
    """--tree 2,2,1,1 -> (2, 2, 1, 1); the core checks the bounds."""
    try:
        return tuple(int(k) for k in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--tree wants branching factors such as 2,2,1,1, got {text!r}") from None


def _request(args, pair, eos_token_id: int | str | None = "model") -> GenerationRequest:
    """What the command line asks for, told once: the prompt's ids, --max-new-tokens, the sampling
    options, --seed."""
    return GenerationRequest(pair.tokenizer.encode(args.prompt), args.max_new_tokens,
                             SamplingConfig(args.temperature, args.top_k, args.top_p), args.seed, eos_token_id)


def _generate(args) -> int:
    pair = load_pair(args.pair, precision=args.precision)
    request = _request(args, pair)
    self_drafters, notes = pair.self_drafters, pair.notes
    if args.drafter in ("medusa", "eagle", "eagle3") and args.drafter not in self_drafters:
        raise ValueError(f"the {args.pair!r} pair has no {args.drafter} heads trained on its target"
                         + (f" ({'; '.join(notes)})" if notes else ""))
    drafter = {"model": pair.draft, "ngram": NgramDrafter(), "unigram": UnigramDrafter(), **self_drafters}[args.drafter]
    if args.plain:
        res = autoregressive_generate(pair.target, request)
    elif args.tree is not None or args.node_budget is not None:
        res = tree_generate(pair.target, drafter, request, shape=args.tree or (2, 2, 1, 1),
                            node_budget=args.node_budget)
    else:
        policy = make_policy(args.policy, args.gamma, args.max_gamma, args.threshold, args.signal)
        res = speculative_generate(pair.target, drafter, request, gamma=policy)
    text = pair.tokenizer.decode(res.tokens)
    stats = {"pair": args.pair, "precision": args.precision, "tokens": len(res.tokens), "target_passes": res.target_passes,
             "draft_passes": res.draft_passes, "acceptance_rate": res.acceptance_rate,
             "tokens_per_target_pass": res.tokens_per_pass, "seconds": res.total_s, "seed": res.seed,
             "stop_reason": res.stop_reason}
    if res.tree is not None:  # a token-tree run
        stats.update({"tree_shape": list(res.tree.shape), "node_budget": res.tree.node_budget,
                      "nodes": res.drafted, "nodes_per_round": res.drafts_per_round,
                      "accepted_per_round": res.accepted / max(1, len(res.rounds))})
    if not args.plain and res.tree is None:  # (the chain's acceptance metrics do not apply to trees)
        stats = {**stats, "policy": res.policy, **acceptance_metrics(res.rounds)}
    if args.json:
        rounds = rounds_frame(res.rounds).to_dict(orient="records") if res.rounds else []
        for row, r in zip(rounds, res.rounds):
            if r.tree is not None:
                row.update(nodes=r.tree.nodes, parents=r.tree.parents, path=r.tree.path)
        print(json.dumps({"prompt": args.prompt, "text": text, "token_ids": res.tokens, **stats, "rounds": rounds}))
    else:
        print(args.prompt + text)
        print("\n--- " + ", ".join(f"{k}={_fmt(v)}" for k, v in stats.items()))
        if res.rounds:
            print(rounds_frame(res.rounds).to_string(index=False))
    return 0


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, list):
        return "[" + " ".join(_fmt(v) for v in value) + "]"
    return str(value)


def _race(args) -> int:
    """The Wall-Clock Race of the app, by the same function: plain and speculative decoding of one
    request, interleaved over --repeats races (up to --max-repeats while they disagree); the median
    speedup with its spread."""
    import torch

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    pair = load_pair(args.pair)
    r = race.live_race(pair.target, pair.draft, _request(args, pair, None), args.gamma, repeats=args.repeats,
                       max_repeats=args.max_repeats)
    print(f"measured speedup {r.speedups.text()}; standard lane {r.standard_s.text(' ms', 0, 1e3)}, "
          f"speculative lane {r.speculative_s.text(' ms', 0, 1e3)}"
          + ("; the machine was busy (wide spread)" if r.speedups.busy else ""))
    return 0


def main(argv=None) -> int:
    """Run one subcommand; returns the process exit status (2 with a one-line message on bad input)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] == ["train", "heads"]:  # the self-drafters on the frozen target (their own parser)
        from .train.heads import main as heads_main
        heads_main(argv[2:])
        return 0
    if argv[:2] == ["train", "eagle3"]:  # the EAGLE-3 drafter and its ablation variants (their own parser)
        from .train.eagle3 import main as eagle3_main
        eagle3_main(argv[2:])
        return 0
    if argv[:1] == ["train"]:  # training keeps its own parser (and its own --help)
        from .train.__main__ import main as train_main
        train_main(argv[1:])
        return 0
    if argv[:1] == ["bench-policies"]:  # adaptive draft length against every fixed gamma (its own parser)
        from .bench.policies import main as policies_main
        return policies_main(argv[1:])
    if argv[:1] == ["bench-drafters"]:  # the distilled draft against the self-drafters (its own parser)
        from .bench.drafters import main as drafters_main
        return drafters_main(argv[1:])
    if argv[:1] == ["bench-batch"]:  # plain and speculative by batch size, the crossover (its own parser)
        from .bench.batching import main as batch_main
        return batch_main(argv[1:])
    ap = argparse.ArgumentParser(prog="specdec", description="SpecDec Lab core")
    sub = ap.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="generate text with speculative (or plain) decoding")
    g.add_argument("--prompt", required=True)
    g.add_argument("--pair", default="shakespeare", choices=sorted(PAIRS))
    g.add_argument("--drafter", default="model", choices=["model", "ngram", "unigram", "medusa", "eagle", "eagle3"],
                   help="medusa / eagle / eagle3: the heads trained on the bundled target (they read its features)")
    g.add_argument("--gamma", type=int, default=4, help="draft length (constant policy), or the heuristic's start")
    g.add_argument("--policy", default="constant", choices=sorted(POLICIES), help="how each round's gamma is chosen")
    g.add_argument("--max-gamma", type=int, default=None, help="adaptive policies: the longest round")
    g.add_argument("--threshold", type=float, default=None, help="confidence policy: stop below this confidence")
    g.add_argument("--signal", default=None, choices=SIGNALS, help="confidence policy: top probability or margin")
    g.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    g.add_argument("--top-k", type=int, default=None)
    g.add_argument("--top-p", type=float, default=None)
    g.add_argument("--max-new-tokens", type=int, default=40)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--plain", action="store_true", help="plain autoregressive decoding instead")
    g.add_argument("--tree", type=_shape, default=None, metavar="2,2,1,1",
                   help="draft a token tree with these children per depth (instead of a chain of --gamma)")
    g.add_argument("--node-budget", type=int, default=None,
                   help="grow a best-first tree of this many nodes (--tree then only sets the depth)")
    g.add_argument("--precision", default="fp32", choices=sorted(PRECISIONS), help=PRECISION_HELP)
    g.add_argument("--json", action="store_true", help="machine-readable output")
    g.set_defaults(func=_generate)
    r = sub.add_parser("race", help="the app's Wall-Clock Race: median speedup over interleaved races, with its spread")
    r.add_argument("--prompt", required=True)
    r.add_argument("--pair", default="shakespeare", choices=sorted(PAIRS))
    r.add_argument("--gamma", type=int, default=4)
    r.add_argument("--temperature", type=float, default=1.0, help="0 = greedy")
    r.add_argument("--top-k", type=int, default=None)
    r.add_argument("--top-p", type=float, default=None)
    r.add_argument("--max-new-tokens", type=int, default=40)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--repeats", type=int, default=race.RACE_REPEATS, help="interleaved races (as the app's race)")
    r.add_argument("--max-repeats", type=int, default=race.RACE_MAX_REPEATS,
                   help="races at most, two more at a time while their speedups disagree by over a quarter")
    r.add_argument("--threads", type=int, default=1, help="torch threads (default 1, as the app on 2 cores; 0: torch's choice)")
    r.set_defaults(func=_race)
    b = sub.add_parser("bench", help="benchmark against plain decoding and transformers' assisted generation")
    bench_arguments(b)
    b.set_defaults(func=bench_main)
    sub.add_parser("train", help="train the bundled Shakespeare pair (about an hour on 2 cores)")
    sub.add_parser("bench-policies", help="adaptive draft-length policies against every fixed gamma")
    sub.add_parser("bench-drafters", help="the distilled draft, Medusa heads and EAGLE drafter side by side")
    sub.add_parser("bench-batch", help="plain and speculative tokens/s by batch size, the crossover, the first token")
    args = ap.parse_args(argv)
    args.argv = argv  # the benchmark quotes its own command
    try:
        return args.func(args)
    except (ValueError, PairUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
