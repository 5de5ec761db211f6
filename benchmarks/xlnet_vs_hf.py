"""XLNet training throughput: genfeat vs Hugging Face XLNet (transformers 5.x, the `[hf]` extra), identical
configurations, in one invocation; records docs/results/xlnet_vs_hf.{md,json}.

    python -m benchmarks.xlnet_vs_hf [--repeats 3] [--steps 8] [--device auto] [--dtype fp32|bf16]

Each measurement is a fresh subprocess (so peak memory is per implementation: max RSS on CPU, max allocated on
CUDA) running forward + backward + AdamW on the same batches; genfeat and HF alternate, `--repeats` times each,
medians compared. Workloads:
  pretrain   permutation LM step: two segments of length T with segment ids, the permutation mask of
             `plm_inputs` (T/6 targets in spans), the query stream at the targets, memory of the first half carried
             to the next step (HF: `target_mapping` one-hot, `mems`, `use_mems=True`)
  finetune   sequence classification: left-padded inputs with attention mask, content stream only
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = dict(vocab_size=8000, d_model=256, n_layer=4, n_head=4, d_inner=1024, dropout=0.1)
WORKLOADS = {"pretrain": dict(batch=4, seq_len=256, mem_len=128), "finetune": dict(batch=8, seq_len=256)}


def worker(impl: str, workload: str, steps: int, device: str, dtype: str) -> dict:
    import numpy as np
    import torch

    from genfeat.data.plm import plm_inputs
    from genfeat.losses.classification import classification_loss

    dev = torch.device("cuda" if device == "auto" and torch.cuda.is_available() else
                       ("cpu" if device == "auto" else device))
    amp = torch.bfloat16 if dtype == "bf16" else None
    w = WORKLOADS[workload]
    B, T = w["batch"], w["seq_len"]
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    rng = np.random.default_rng(0)
    batches = []
    for _ in range(steps + 3):
        x = torch.randint(9, MODEL["vocab_size"], (B, T), generator=g)
        seg = (torch.arange(T) >= T // 2).long().expand(B, -1)
        if workload == "pretrain":
            d = plm_inputs(x, T // 6, rng, g, reuse_len=T // 2)
            batches.append({"x": x, "seg": seg, "pm": d["perm_mask"], "pos": d["target_pos"], "y": d["labels"]})
        else:
            att = torch.ones(B, T, dtype=torch.long)
            att[: B // 2, : T // 4] = 0  # half the rows left-padded
            batches.append({"x": x, "seg": seg, "att": att, "y": torch.randint(0, 5, (B,), generator=g)})
    if impl == "genfeat":
        from genfeat.models.xlnet import XLNetConfig, XLNetLM
        from genfeat.models.xlnet.heads import XLNetClassifier

        cfg = XLNetConfig(vocab_size=MODEL["vocab_size"], n_layer=MODEL["n_layer"], d_model=MODEL["d_model"],
                          n_head=MODEL["n_head"], d_head=MODEL["d_model"] // MODEL["n_head"], d_inner=MODEL["d_inner"],
                          dropout=MODEL["dropout"], dropatt=MODEL["dropout"], ff_activation="gelu",
                          mem_len=w.get("mem_len", 0), reuse_len=T // 2 if workload == "pretrain" else 0)
        model = XLNetLM(cfg) if workload == "pretrain" else XLNetClassifier(cfg, 5)
    else:
        import transformers

        hc = transformers.XLNetConfig(**MODEL, mem_len=w.get("mem_len"), reuse_len=T // 2 if workload == "pretrain"
                                      else None, num_labels=5)
        model = transformers.XLNetLMHeadModel(hc) if workload == "pretrain" else \
            transformers.XLNetForSequenceClassification(hc)
    model.to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    mems = None

    def step(b):
        nonlocal mems
        b = {k: v.to(dev) for k, v in b.items()}
        with torch.autocast(dev.type, dtype=amp, enabled=amp is not None):
            if workload == "pretrain" and impl == "genfeat":
                out, o = model(b["x"], token_type_ids=b["seg"], perm_mask=b["pm"], target_pos=b["pos"], mems=mems)
                loss = torch.nn.functional.cross_entropy(out.scores.flatten(0, 1).float(), b["y"].flatten())
                mems = o.mems
            elif workload == "pretrain":
                tm = torch.nn.functional.one_hot(b["pos"], T).float()
                out = model(b["x"], token_type_ids=b["seg"], perm_mask=b["pm"].float(), target_mapping=tm,
                            mems=mems, use_mems=True)
                loss = torch.nn.functional.cross_entropy(out.logits.flatten(0, 1).float(), b["y"].flatten())
                mems = out.mems
            elif impl == "genfeat":
                loss = classification_loss(model(b["x"], b["seg"], b["att"]).float(), b["y"])
            else:
                loss = model(b["x"], token_type_ids=b["seg"], attention_mask=b["att"], labels=b["y"]).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for b in batches[:3]:
        step(b)
    if dev.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for b in batches[3:]:
        step(b)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    peak = torch.cuda.max_memory_allocated() / 2**20 if dev.type == "cuda" else \
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"tokens_per_s": steps * B * T / dt, "peak_mb": peak, "params": sum(p.numel() for p in model.parameters()),
            "device": str(dev), "gpu": torch.cuda.get_device_name() if dev.type == "cuda" else None}


def measure(impl: str, workload: str, args) -> dict:
    cmd = [sys.executable, "-m", "benchmarks.xlnet_vs_hf", "--worker", impl, workload, "--steps", str(args.steps),
           "--device", args.device, "--dtype", args.dtype]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{impl} {workload} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--worker", nargs=2, metavar=("IMPL", "WORKLOAD"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker, args.steps, args.device, args.dtype)))
        return
    from benchmarks.common import write_results

    rows = []
    for workload, w in WORKLOADS.items():
        runs = {"genfeat": [], "hf": []}
        for _ in range(args.repeats):
            for impl in runs:
                runs[impl].append(measure(impl, workload, args))
        med = {k: statistics.median(r["tokens_per_s"] for r in v) for k, v in runs.items()}
        row = {"workload": workload, **w, "params": runs["genfeat"][0]["params"], "hf_params": runs["hf"][0]["params"],
               "genfeat_tokens_per_s": round(med["genfeat"], 1), "hf_tokens_per_s": round(med["hf"], 1),
               "speedup": round(med["genfeat"] / med["hf"], 2),
               "genfeat_peak_mb": round(max(r["peak_mb"] for r in runs["genfeat"]), 1),
               "hf_peak_mb": round(max(r["peak_mb"] for r in runs["hf"]), 1), "device": runs["hf"][0]["device"],
               "gpu": runs["hf"][0]["gpu"], "genfeat_runs": [round(r["tokens_per_s"], 1) for r in runs["genfeat"]],
               "hf_runs": [round(r["tokens_per_s"], 1) for r in runs["hf"]]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    dev = rows[0]["gpu"] or rows[0]["device"]
    mem = "max allocated (CUDA)" if rows[0]["gpu"] else "the process's maximum RSS (CPU)"
    table = "\n".join(
        f"| {r['workload']} | {r['batch']}×{r['seq_len']} | {r['params']:,} / {r['hf_params']:,} | "
        f"{r['genfeat_tokens_per_s']:,.0f} | {r['hf_tokens_per_s']:,.0f} | **{r['speedup']:.2f}×** | "
        f"{r['genfeat_peak_mb']:.0f} / {r['hf_peak_mb']:.0f} |" for r in rows)
    runs_txt = "\n".join(f"- {r['workload']}: tokens/s per run genfeat {r['genfeat_runs']}, HF {r['hf_runs']}"
                         for r in rows)
    md = f"""# XLNet training throughput: genfeat vs Hugging Face XLNet (transformers 5.x)

{{header}}Device {dev}, {args.dtype}. Forward + backward + AdamW; {args.steps} timed steps after 3 warm-up steps,
each run a fresh process, implementations alternating, {args.repeats} runs each, median. Model: {MODEL['n_layer']}
layers, d {MODEL['d_model']}, {MODEL['n_head']} heads, d_inner {MODEL['d_inner']}, vocabulary {MODEL['vocab_size']:,},
dropout 0.1 (and attention dropout 0.1, as HF ties them), exact GELU (HF's default). Pretrain: permutation LM with
T/6 targets, memory of T/2 rows carried between steps; fine-tune: sequence classification, half the rows
left-padded by T/4. Peak memory: {mem}.

| workload | batch × T | parameters genfeat / HF | genfeat tokens/s | HF tokens/s | speed-up | peak MB genfeat / HF |
|---|---|---|---|---|---|---|
{table}

{runs_txt}

Goal: genfeat ≥ 1.3× HF.
"""
    write_results("xlnet_vs_hf", {"rows": rows, "steps": args.steps, "repeats": args.repeats, "dtype": args.dtype},
                  md, device=rows[0]["device"])


if __name__ == "__main__":
    main()
