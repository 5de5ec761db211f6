"""How much does genfeat's training loop add to a bare forward/backward/step loop?

Same model, same batches, same optimizer (AdamW), measured alternately in one process:

    bare:  x, y = next(data); loss = nll(model(x), y); loss.backward(); opt.step(); opt.zero_grad()
    fit:   genfeat.train.fit(...) with its LR scheduler, NaN check, tqdm bar, metrics.jsonl logging
           (evaluation off, gradient clipping off: both are work the bare loop would not do)

Reported: median per-step time of each over several alternating repeats and the ratio fit / bare.
Writes docs/results/loop_overhead.{md,json}.

    python -m benchmarks.loop_overhead [--steps 100] [--repeats 7] [--batch 8] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks.common import write_results
from genfeat.data.streams import OrderedSegments
from genfeat.losses import nll
from genfeat.models.gpt import GPTConfig, build_gpt_lm
from genfeat.train.loop import TrainConfig, build_optimizer, fit


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)  # the quickstart's shape: small steps, overhead most visible
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=10000)
    args = ap.parse_args()
    device = torch.device(args.device)
    tokens = np.random.default_rng(0).integers(0, args.vocab, size=2_000_000)
    mcfg = GPTConfig(vocab_size=args.vocab, n_layer=args.layers, n_head=4, d_model=args.d_model,
                     max_len=args.seq, dropout=0.1)
    tcfg = TrainConfig(max_steps=args.steps, warmup_steps=10, eval_every=0, clip_norm=0.0, precision="fp32",
                       log_every=10, keep_last=1)
    torch.manual_seed(0)
    model = build_gpt_lm(mcfg).to(device)
    opt = build_optimizer(model, tcfg)

    def loss_fn(m, batch):
        x, y = (t.to(device, non_blocking=True) for t in batch)
        out, _ = m(x)
        return nll(out, y), y.numel()

    def bare() -> float:
        data = OrderedSegments(tokens, args.batch, args.seq)
        sync(device)
        t = time.perf_counter()
        for _ in range(args.steps):
            loss, _ = loss_fn(model, next(data))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        sync(device)
        return (time.perf_counter() - t) / args.steps

    def with_fit() -> tuple[float, float]:
        data = OrderedSegments(tokens, args.batch, args.seq)
        with tempfile.TemporaryDirectory() as tmp:
            sync(device)
            t = time.perf_counter()
            res = fit(model, loss_fn, data, tcfg, Path(tmp), optimizer=opt, desc="fit")
            sync(device)
            whole = (time.perf_counter() - t) / args.steps
        return res.train_time / args.steps, whole

    bare()  # warm-up (allocator, kernels)
    b, f, w = [], [], []
    for _ in range(args.repeats):
        b.append(bare())
        step, whole = with_fit()
        f.append(step)
        w.append(whole)
    mb, mf, mw = statistics.median(b), statistics.median(f), statistics.median(w)
    ratio, ratio_whole = mf / mb, mw / mb
    print(f"per-run ms/step  bare {[round(x * 1e3, 1) for x in b]}  fit {[round(x * 1e3, 1) for x in f]}")
    print(f"bare {mb * 1e3:.1f} ms/step   fit {mf * 1e3:.1f} ms/step   ratio {ratio:.3f}   "
          f"(whole fit() call incl. final checkpoint + plot: {ratio_whole:.3f})")
    n_params = sum(p.numel() for p in model.parameters())
    results = {"bare_ms_per_step": round(mb * 1e3, 2), "fit_ms_per_step": round(mf * 1e3, 2),
               "ratio": round(ratio, 4), "ratio_whole_call": round(ratio_whole, 4),
               "bare_runs_ms": [round(x * 1e3, 2) for x in b], "fit_runs_ms": [round(x * 1e3, 2) for x in f],
               "model": {"params": n_params, **vars(args)}}
    md = f"""# Training-loop overhead

{{header}}Model: GPT decoder, {args.layers} layers, d={args.d_model}, vocab {args.vocab} ({n_params / 1e6:.2f}M
parameters), batch {args.batch}×{args.seq} tokens, AdamW, fp32, on {device}. {args.steps} steps per measurement,
{args.repeats} alternating repeats, median (per-run times are in the JSON; run-to-run noise on a shared
2-core VM is several percent, so a ratio within a few percent of 1 means "no measurable overhead").

| loop | ms / step | ratio to bare |
|---|---|---|
| bare forward / backward / step | {mb * 1e3:.1f} | 1.000 |
| `genfeat.train.fit` (scheduler, NaN check, tqdm, metrics.jsonl) | {mf * 1e3:.1f} | {ratio:.3f} |
| whole `fit()` call, incl. final checkpoint and loss-curve PNG | {mw * 1e3:.1f} | {ratio_whole:.3f} |

Goal: the loop adds < 5% to the step time (ratio < 1.05). The one-off end-of-run work (checkpoint, plot) is
shown separately; it does not grow with the number of steps.
"""
    print(write_results("loop_overhead" + ("" if device.type == "cpu" else f"_{device.type}"), results, md,
                        device=str(device)))


if __name__ == "__main__":
    main()
