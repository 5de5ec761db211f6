"""Transformer-XL training throughput: genfeat vs Hugging Face TransfoXL (transformers 4.35.0, the last
release that has it), identical configuration, in one invocation.

Each measurement is a fresh subprocess (so peak RSS is per implementation) running forward + backward +
AdamW step with the memory carried across segments (benchmarks/txl_train_step.py); genfeat and HF
alternate, `--repeats` times each; medians are compared. HF runs from the venv made by
scripts/reference/transfo_xl_golden.py's instructions (.venv-ref).

    python -m benchmarks.transformer_xl_vs_hf [--repeats 3] [--steps 10] [--device cuda --dtype bf16]

Achieved FLOP/s: the FLOPs of one training step counted by torch.utils.flop_counter (matmul-class ops, forward +
backward) over the measured step time; on CUDA also the MFU, that over the device's dense bf16 peak
(`--peak-tflops`, default from BF16_PEAK_TFLOPS by device name).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks.common import write_results

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {
    "ptb-size, full softmax": dict(vocab_size=10000, cutoffs=[], div_val=1, d_model=128, n_head=4, d_head=32,
                                   d_inner=512, n_layer=4, mem_len=64, tgt_len=64, dropout=0.1, dropatt=0.0,
                                   batch=8),
    "adaptive softmax, div_val 4": dict(vocab_size=50000, cutoffs=[5000, 20000], div_val=4, d_model=256, n_head=8,
                                        d_head=32, d_inner=1024, n_layer=4, mem_len=128, tgt_len=128, dropout=0.1,
                                        dropatt=0.0, batch=4),
}


# dense bf16, vendor data sheets; the first key contained in the device name wins (PCIe before the SXM default);
# other GPUs: pass --peak-tflops
BF16_PEAK_TFLOPS = {"H100 PCIe": 756.0, "H100": 989.0, "H200": 989.0, "A100": 312.0}


def measure(python: str, impl: str, cfg: dict, steps: int, device: str = "cpu", dtype: str = "fp32") -> dict:
    c = {k: v for k, v in cfg.items() if k != "batch"}
    cmd = [python, str(ROOT / "benchmarks/txl_train_step.py"), "--impl", impl, "--config", json.dumps(c),
           "--steps", str(steps), "--batch", str(cfg["batch"]), "--device", device, "--dtype", dtype]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{impl} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--ref-python", default=str(ROOT / ".venv-ref/bin/python"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--peak-tflops", type=float, default=0.0, help="dense bf16 peak of the GPU (MFU); default: "
                    "looked up by device name")
    args = ap.parse_args()
    if not Path(args.ref_python).exists():
        raise SystemExit(f"{args.ref_python} not found: create the reference venv "
                         "(see scripts/reference/transfo_xl_golden.py)")
    rows = []
    for name, cfg in CONFIGS.items():
        runs = {"genfeat": [], "hf": []}
        for _ in range(args.repeats):
            runs["genfeat"].append(measure(sys.executable, "genfeat", cfg, args.steps, args.device, args.dtype))
            runs["hf"].append(measure(args.ref_python, "hf", cfg, args.steps, args.device, args.dtype))
        g = statistics.median(r["tokens_per_s"] for r in runs["genfeat"])
        h = statistics.median(r["tokens_per_s"] for r in runs["hf"])
        gpu = runs["genfeat"][0]["gpu"]
        peak = args.peak_tflops or next((v for k, v in BF16_PEAK_TFLOPS.items() if gpu and k in gpu), 0.0)
        tflops = {k: statistics.median(r["flops_per_step"] / r["s_per_step"] for r in v) / 1e12
                  for k, v in runs.items()}
        row = {"config": name, **cfg, "params": runs["genfeat"][0]["params"], "hf_params": runs["hf"][0]["params"],
               "genfeat_tokens_per_s": round(g, 1), "hf_tokens_per_s": round(h, 1), "speedup": round(g / h, 2),
               "genfeat_peak_mb": round(max(r["peak_mb"] for r in runs["genfeat"]), 1),
               "hf_peak_mb": round(max(r["peak_mb"] for r in runs["hf"]), 1),
               "genfeat_tflops": round(tflops["genfeat"], 3), "hf_tflops": round(tflops["hf"], 3),
               "genfeat_mfu": round(tflops["genfeat"] / peak, 4) if peak else None,
               "hf_mfu": round(tflops["hf"] / peak, 4) if peak else None, "device": runs["genfeat"][0]["device"],
               "gpu": gpu, "dtype": args.dtype,
               "genfeat_runs": [round(r["tokens_per_s"], 1) for r in runs["genfeat"]],
               "hf_runs": [round(r["tokens_per_s"], 1) for r in runs["hf"]]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    def mfu(r: dict) -> str:
        return f" ({r['genfeat_mfu']:.1%} / {r['hf_mfu']:.1%} MFU)" if r["genfeat_mfu"] is not None else ""
    table = "\n".join(
        f"| {r['config']} | {r['params']:,} | {r['genfeat_tokens_per_s']:,.0f} | {r['hf_tokens_per_s']:,.0f} | "
        f"{r['speedup']:.2f}× | {r['genfeat_tflops']:.3f} / {r['hf_tflops']:.3f}{mfu(r)} | "
        f"{r['genfeat_peak_mb']:.0f} / {r['hf_peak_mb']:.0f} |" for r in rows)
    dev = rows[0]["gpu"] or rows[0]["device"]
    mem = "max allocated (CUDA)" if rows[0]["gpu"] else "the process's maximum RSS (CPU)"
    details = "\n".join(
        f"- {r['config']}: {r['n_layer']} layers, d={r['d_model']}, {r['n_head']}×{r['d_head']} heads, d_inner "
        f"{r['d_inner']}, vocab {r['vocab_size']:,}, cutoffs {r['cutoffs']}, div_val {r['div_val']}, "
        f"segment = memory = {r['tgt_len']}, batch {r['batch']}; per-run tokens/s genfeat {r['genfeat_runs']}, "
        f"HF {r['hf_runs']}"
        for r in rows)
    md = f"""# Transformer-XL training throughput: genfeat vs Hugging Face TransfoXL 4.35

