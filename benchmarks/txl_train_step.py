"""Worker for benchmarks/transformer_xl_vs_hf.py: time Transformer-XL training steps (forward + backward +
AdamW step, memory carried across segments) for one implementation, print one JSON line.

    python benchmarks/txl_train_step.py --impl genfeat|hf --config '{...}' [--steps 20] [--batch 8]

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
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    c = json.loads(args.config)
    torch.manual_seed(0)
    model, step = build(args.impl, c)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=2.5e-4)
    L = c["tgt_len"]
    data = torch.randint(0, c["vocab_size"], (args.batch, (args.steps + args.warmup) * L + 1))
    mems, t0 = None, None
    for s in range(args.warmup + args.steps):
        if s == args.warmup:
            t0 = time.perf_counter()
        x, y = data[:, s * L : (s + 1) * L], data[:, s * L + 1 : (s + 1) * L + 1]
        loss, mems = step(x, y, mems)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
        opt.zero_grad(set_to_none=True)
        mems = [m.detach() for m in mems]
    dt = time.perf_counter() - t0
    print(json.dumps({"impl": args.impl, "tokens_per_s": args.batch * L * args.steps / dt,
                      "s_per_step": dt / args.steps, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                      / 1024, "params": sum(p.numel() for p in model.parameters())}))


if __name__ == "__main__":
    main()
