"""Train EAGLE-3-style drafters on the frozen bundled target, one ablation variant per call:

    specdec train eagle3 --variant {eagle1,ttt,vocab,fused} [--steps 240] [--minutes 15] [--draft-vocab 1024]
                         [--features FILE] [--run DIR] [--out DIR]

Every variant starts from the bundled EAGLE-1 drafter (assets/models/shakespeare-heads/eagle) and gets
the same steps on the same windows, so the variants differ by one change at a time:

- eagle1: EAGLE-1's own recipe continued (smooth L1 to the next feature + 0.1 CE, noise on the
  input features, one step): the control, which says what the extra steps alone buy;
- ttt: EAGLE-3's training-time test (Li et al. 2025, section 3.2): the drafter is unrolled on its own
  predicted features for `ttt_steps` draft steps, cross-entropy against the target's distribution at
  every step (weight 0.8^j, as the EAGLE-3 release weighs its steps), no feature-regression loss;
- vocab: ttt + a reduced draft vocabulary, the `draft_vocab` most frequent tokens of the training
  text (EAGLE-3's release: d2t maps a draft index to the target's token); the drafter's readout is
  those rows of the target's frozen LM head, so it costs a quarter of the full head (the shipped
  drafter: --draft-vocab 2048, half of it);
- fused: vocab + EAGLE-3's feature fusion: low, middle and top layer of the target, concatenated,
  through fc to the width (the core's passes hand the drafter those three states of every token they
  verify: its config's target_layers).

1. Features once (shared by the variants, in --features): the target's hidden states after layers
   FUSED_LAYERS (the last after ln_f) over random windows of the training plays and held-out plays.
2. Training: AdamW, warm-up then cosine decay over the steps or the time budget, one torch thread by
   default; a checkpoint every `ckpt_every` steps and a JSON-lines log; --out exports the drafter.
"""
import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ...self_drafters.files import load_net, read_config, save_heads
from ...self_drafters.nets import Eagle3Net, HeadsConfig, target_fingerprint, target_readout
from .corpus import load_plays, split_plays
from .heads import windows
from .runlog import run_log

FUSED_LAYERS = (2, 4, 8)  # GPT-2 hidden_states indices: after 2 and 4 of the 8 blocks, and the top (after ln_f)
VARIANTS = ("eagle1", "ttt", "vocab", "fused")


@dataclass
class Eagle3Settings:
    steps: int = 240
    batch: int = 4
    window: int = 256
    train_windows: int = 600
    val_windows: int = 32
    lr: float = 3e-4  # a fine-tune of the bundled EAGLE-1 drafter
    warmup: int = 20
    ttt_steps: int = 3
    step_decay: float = 0.8  # EAGLE-3's weight 0.8^j on draft step j
    draft_vocab: int = 1024
    feature_weight: float = 1.0  # eagle1 only: EAGLE v_w
    token_weight: float = 0.1  # eagle1 only: EAGLE p_w
    noise: float = 0.2  # eagle1 only: uniform noise on the input features, scaled by 512 / width
    eval_every: int = 40
    ckpt_every: int = 20
    seed: int = 0


TINY = Eagle3Settings(steps=3, batch=2, window=32, train_windows=4, val_windows=2, warmup=1, draft_vocab=64,
                      eval_every=2, ckpt_every=2)


@torch.no_grad()
def layer_features(target, ids: np.ndarray, batch: int = 8) -> torch.Tensor:
    """(n, T, L, E) fp16 hidden states of the target at FUSED_LAYERS over token windows (n, T)."""
    out = []
    for i in range(0, len(ids), batch):
        hs = target.transformer(input_ids=torch.from_numpy(ids[i:i + batch]), output_hidden_states=True).hidden_states
        out.append(torch.stack([hs[j] for j in FUSED_LAYERS], dim=2).half())
    return torch.cat(out)


