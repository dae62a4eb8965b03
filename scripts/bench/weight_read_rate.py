"""How fast a one-token pass's weight products read memory here, against a plain read of the same bytes.

    python scripts/bench/weight_read_rate.py [--repeats 30]

One torch thread, the bundled target's 32 layer matrices (the lean pass's products, 1 row each) and
its LM head, timed interleaved by the core's `stats.contest`, median and range:
  - torch.addmm on the stored (in, out) layout: what the lean pass calls;
  - F.linear and torch.addmv on an (out, in) copy: the other layout MKL could be given;
  - oneDNN's linear on a packed copy (torch.ops.mkldnn): the other library kernel torch ships;
  - a sum over all the weights, as one flat tensor: how fast this machine streams the same bytes.
It also says whether each kernel's one-row product equals the first row of its six-row product (the
bits a one-token pass and a verification pass share). A benchmark that prints figures, not a test.
"""
import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from specdec_core import load_pair  # noqa: E402
from specdec_core.analysis import stats  # noqa: E402


def layer_matrices(model) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(weight (in, out), bias) of every Conv1D product of a GPT-2 model, in pass order."""
    return [(m.weight.detach(), m.bias.detach()) for block in model.transformer.h
            for m in (block.attn.c_attn, block.attn.c_proj, block.mlp.c_fc, block.mlp.c_proj)]


@torch.inference_mode()
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model = load_pair("shakespeare").target
    layers = layer_matrices(model)
    transposed = [(w.t().contiguous(), b) for w, b in layers]
    packed = [(torch.ops.mkldnn._reorder_linear_weight(w, None), b) for w, b in transposed]
    head = model.get_output_embeddings().weight.detach()
    g = torch.Generator().manual_seed(0)
    rows = {n: torch.randn(1, n, generator=g) for n in {w.shape[0] for w, _ in layers}}
    flat = torch.cat([w.flatten() for w, _ in layers])
    mb = flat.numel() * flat.element_size() / 1e6

    def dnn(x, w, b):
        return torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")

    kernels = {
        "torch.addmm, (in, out) as stored (the lean pass)": lambda x, w, b, wt, pw: torch.addmm(b, x, w),
        "F.linear, (out, in) copy": lambda x, w, b, wt, pw: F.linear(x, wt, b),
        "torch.addmv, (out, in) copy": lambda x, w, b, wt, pw: torch.addmv(b, wt, x[0]).unsqueeze(0),
        "oneDNN linear, packed copy": lambda x, w, b, wt, pw: dnn(x, pw, b),
    }
    fs = {name: (lambda k=k: [k(rows[w.shape[0]], w, b, wt, pw)
                              for (w, b), (wt, _), (pw, _) in zip(layers, transposed, packed)])
          for name, k in kernels.items()}
    fs[f"sum over the same {mb:.0f} MB"] = lambda: flat.sum()
    fs["LM head, F.linear (1 row)"] = lambda: F.linear(rows[head.shape[1]], head)
    done = stats.contest({name: (lambda f=f: stats.timed(f)[1]) for name, f in fs.items()}, args.repeats)

    print(f"one torch thread, {len(layers)} layer matrices ({mb:.1f} MB fp32), 1 row, {args.repeats} interleaved "
          f"repetitions; {torch.backends.cpu.get_cpu_capability()}")
    print("| kernel | ms: median (range) | read rate of the layer weights | one row = first row of six |")
    print("|---|---|---|---|")
    x6 = {n: torch.cat([x, torch.randn(5, n, generator=g)]) for n, x in rows.items()}
    w, b = layers[0]
    wt, pw = transposed[0][0], packed[0][0]
    for name in fs:
        t = done.measured(name, float)
        rate = f"{mb / 1e3 / t.median:.1f} GB/s" if "head" not in name else ""
        same = ""
        if "addmv" in name:
            same = "n/a (a vector product)"
        elif name in kernels:
            one = kernels[name](rows[w.shape[0]], w, b, wt, pw)[0]
            six = kernels[name](x6[w.shape[0]], w, b, wt, pw)[0]
            same = "yes" if torch.equal(one, six) else "no"
        print(f"| {name} | {1e3 * t.median:.2f} ({1e3 * t.low:.2f}–{1e3 * t.high:.2f}) | {rate} | {same} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