{{header}}Forward + backward + AdamW step (clip 0.25), memory carried across segments, dropout 0.1, {args.dtype} on
{dev}; {args.steps} timed steps after 3 warm-up steps, each run a fresh process, implementations alternating,
{args.repeats} runs each, median. HF's loss covers L-1 targets per segment (it shifts labels inside), genfeat's L;
tokens/s counts the B·L input tokens for both. Achieved TFLOP/s: one step's FLOPs (torch.utils.flop_counter,
matmul-class ops, forward + backward) over the step time. Peak memory: {mem}.

| configuration | parameters | genfeat tokens/s | HF tokens/s | speed-up | TFLOP/s genfeat / HF | peak MB genfeat / HF |
|---|---|---|---|---|---|---|
{table}

{details}

Goal: genfeat ≥ 1.5× HF. Where genfeat's time goes less than HF's on CPU: the relative shift is a strided view fused
with the mask (`rel_shift_masked`, one pass; its backward the inverse shift), the scores are one `baddbmm` of the
content term onto that bias (SDPA would take its math fallback, the bias needing a gradient), dropout draws its
mask from a faster generator than `bernoulli_`, and the adaptive softmax scores each position's target with one
log-softmax whose backward writes softmax - one-hot directly (`target_log_softmax`). On a GPU:
`--device cuda --dtype bf16` (MFU against the device's dense bf16 peak).
"""
    write_results("transformer_xl_vs_hf", {"rows": rows, "steps": args.steps, "repeats": args.repeats,
                                           "dtype": args.dtype}, md, device=rows[0]["device"])


if __name__ == "__main__":
    main()
