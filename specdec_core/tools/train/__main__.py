"""Train the bundled Shakespeare pair end to end:  python -m specdec_core.tools.train [--tiny] [--out DIR]

Steps (each resumable, skipped when already done): corpus + tokenizer, the corpus-trained draft,
the target, the distilled draft (initialised from the corpus draft, then trained towards the
target's next-token distributions), and export as fp16 safetensors with the tokenizer.
"""
import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from .corpus import load_plays, split_plays
from .lm import ModelShape, TrainSettings, new_model, train
from .runlog import run_log
from .tokenizer import load_tokenizer, train_tokenizer

TARGET = ModelShape(n_layer=8, n_embd=384, n_head=6)
DRAFT = ModelShape(n_layer=1, n_embd=128, n_head=2)
FULL = {
    "draft-ce": TrainSettings(steps=2500, lr=2e-3),
    "target": TrainSettings(steps=1000, lr=1e-3),
    "draft-distill": TrainSettings(steps=500, seq=128, lr=1e-3, warmup=50, distill_weight=0.9),
}
TINY_SHAPE = ModelShape(n_layer=1, n_embd=32, n_head=2, n_positions=64)
TINY = TrainSettings(steps=4, batch=2, seq=32, warmup=1, eval_every=2, eval_batches=1, ckpt_every=2)


def prepare(run: Path, tiny: bool, log) -> None:
    """Clean the plays, train the tokenizer on the training plays only, encode both splits."""
    if (run / "val.npy").exists():
        return
    train_plays, val_plays = split_plays(load_plays())
    if tiny:  # a small slice, for the test suite
        train_plays = {k: v[:20000] for k, v in list(train_plays.items())[:2]}
        val_plays = {k: v[:5000] for k, v in val_plays.items()}
    tok = train_tokenizer(list(train_plays.values()), vocab_size=300 if tiny else 4096)
    run.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(run / "tokenizer")
    for name, plays in (("train", train_plays), ("val", val_plays)):
        ids = [i for text in plays.values() for i in tok.encode(text) + [tok.eos_token_id]]
        np.save(run / f"{name}.npy", np.array(ids, dtype=np.int32))
        log(f"{name}: {len(plays)} plays, {len(ids):,} tokens")
    (run / "split.json").write_text(json.dumps({"train": sorted(train_plays), "validation": sorted(val_plays)}))


def run_step(name, shape, settings, run, tok, streams, log, init_from=None, teacher=None):
    """Train one model (or load it if its step is done) and return it in eval mode."""
    step_dir = run / name
    torch.manual_seed(settings.seed)  # training is offline and single-user: a global seed is fine here
    model = new_model(shape, len(tok), tok.eos_token_id)
    if init_from is not None and not (step_dir / "ckpt.pt").exists():
        model.load_state_dict(init_from.state_dict())
    if (step_dir / "done").exists():
        model.load_state_dict(torch.load(step_dir / "ckpt.pt", weights_only=True)["model"])
        return model.eval()
    t = time.perf_counter()
    train(model, *streams, settings, step_dir, teacher=teacher, log=log)
    (step_dir / "done").write_text(json.dumps({"seconds": time.perf_counter() - t, **asdict(settings)}))
    return model.eval()


def export(model, tok, out: Path) -> None:
    """Save as fp16 safetensors (loaded back as float32) with the tokenizer beside it."""
    out.mkdir(parents=True, exist_ok=True)
    model.half().save_pretrained(out)
    model.float()
    tok.save_pretrained(out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, default=Path("runs/shakespeare"), help="work folder (checkpoints, logs)")
    ap.add_argument("--out", type=Path, default=Path("assets/models"), help="where the exported models go")
    ap.add_argument("--tiny", action="store_true", help="a few steps on a slice of the corpus (for tests)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    log = run_log(args.run)

    prepare(args.run, args.tiny, log)
    tok = load_tokenizer(args.run / "tokenizer")
    streams = (np.load(args.run / "train.npy"), np.load(args.run / "val.npy"))
    plan = {k: TINY for k in FULL} if args.tiny else FULL
    target_shape, draft_shape = (TINY_SHAPE, TINY_SHAPE) if args.tiny else (TARGET, DRAFT)
    draft_ce = run_step("draft-ce", draft_shape, plan["draft-ce"], args.run, tok, streams, log)
    target = run_step("target", target_shape, plan["target"], args.run, tok, streams, log)
    draft = run_step("draft-distill", draft_shape, plan["draft-distill"], args.run, tok, streams, log,
                     init_from=draft_ce, teacher=target)
    for model, name in ((target, "shakespeare-target"), (draft, "shakespeare-draft"), (draft_ce, "shakespeare-draft-ce")):
        export(model, tok, args.out / name)
        log(f"exported {args.out / name}")


if __name__ == "__main__":
    main()
