"""How far the bf16 option is from the fp32 target, on the held-out benchmark prompts.

    python scripts/bench/precision_agreement.py [--tokens 64] [--gamma 5]

Greedy, 64 new tokens per open prompt of assets/bench_prompts.json (never trained on):
  - plain bf16 decoding against plain fp32 decoding: identical outputs, and tokens until the first difference;
  - teacher-forced on the fp32 continuation (so one difference does not cascade): positions where bf16's
    argmax differs from fp32's;
  - near-ties flipped by the pass's shape: the same positions read by one-token passes (plain decoding's
    shape) and by (gamma + 1)-position passes (a verification's shape); positions whose argmax differs
    between the two, in bf16 and, as the control, in fp32;
  - speculative bf16 (gamma, the distilled draft) against plain bf16: identical outputs.
"""
import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from specdec_core import (  # noqa: E402
    GREEDY,
    GenerationRequest,
    ModelDrafter,
    autoregressive_generate,
    load_pair,
    speculative_generate,
)
from specdec_core.model import CachedLM  # noqa: E402


def argmaxes(model, prompt: list[int], cont: list[int], width: int) -> list[int]:
    """Argmax after prompt + cont[:i] for every i < len(cont), read `width` positions a pass."""
    lm, out, seq = CachedLM(model), [], [prompt[-1]] + cont[:-1]
    lm.prefill(prompt[:-1])
    for i in range(0, len(seq), width):
        out += lm.extend(seq[i:i + width]).argmax(-1).tolist()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--gamma", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    pair32 = load_pair("shakespeare", device="cpu")
    pair16 = pair32.at_precision("bf16")
    prompts = [p for p in json.loads((ROOT / "assets/bench_prompts.json").read_text())["prompts"] if p["kind"] == "open"]
    rows, n = [], args.tokens
    with torch.inference_mode():
        for p in prompts:
            ids = pair32.tokenizer.encode(p["text"])
            request = GenerationRequest(ids, n, GREEDY).fixed_length()
            ref = autoregressive_generate(pair32.target, request).tokens
            plain16 = autoregressive_generate(pair16.target, request).tokens
            spec16 = speculative_generate(pair16.target, ModelDrafter(pair16.draft), request, gamma=args.gamma).tokens
            first = next((i for i, (a, b) in enumerate(zip(ref, plain16)) if a != b), n)
            one32, wide32 = argmaxes(pair32.target, ids, ref, 1), argmaxes(pair32.target, ids, ref, args.gamma + 1)
            one16, wide16 = argmaxes(pair16.target, ids, ref, 1), argmaxes(pair16.target, ids, ref, args.gamma + 1)
            rows.append(dict(prompt=p["name"], same=plain16 == ref, first_diff=first,
                             forced_diff=sum(a != b for a, b in zip(one32, one16)),
                             flips16=sum(a != b for a, b in zip(one16, wide16)),
                             flips32=sum(a != b for a, b in zip(one32, wide32)),
                             spec_same=spec16 == plain16, fp32_check=one32 == ref))
    print(f"greedy, {n} new tokens, {len(rows)} held-out prompts; bf16 = pairs.model_at_precision(..., 'bf16')")
    print("| prompt | bf16 plain = fp32 plain | tokens before the first difference | teacher-forced argmax differences"
          f" | bf16 flips, 1-token vs {args.gamma + 1}-position passes | fp32 flips (control) | bf16 speculative = bf16 plain |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['prompt']} | {'yes' if r['same'] else 'no'} | {r['first_diff']} | {r['forced_diff']} / {n} | "
              f"{r['flips16']} / {n} | {r['flips32']} / {n} | {'yes' if r['spec_same'] else 'no'} |")
    tot = len(rows) * n
    print(f"| all | {sum(r['same'] for r in rows)} of {len(rows)} | median "
          f"{sorted(r['first_diff'] for r in rows)[len(rows) // 2]} | {sum(r['forced_diff'] for r in rows)} / {tot} | "
          f"{sum(r['flips16'] for r in rows)} / {tot} | {sum(r['flips32'] for r in rows)} / {tot} | "
          f"{sum(r['spec_same'] for r in rows)} of {len(rows)} |")
    assert all(r["fp32_check"] for r in rows), "fp32 one-token argmaxes must reproduce fp32 greedy decoding"
    return 0


if __name__ == "__main__":
    sys.exit(main())