def frequent_tokens(ids: np.ndarray, n: int, vocab: int) -> torch.Tensor:
    """The n most frequent tokens of `ids`, most frequent first (EAGLE-3's draft vocabulary, d2t)."""
    counts = np.bincount(ids.reshape(-1), minlength=vocab)
    return torch.from_numpy(np.argsort(-counts, kind="stable")[:n].copy()).long()


def target_probs(lm_head: torch.Tensor, top: torch.Tensor, d2t: torch.Tensor) -> torch.Tensor:
    """The target's next-token distribution from its top features, over the draft vocabulary
    (renormalised there, as EAGLE-3's training does)."""
    return F.softmax(F.linear(top, lm_head[d2t]), -1)


def unroll_loss(net: Eagle3Net, lm_head, wte, feats, ids, steps: int, decay: float):
    """Training-time test: draft step j at window position t reads the pair (its own step j - 1 output,
    token t + 1 + j) and attends to the target's pairs up to t and its own earlier steps at t, as a
    round drafting after t does; step 0 reads the target's (fused) feature t. CE of the readout against
    the target's distribution of token t + j + 2 at every step. Returns (loss, agreement per step)."""
    B, T = ids.shape
    n = T - 1  # pairs (feature t, token t + 1), t = 0 .. T - 2
    f = net.fuse_features(feats[:, :n].flatten(2))
    top = feats[:, :, -1]
    head = lm_head[net.d2t]
    keys, values, loss, agree = [], [], 0.0, []
    for j in range(steps):
        valid = n - j  # positions t whose token t + 1 + j and target feature t + 1 + j exist
        tok = torch.zeros(B, n, dtype=torch.long)
        tok[:, :valid] = ids[:, 1 + j:1 + j + valid]
        f, k, v = net.unroll_step(f, F.embedding(tok, wte), keys, values)
        keys.append(k)
        values.append(v)
        logp = F.log_softmax(F.linear(f[:, :valid], head), -1)
        p = target_probs(lm_head, top[:, 1 + j:1 + j + valid], net.d2t)
        loss = loss + decay ** j * -(p * logp).sum(-1).mean()
        agree.append((logp.argmax(-1) == p.argmax(-1)).float().mean().item())
    return loss, agree


def eagle1_loss(net: Eagle3Net, lm_head, wte, feats, ids, s: Eagle3Settings, noise: bool):
    """EAGLE-1's loss (tools/train/heads.py `eagle_loss`) on the top feature: (loss, agreement)."""
    top = feats[:, :, -1]
    f_in, f_out = top[:, :-1], top[:, 1:]
    if noise:
        f_in = f_in + (torch.rand_like(f_in) - 0.5) * s.noise * 512 / f_in.shape[-1]
    pred = net(f_in, F.embedding(ids[:, 1:], wte))
    p = F.softmax(F.linear(f_out, lm_head), -1)
    logp = F.log_softmax(F.linear(pred, lm_head), -1)
    loss = s.feature_weight * F.smooth_l1_loss(pred, f_out) + s.token_weight * -(p * logp).sum(-1).mean()
    return loss, (logp.argmax(-1) == p.argmax(-1)).float().mean().item()


def new_net(variant: str, init: Path, d2t: torch.Tensor) -> Eagle3Net:
    """The variant's network, its decoder layer taken from the bundled EAGLE-1 drafter in `init`; a
    fused variant's fc starts by picking the top layer, so every variant starts where EAGLE-1 is."""
    base = load_net(init, read_config(init))
    fused = len(FUSED_LAYERS) if variant == "fused" else 1
    net = Eagle3Net(base.width, base.n_head, fused, len(d2t))
    net.load_state_dict(base.state_dict(), strict=False)
    net.d2t.copy_(d2t)
    if net.fuse is not None:
        with torch.no_grad():
            net.fuse.weight.zero_()
            net.fuse.bias.zero_()
            net.fuse.weight[:, -base.width:] = torch.eye(base.width)
    for p in net.parameters():
        p.requires_grad_(True)
    return net


