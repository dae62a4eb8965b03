"""Command line (installed as `specdec`, or `python -m specdec_core`):

    specdec generate --prompt "..." --gamma 4 --temperature 0 --max-new-tokens 40 [--json]
    specdec bench [--quick] [--pair shakespeare ...] [--out DIR]
    specdec train [--tiny] [--out DIR]      (its own options: specdec train --help)
"""
import argparse
import json
import sys

from .bench import add_arguments as bench_arguments, main as bench_main
from ..drafters import NgramDrafter, UnigramDrafter
from ..pairs import PAIRS, PairUnavailable, load_pair
from ..sampler import autoregressive_generate, speculative_generate
from ..sampling import SamplingConfig
from ..trace import rounds_frame


def _generate(args) -> int:
    pair = load_pair(args.pair)
    ids = pair.tokenizer.encode(args.prompt)
    sampling = SamplingConfig(args.temperature, args.top_k, args.top_p)
    drafter = {"model": pair.draft, "ngram": NgramDrafter(), "unigram": UnigramDrafter()}[args.drafter]
    if args.plain:
        res = autoregressive_generate(pair.target, ids, args.max_new_tokens, sampling, seed=args.seed)
    else:
        res = speculative_generate(pair.target, drafter, ids, gamma=args.gamma, max_new_tokens=args.max_new_tokens,
                                   sampling=sampling, seed=args.seed)
    text = pair.tokenizer.decode(res.tokens)
    stats = {"pair": args.pair, "tokens": len(res.tokens), "target_passes": res.target_passes,
             "draft_passes": res.draft_passes, "acceptance_rate": res.acceptance_rate,
             "tokens_per_target_pass": res.tokens_per_pass, "seconds": res.total_s, "seed": res.seed,
             "stop_reason": res.stop_reason}
    if args.json:
        rounds = rounds_frame(res.rounds).to_dict(orient="records") if res.rounds else []
        print(json.dumps({"prompt": args.prompt, "text": text, "token_ids": res.tokens, **stats, "rounds": rounds}))
    else:
        print(args.prompt + text)
        print("\n--- " + ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in stats.items()))
        if res.rounds:
            print(rounds_frame(res.rounds).to_string(index=False))
    return 0


def main(argv=None) -> int:
    """Run one subcommand; returns the process exit status (2 with a one-line message on bad input)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["train"]:  # training keeps its own parser (and its own --help)
        from .train.__main__ import main as train_main
        train_main(argv[1:])
        return 0
    ap = argparse.ArgumentParser(prog="specdec", description="SpecDec Lab core")
    sub = ap.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="generate text with speculative (or plain) decoding")
    g.add_argument("--prompt", required=True)
    g.add_argument("--pair", default="shakespeare", choices=sorted(PAIRS))
    g.add_argument("--drafter", default="model", choices=["model", "ngram", "unigram"])
    g.add_argument("--gamma", type=int, default=4)
    g.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    g.add_argument("--top-k", type=int, default=None)
    g.add_argument("--top-p", type=float, default=None)
    g.add_argument("--max-new-tokens", type=int, default=40)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--plain", action="store_true", help="plain autoregressive decoding instead")
    g.add_argument("--json", action="store_true", help="machine-readable output")
    g.set_defaults(func=_generate)
    b = sub.add_parser("bench", help="benchmark against plain decoding and transformers' assisted generation")
    bench_arguments(b)
    b.set_defaults(func=bench_main)
    sub.add_parser("train", help="train the bundled Shakespeare pair (about an hour on 2 cores)")
    args = ap.parse_args(argv)
    args.argv = argv  # the benchmark quotes its own command
    try:
        return args.func(args)
    except (ValueError, PairUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
