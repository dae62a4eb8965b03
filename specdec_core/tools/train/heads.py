"""Train the self-drafters on the bundled target, which stays frozen:

    specdec train heads [--minutes 45] [--tiny] [--target DIR] [--run DIR] [--out DIR]

1. Features once: the target reads windows of the training plays (and of the held-out plays, for
   validation) and we keep its final hidden state (after ln_f) at every position, fp16 on disk.
2. Medusa heads: head k on feature t learns the target's own distribution for token t + k + 1
   (soft labels from the frozen LM head on feature t + k: Medusa's self-distillation, on corpus
   text), loss weight 0.8^k as Medusa-1 weighs its heads.
3. EAGLE: on pairs (feature t, token t + 1) it predicts feature t + 1: smooth L1 to the target's
   feature (weight 1.0) + cross-entropy of the LM head's readout against the target's distribution
   (weight 0.1), uniform noise on the input features; EAGLE's train/main.py (p_w 0.1, v_w 1.0,
   noise std 0.2 * 512 / width).
Both train in one loop, step by step in turn, so that a time budget (`--minutes`) cuts both at the
same point; checkpoints every `ckpt_every` steps and a JSON-lines log (the model card plots it). The
learning rate decays over the steps or the budget, whichever runs out first; the log says which.
"""
import argparse
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ...self_drafters.files import save_heads
from ...self_drafters.nets import EagleNet, HeadsConfig, MedusaHeads, target_fingerprint, target_readout
from .corpus import load_plays, split_plays
from .runlog import run_log


@dataclass
class HeadsSettings:
    steps: int = 1200  # per drafter; the time budget may stop earlier
    batch: int = 4  # windows per step
    window: int = 256  # the target's context
    train_windows: int = 1000  # feature windows of the training plays (computed once)
    val_windows: int = 48  # of the held-out plays
    n_heads: int = 5  # Medusa heads: a chain of gamma = 5 at most
    lr: float = 1e-3
    warmup: int = 50
    eval_every: int = 100
    ckpt_every: int = 50
    seed: int = 0
    head_decay: float = 0.8  # Medusa-1's weight 0.8^k on head k
    feature_weight: float = 1.0  # EAGLE v_w
    token_weight: float = 0.1  # EAGLE p_w
    noise: float = 0.2  # EAGLE uniform noise, scaled by 512 / width
    medusa_positions: int = 64  # positions per window a Medusa step is trained on (its K readouts are the cost)


TINY = HeadsSettings(steps=4, batch=2, window=32, train_windows=8, val_windows=2, n_heads=3, warmup=1,
                     eval_every=2, ckpt_every=2)


def lr_at(step: int, elapsed_s: float, budget_s: float, s: HeadsSettings) -> float:
    """Linear warm-up, then cosine decay to a tenth of the peak over whichever runs out first, the
    steps or the time budget (a shared machine may give far fewer steps than planned)."""
    if step < s.warmup:
        return s.lr * (step + 1) / s.warmup
    frac = min(1.0, max((step - s.warmup) / max(1, s.steps - s.warmup), elapsed_s / budget_s))
    return s.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))


def windows(stream: np.ndarray, n: int, length: int, rng: np.random.Generator) -> np.ndarray:
    """n random windows of `length` tokens (n, length)."""
    starts = rng.integers(0, len(stream) - length, size=n)
    return np.stack([stream[s:s + length] for s in starts]).astype(np.int64)


@torch.no_grad()
def features_of(target, ids: np.ndarray, batch: int = 8) -> torch.Tensor:
    """(n, T, E) fp16 final hidden states of the target (after ln_f) over token windows (n, T)."""
    out = []
    for i in range(0, len(ids), batch):
        x = torch.from_numpy(ids[i:i + batch])
        out.append(target.transformer(input_ids=x).last_hidden_state.half())
    return torch.cat(out)


