"""Training loop for the bundled GPT-2 models: next-token cross-entropy, or distillation from a teacher.

Resumable: a checkpoint (model, optimizer, step, elapsed time) is written every `ckpt_every` steps
and picked up on the next start. Progress goes to a JSON-lines log that the model card plots.
"""
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel


@dataclass
class ModelShape:
    n_layer: int
    n_embd: int
    n_head: int
    n_positions: int = 256  # context window of the bundled pair


@dataclass
class TrainSettings:
    steps: int
    batch: int = 8
    seq: int = 256
    lr: float = 1e-3
    warmup: int = 100
    eval_every: int = 100
    eval_batches: int = 10
    ckpt_every: int = 100
    seed: int = 0
    distill_weight: float = 0.0  # 0: pure cross-entropy; 1: pure KL to the teacher


def new_model(shape: ModelShape, vocab_size: int, eos_id: int) -> GPT2LMHeadModel:
    """A randomly initialised GPT-2 of the given shape (seeded by the caller's generator state)."""
    config = GPT2Config(
        vocab_size=vocab_size, n_positions=shape.n_positions, n_embd=shape.n_embd,
        n_layer=shape.n_layer, n_head=shape.n_head, bos_token_id=eos_id, eos_token_id=eos_id,
    )
    return GPT2LMHeadModel(config)


def batches(stream: np.ndarray, batch: int, seq: int, rng: np.random.Generator):
    """Endless random windows of `seq + 1` tokens from a token stream, as (inputs, labels)."""
    while True:
        starts = rng.integers(0, len(stream) - seq - 1, size=batch)
        window = torch.from_numpy(np.stack([stream[s:s + seq + 1] for s in starts]).astype(np.int64))
        yield window[:, :-1], window[:, 1:]


def lr_at(step: int, s: TrainSettings) -> float:
    """Linear warm-up, then cosine decay to a tenth of the peak."""
    if step < s.warmup:
        return s.lr * (step + 1) / s.warmup
    frac = (step - s.warmup) / max(1, s.steps - s.warmup)
    return s.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))


@torch.no_grad()
def evaluate(model, stream: np.ndarray, s: TrainSettings) -> float:
    """Mean next-token cross-entropy (nats) on fixed validation windows."""
    model.eval()
    rng = np.random.default_rng(1234)
    gen = batches(stream, s.batch, s.seq, rng)
    losses = []
    for _ in range(s.eval_batches):
        x, y = next(gen)
        logits = model(x).logits
        losses.append(F.cross_entropy(logits.flatten(0, 1), y.flatten()).item())
    model.train()
    return float(np.mean(losses))


def loss_fn(model, x, y, teacher, distill_weight: float):
    """Cross-entropy to the data, mixed with KL(teacher || model) when distilling."""
    logits = model(x).logits
    ce = F.cross_entropy(logits.flatten(0, 1), y.flatten())
    if teacher is None or distill_weight == 0:
        return ce, ce
    with torch.no_grad():
        p_teacher = F.softmax(teacher(x).logits, dim=-1)
    kl = F.kl_div(F.log_softmax(logits, dim=-1), p_teacher, reduction="batchmean") / x.shape[1]
    return (1 - distill_weight) * ce + distill_weight * kl, ce


def train(model, train_stream, val_stream, s: TrainSettings, run_dir: Path, teacher=None, log=print):
    """Train `model` in place for `s.steps` steps, resuming from run_dir/ckpt.pt if present."""
    run_dir.mkdir(parents=True, exist_ok=True)
    ckpt_path, log_path = run_dir / "ckpt.pt", run_dir / "log.jsonl"
    opt = torch.optim.AdamW(model.parameters(), lr=s.lr, weight_decay=0.1, betas=(0.9, 0.95))
    step, elapsed = 0, 0.0
    if ckpt_path.exists():
        state = torch.load(ckpt_path, weights_only=True)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step, elapsed = state["step"], state["elapsed"]
        log(f"resumed {run_dir.name} at step {step}")
    rng = np.random.default_rng(s.seed + step)  # resuming draws fresh windows, not a replay
    gen = batches(train_stream, s.batch, s.seq, rng)
    if teacher is not None:
        teacher.eval()
    model.train()
    t0 = time.perf_counter() - elapsed
    with log_path.open("a") as f:
        while step < s.steps:
            for group in opt.param_groups:
                group["lr"] = lr_at(step, s)
            x, y = next(gen)
            loss, ce = loss_fn(model, x, y, teacher, s.distill_weight)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            row = {"step": step, "train_ce": round(ce.item(), 4), "elapsed_s": round(time.perf_counter() - t0, 1)}
            if step % s.eval_every == 0 or step == s.steps:
                row["val_ce"] = round(evaluate(model, val_stream, s), 4)
                log(f"{run_dir.name} step {step}/{s.steps} train {row['train_ce']:.3f} val {row['val_ce']:.3f} "
                    f"({row['elapsed_s']:.0f}s)")
            f.write(json.dumps(row) + "\n")
            f.flush()
            if step % s.ckpt_every == 0 or step == s.steps:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                            "elapsed": time.perf_counter() - t0, "settings": asdict(s)}, ckpt_path)
    model.eval()
    return model