def load_features(args, s: Eagle3Settings, target, tok, log) -> dict:
    """The windows and their layer features, computed once into args.features and shared by the variants."""
    if args.features.exists():
        return torch.load(args.features, weights_only=True)
    t = time.perf_counter()
    train_plays, val_plays = split_plays(load_plays())
    if args.tiny:
        train_plays = dict(list(train_plays.items())[:1])
    enc = lambda plays: np.array([i for text in plays.values() for i in tok.encode(text) + [tok.eos_token_id]],
                                 dtype=np.int32)
    rng = np.random.default_rng(s.seed)
    train_stream = enc(train_plays)
    d = {"freq": frequent_tokens(train_stream, len(tok), len(tok))}
    for name, stream, n in (("train", train_stream, s.train_windows), ("val", enc(val_plays), s.val_windows)):
        ids = windows(stream, n, s.window, rng)
        d[f"{name}_ids"], d[f"{name}_feats"] = torch.from_numpy(ids), layer_features(target, ids)
    args.features.parent.mkdir(parents=True, exist_ok=True)
    torch.save(d, args.features)
    log(f"features of layers {FUSED_LAYERS} over {s.train_windows}+{s.val_windows} windows of {s.window} "
        f"tokens ({time.perf_counter() - t:.0f}s)")
    return d


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="specdec train eagle3", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", choices=VARIANTS, default="vocab")
    ap.add_argument("--target", type=Path, default=Path("assets/models/shakespeare-target"))
    ap.add_argument("--init", type=Path, default=Path("assets/models/shakespeare-heads/eagle"))
    ap.add_argument("--features", type=Path, default=Path("runs/eagle3/features.pt"))
    ap.add_argument("--run", type=Path, default=None, help="work folder (default runs/eagle3/<variant>)")
    ap.add_argument("--out", type=Path, default=None, help="export the drafter here (e.g. assets/models/"
                                                             "shakespeare-heads/eagle3)")
    ap.add_argument("--minutes", type=float, default=15.0, help="stop after this long")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--draft-vocab", type=int, default=None, help="tokens in the reduced draft vocabulary (1024)")
    ap.add_argument("--features-only", action="store_true", help="compute the shared features and stop")
    ap.add_argument("--tiny", action="store_true", help="a few steps on a slice (for tests)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    s = TINY if args.tiny else Eagle3Settings()
    if args.steps:
        s.steps = args.steps
    if args.draft_vocab:
        s.draft_vocab = args.draft_vocab
    run = args.run or args.features.parent / args.variant
    log = run_log(run)

    from transformers import AutoModelForCausalLM, AutoTokenizer
    target = AutoModelForCausalLM.from_pretrained(args.target, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(args.target)
    for p in target.parameters():
        p.requires_grad_(False)
    lm_head, wte = target_readout(target)
    s.window = min(s.window, target.config.n_positions)
    d = load_features(args, s, target, tok, log)
    if args.features_only:
        return
    torch.manual_seed(s.seed)  # training is offline and single-user: a global seed is fine here
    vocab = lm_head.shape[0]
    d2t = d["freq"][:s.draft_vocab] if args.variant in ("vocab", "fused") else torch.arange(vocab)
    net = new_net(args.variant, args.init, d2t)
    layers = slice(None) if args.variant == "fused" else slice(-1, None)  # the top feature only, unfused
    opt = torch.optim.AdamW([p for p in net.parameters() if p.requires_grad], lr=s.lr, weight_decay=0.0,
                            betas=(0.9, 0.95))
    ckpt, log_path = run / "ckpt.pt", run / "log.jsonl"
    step, elapsed = 0, 0.0
    if ckpt.exists():
        state = torch.load(ckpt, weights_only=True)
        net.load_state_dict(state["net"])
        opt.load_state_dict(state["opt"])
        step, elapsed, start_eval = state["step"], state["elapsed"], state.get("start", {})
        log(f"resumed at step {step}")
    rng = np.random.default_rng(s.seed + 1 + step)  # every variant sees the same windows in the same order
    t0, budget_s, stopped_early = time.perf_counter() - elapsed, args.minutes * 60, False

    def loss_of(feats, ids, noise: bool):
        if args.variant == "eagle1":
            loss, agree = eagle1_loss(net, lm_head, wte, feats, ids, s, noise)
            return loss, [agree]
        return unroll_loss(net, lm_head, wte, feats[:, :, layers], ids, s.ttt_steps, s.step_decay)

    def evaluate() -> dict:
        """Held-out: the variant's own loss, and every variant unrolled `ttt_steps` steps (full vocabulary
        agreement with the target's argmax where the draft vocabulary holds it)."""
        net.eval()
        with torch.no_grad():
            feats, ids = d["val_feats"].float(), d["val_ids"]
            loss, _ = loss_of(feats, ids, noise=False)
            _, agree = unroll_loss(net, lm_head, wte, feats[:, :, layers], ids, s.ttt_steps, s.step_decay)
        net.train()
        return {"val_loss": round(float(loss), 4), "val_agree_by_step": [round(a, 4) for a in agree]}

    def save_ckpt():
        torch.save({"net": net.state_dict(), "opt": opt.state_dict(), "step": step, "start": start_eval,
                    "elapsed": time.perf_counter() - t0, "settings": asdict(s)}, ckpt)

    if step == 0:
        start_eval = evaluate()
        log(f"{args.variant}: at the start {start_eval}")
    net.train()
    n_train = len(d["train_ids"])
    with log_path.open("a") as f:
        while step < s.steps:
            if time.perf_counter() - t0 > budget_s:
                stopped_early = True
                log(f"time budget of {args.minutes} min reached at step {step}/{s.steps}")
                break
            frac = min(1.0, max(step / s.steps, (time.perf_counter() - t0) / budget_s))
            lr = s.lr * (step + 1) / s.warmup if step < s.warmup else s.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * frac)))
            for group in opt.param_groups:
                group["lr"] = lr
            pick = torch.from_numpy(rng.integers(0, n_train, size=s.batch))
            loss, agree = loss_of(d["train_feats"][pick].float(), d["train_ids"][pick], noise=True)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            step += 1
            row = {"step": step, "loss": round(loss.item(), 4), "agree": [round(a, 3) for a in agree],
                   "elapsed_s": round(time.perf_counter() - t0, 1)}
            if step % s.eval_every == 0 or step == s.steps:
                row.update(evaluate())
                log(f"step {step}/{s.steps} val {row['val_loss']:.3f} agree by step {row['val_agree_by_step']} "
                    f"({row['elapsed_s']:.0f}s)")
            f.write(json.dumps(row) + "\n")
            f.flush()
            if step % s.ckpt_every == 0:
                save_ckpt()
    save_ckpt()
    final = evaluate()
    summary = {"variant": args.variant, "steps": step, "planned_steps": s.steps, "stopped_by_budget": stopped_early,
               "seconds": round(time.perf_counter() - t0), "settings": asdict(s), "start": start_eval, **final,
               "command": "specdec train eagle3 " + " ".join(sys.argv[1:] if argv is None else argv)}
    (run / "summary.json").write_text(json.dumps(summary, indent=1))
    if args.out is not None:
        config = HeadsConfig("eagle3", lm_head.shape[1], vocab, target_fingerprint(target), n_head=net.n_head,
                             target_name=args.target.name, draft_vocab=len(d2t), fused_layers=net.n_fused,
                             target_layers=FUSED_LAYERS if net.n_fused > 1 else ())
        save_heads(args.out, net, config, summary)
    log(f"{args.variant} done after {step} steps: {final}")


if __name__ == "__main__":
    main()