def medusa_loss(heads, lm_head, feats, s: HeadsSettings, positions: torch.Tensor | None = None):
    """Weighted soft cross-entropy of each head against the target's distribution k steps on, at
    `positions` of each window (default all it can be judged at; training samples a subset, which
    cuts the K readouts' cost); returns (loss, per-head top-1 agreement with the target's argmax)."""
    T, K = feats.shape[1], len(heads.blocks)
    t = torch.arange(T - K) if positions is None else positions  # head k on feature t is judged at t + k + 1
    out = heads(feats[:, t])  # (K, B, n, E)
    loss, agree = 0.0, []
    for k in range(K):
        logp = F.log_softmax(F.linear(out[k], lm_head), -1)
        p = F.softmax(F.linear(feats[:, t + k + 1], lm_head), -1)  # the target's p(token t + k + 2 | ..t + k + 1)
        loss = loss + s.head_decay ** k * -(p * logp).sum(-1).mean()
        agree.append((logp.argmax(-1) == p.argmax(-1)).float().mean().item())
    return loss, agree


def eagle_loss(net, lm_head, wte, feats, ids, s: HeadsSettings, noise: bool):
    """EAGLE's loss on pairs (feature t, token t + 1) -> feature t + 1; returns (loss, top-1 agreement)."""
    f_in, f_out = feats[:, :-1], feats[:, 1:]
    if noise:
        f_in = f_in + (torch.rand_like(f_in) - 0.5) * s.noise * 512 / f_in.shape[-1]
    pred = net(f_in, F.embedding(ids[:, 1:], wte))  # (B, T - 1, E)
    v_loss = F.smooth_l1_loss(pred, f_out)
    p = F.softmax(F.linear(f_out, lm_head), -1)
    logp = F.log_softmax(F.linear(pred, lm_head), -1)
    p_loss = -(p * logp).sum(-1).mean()
    agree = (logp.argmax(-1) == p.argmax(-1)).float().mean().item()
    return s.feature_weight * v_loss + s.token_weight * p_loss, agree


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="specdec train heads", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", type=Path, default=Path("assets/models/shakespeare-target"))
    ap.add_argument("--run", type=Path, default=Path("runs/heads"), help="work folder (features, checkpoints, log)")
    ap.add_argument("--out", type=Path, default=Path("assets/models/shakespeare-heads"))
    ap.add_argument("--minutes", type=float, default=45.0, help="stop both drafters after this long")
    ap.add_argument("--steps", type=int, default=None, help="steps per drafter (the schedule's length)")
    ap.add_argument("--tiny", action="store_true", help="a few steps on a slice (for tests)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--export-only", action="store_true", help="export the latest checkpoint, train no further")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    s = TINY if args.tiny else HeadsSettings()
    if args.steps:
        s.steps = args.steps
    log = run_log(args.run)

    from transformers import AutoModelForCausalLM, AutoTokenizer
    target = AutoModelForCausalLM.from_pretrained(args.target, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(args.target)
    for p in target.parameters():
        p.requires_grad_(False)
    lm_head, wte = target_readout(target)
    width, vocab = lm_head.shape[1], lm_head.shape[0]
    s.window = min(s.window, target.config.n_positions)
    torch.manual_seed(s.seed)  # training is offline and single-user: a global seed is fine here

    data = args.run / "features.pt"
    if data.exists():
        d = torch.load(data, weights_only=True)
        log(f"features loaded from {data}")
    else:
        t = time.perf_counter()
        train_plays, val_plays = split_plays(load_plays())
        if args.tiny:
            train_plays = dict(list(train_plays.items())[:1])
        rng = np.random.default_rng(s.seed)
        enc = lambda plays: np.array([i for text in plays.values() for i in tok.encode(text) + [tok.eos_token_id]],
                                     dtype=np.int32)
        d = {}
        for name, plays, n in (("train", train_plays, s.train_windows), ("val", val_plays, s.val_windows)):
            ids = windows(enc(plays), n, s.window, rng)
            d[f"{name}_ids"], d[f"{name}_feats"] = torch.from_numpy(ids), features_of(target, ids)
        torch.save(d, data)
        log(f"features of {s.train_windows}+{s.val_windows} windows of {s.window} tokens "
            f"({time.perf_counter() - t:.0f}s)")

    fingerprint = target_fingerprint(target)
    medusa, eagle = MedusaHeads(width, s.n_heads), EagleNet(width, target.config.n_head)
    opts = {name: torch.optim.AdamW(net.parameters(), lr=s.lr, weight_decay=0.0, betas=(0.9, 0.95))
            for name, net in (("medusa", medusa), ("eagle", eagle))}
    ckpt, log_path = args.run / "ckpt.pt", args.run / "log.jsonl"
    step, elapsed = 0, 0.0
    if ckpt.exists():
        state = torch.load(ckpt, weights_only=True)
        medusa.load_state_dict(state["medusa"])
        eagle.load_state_dict(state["eagle"])
        for name, opt in opts.items():
            opt.load_state_dict(state[f"opt_{name}"])
        step, elapsed = state["step"], state["elapsed"]
        log(f"resumed at step {step}")
    rng = np.random.default_rng(s.seed + 1 + step)
    n_train = len(d["train_ids"])
    t0 = time.perf_counter() - elapsed
    budget_s = args.minutes * 60
    stopped_early = False

    def evaluate() -> dict:
        medusa.eval()
        eagle.eval()
        with torch.no_grad():
            feats, ids = d["val_feats"].float(), d["val_ids"]
            m_loss, m_agree = medusa_loss(medusa, lm_head, feats, s)
            e_loss, e_agree = eagle_loss(eagle, lm_head, wte, feats, ids, s, noise=False)
        medusa.train()
        eagle.train()
        return {"val_medusa": round(float(m_loss), 4), "val_medusa_agree": [round(a, 4) for a in m_agree],
                "val_eagle": round(float(e_loss), 4), "val_eagle_agree": round(e_agree, 4)}

    def save_ckpt():
        torch.save({"medusa": medusa.state_dict(), "eagle": eagle.state_dict(), "step": step,
                    "elapsed": time.perf_counter() - t0, "settings": asdict(s),
                    **{f"opt_{n}": o.state_dict() for n, o in opts.items()}}, ckpt)

    medusa.train()
    eagle.train()
    with log_path.open("a") as f:
        while step < s.steps and not args.export_only:
            if time.perf_counter() - t0 > budget_s:
                stopped_early = True
                log(f"time budget of {args.minutes} min reached at step {step}/{s.steps}")
                break
            for opt in opts.values():
                for group in opt.param_groups:
                    group["lr"] = lr_at(step, time.perf_counter() - t0, budget_s, s)
            pick = torch.from_numpy(rng.integers(0, n_train, size=s.batch))
            feats, ids = d["train_feats"][pick].float(), d["train_ids"][pick]
            positions = torch.from_numpy(rng.choice(s.window - s.n_heads, size=min(s.medusa_positions,
                                                                                  s.window - s.n_heads), replace=False))
            m_loss, m_agree = medusa_loss(medusa, lm_head, feats, s, positions)
            e_loss, e_agree = eagle_loss(eagle, lm_head, wte, feats, ids, s, noise=True)
            for name, loss, net in (("medusa", m_loss, medusa), ("eagle", e_loss, eagle)):
                opts[name].zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
                opts[name].step()
            step += 1
            row = {"step": step, "medusa": round(m_loss.item(), 4), "eagle": round(e_loss.item(), 4),
                   "medusa_agree": [round(a, 3) for a in m_agree], "eagle_agree": round(e_agree, 3),
                   "elapsed_s": round(time.perf_counter() - t0, 1)}
            if step % s.eval_every == 0 or step == s.steps:
                row.update(evaluate())
                log(f"step {step}/{s.steps} medusa {row['val_medusa']:.3f} agree {row['val_medusa_agree']} "
                    f"eagle {row['val_eagle']:.3f} agree {row['val_eagle_agree']:.3f} ({row['elapsed_s']:.0f}s)")
            f.write(json.dumps(row) + "\n")
            f.flush()
            if step % s.ckpt_every == 0:
                save_ckpt()
    if not args.export_only:
        save_ckpt()
    final = evaluate()
    summary = {"steps": step, "planned_steps": s.steps, "stopped_by_budget": stopped_early,
               "seconds": round(time.perf_counter() - t0), "settings": asdict(s), **final}
    (args.run / "summary.json").write_text(json.dumps(summary, indent=1))
    name = args.target.name
    save_heads(args.out / "medusa", medusa, HeadsConfig("medusa", width, vocab, fingerprint, n_heads=s.n_heads,
                                                         target_name=name), summary)
    save_heads(args.out / "eagle", eagle, HeadsConfig("eagle", width, vocab, fingerprint,
                                                       n_head=target.config.n_head, target_name=name), summary)
    log(f"exported {args.out} after {step} steps: {final}")


if __name__ == "__main__":
    main()
