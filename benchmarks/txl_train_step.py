"""Worker for benchmarks/transformer_xl_vs_hf.py: time Transformer-XL training steps (forward + backward +
AdamW step, memory carried across segments) for one implementation, print one JSON line.

    python benchmarks/txl_train_step.py --impl genfeat|hf --config '{...}' [--steps 20] [--batch 8]
        [--device cpu|cuda] [--dtype fp32|bf16]

Also counts the step's FLOPs once (torch.utils.flop_counter, forward + backward) for the achieved FLOP/s.

Kept free of genfeat imports at module level so the HF side runs in its own venv (transformers 4.35).
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import torch


def build(impl: str, c: dict):
    if impl == "hf":
        from transformers import TransfoXLConfig, TransfoXLLMHeadModel

        cfg = TransfoXLConfig(vocab_size=c["vocab_size"], cutoffs=list(c["cutoffs"]), d_model=c["d_model"],
                              d_embed=c["d_model"], n_head=c["n_head"], d_head=c["d_head"], d_inner=c["d_inner"],
                              div_val=c["div_val"], n_layer=c["n_layer"], mem_len=c["mem_len"], tgt_len=c["tgt_len"],
                              clamp_len=-1, same_length=False, dropout=c["dropout"], dropatt=c["dropatt"],
                              untie_r=False, adaptive=True, proj_share_all_but_first=True)
        model = TransfoXLLMHeadModel(cfg)

        def step(x, y, mems):  # HF shifts the labels inside: L-1 predictions per segment
            out = model(input_ids=x, labels=x, mems=mems)
            return out.losses.mean(), out.mems
        return model, step
    from genfeat.losses import nll
    from genfeat.models.transformer_xl import TXLConfig, build_txl_lm

    cfg = TXLConfig(vocab_size=c["vocab_size"], cutoffs=tuple(c["cutoffs"]), d_model=c["d_model"], n_head=c["n_head"],
                    d_head=c["d_head"], d_inner=c["d_inner"], div_val=c["div_val"], n_layer=c["n_layer"],
                    mem_len=c["mem_len"], tgt_len=c["tgt_len"], dropout=c["dropout"], dropatt=c["dropatt"],
                    tie_projs=(False,) + (True,) * len(c["cutoffs"]))
    model = build_txl_lm(cfg)

    def step(x, y, mems):
        out, bb = model(x, targets=y, **({"mems": mems} if mems is not None else {}))
        return nll(out, y), bb.mems
    return model, step


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", choices=["genfeat", "hf"], required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    c = json.loads(args.config)
    torch.manual_seed(0)
    dev = torch.device(args.device)
    model, step = build(args.impl, c)
    model.to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=2.5e-4)
    L = c["tgt_len"]
    data = torch.randint(0, c["vocab_size"], (args.batch, (args.steps + args.warmup + 1) * L + 1), device=dev)
    mems, t0 = None, None

    def train_step(s: int) -> None:
        nonlocal mems
        x, y = data[:, s * L : (s + 1) * L], data[:, s * L + 1 : (s + 1) * L + 1]
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=args.dtype == "bf16"):
            loss, mems = step(x, y, mems)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
        opt.zero_grad(set_to_none=True)
        mems = [m.detach() for m in mems]

    for s in range(args.warmup + args.steps):
        if s == args.warmup:
            if dev.type == "cuda":
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            t0 = time.perf_counter()
        train_step(s)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    peak = (torch.cuda.max_memory_allocated() / 2**20 if dev.type == "cuda"
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:  # one more step, counted (matmul-class ops, fwd + bwd)
        train_step(args.warmup + args.steps)
    print(json.dumps({"impl": args.impl, "tokens_per_s": args.batch * L * args.steps / dt,
                      "s_per_step": dt / args.steps, "peak_mb": peak, "flops_per_step": counter.get_total_flops(),
                      "device": str(dev), "gpu": torch.cuda.get_device_name() if dev.type == "cuda" else None,
                      "params": sum(p.numel() for p in model.parameters())}))


if __name__ == "__main__":
    main()
