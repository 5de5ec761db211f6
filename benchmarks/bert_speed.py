"""BERT encoder speed: genfeat's `BertModel` vs transformers' `BertModel` at all-MiniLM-L6-v2's configuration
(6 layers, d 384, 12 heads), and Multi-CLS BERT's K = 5 vs K = 1 inference at equal total length (thesis C
Table 5.3: 1.07x on a GPU). One process, interleaved rounds, medians; ratios > 1 mean genfeat / K = 1 is faster.
Peak memory: the peak resident memory (VmHWM) of a fresh subprocess that loads one implementation and runs one
forward + backward (CPU), or its max allocated memory (CUDA).

    python -m benchmarks.bert_speed [--batch 16] [--seq 128] [--repeats 15] [--device auto] [--threads 2]

Weights are random (speed does not depend on them); both models hold the same ones (saved by genfeat, loaded by
transformers). Inputs: batch x seq ids with a quarter of the rows padded to half length. Writes
docs/results/bert_speed.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile

import torch

from benchmarks.common import interleaved_median_seconds, ran_on, reading, write_results
from genfeat.models.bert import BertConfig, BertModel, from_pretrained, save_pretrained
from genfeat.models.multi_cls import MultiCLSClassifier, MultiCLSConfig, MultiCLSEncoder

NAME = "bert_speed"
MINILM = BertConfig(vocab_size=30522, d_model=384, n_layer=6, n_head=12, d_inner=1536, max_len=512)


def inputs(batch: int, seq: int, device: torch.device) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, 30000, (batch, seq), generator=g)
    mask = torch.ones_like(ids)
    mask[: batch // 4, seq // 2:] = 0
    ids[mask == 0] = 0
    return {k: v.to(device) for k, v in
            {"input_ids": ids, "token_type_ids": torch.zeros_like(ids), "attention_mask": mask}.items()}


def models(device: torch.device):
    """(genfeat BertModel, transformers BertModel) with the same random weights."""
    from transformers import BertModel as HFBert

    torch.manual_seed(0)
    ours = BertModel(MINILM)
    with tempfile.TemporaryDirectory() as d:
        save_pretrained(ours, d)
        ref = HFBert.from_pretrained(d, attn_implementation="sdpa")
    return ours.to(device), ref.to(device)


def step(model, x, train: bool, hf: bool):
    def run() -> None:
        model.train(train)
        with torch.set_grad_enabled(train):
            out = model(**x)
            h = out.last_hidden_state if hf else out.hidden
            if train:
                h.float().pow(2).mean().backward()
                model.zero_grad(set_to_none=True)
        if x["input_ids"].is_cuda:
            torch.cuda.synchronize()
    return run


def peak(impl: str, args, weights: str) -> float:
    """MiB: peak resident memory (VmHWM) of a fresh process that loads only this implementation (from `weights`,
    an HF directory) and runs one training step (CPU), or its max allocated memory (CUDA)."""
    out = subprocess.run([sys.executable, "-m", "benchmarks.bert_speed", "--worker", impl, "--weights", weights,
                          "--batch", str(args.batch), "--seq", str(args.seq), "--device", args.device,
                          "--threads", str(args.threads)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["peak_mib"]


def worker(impl: str, args) -> None:
    device = torch.device(ran_on())
    torch.set_num_threads(args.threads)
    x = inputs(args.batch, args.seq, device)
    if impl == "genfeat":
        model = from_pretrained(args.weights)[0].to(device)
    else:
        from transformers import BertModel as HFBert

        model = HFBert.from_pretrained(args.weights, attn_implementation="sdpa").to(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    step(model, x, True, impl == "hf")()
    print(json.dumps({"peak_mib": round(torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda"
                                         else high_water_mib(), 1)}))


def high_water_mib() -> float:
    """This address space's peak resident memory (VmHWM): unlike ru_maxrss it starts afresh at exec, so a worker
    does not inherit the parent's peak through fork."""
    with open("/proc/self/status") as f:
        kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    return kib / 1024


def markdown(record: dict) -> str:
    r = record["results"]
    rows = "\n".join(f"| {k} | {v['genfeat_ms']:.1f} | {v['hf_ms']:.1f} | **{v['ratio']:.2f}x** |"
                     for k, v in r["bert"].items())
    m = r["multi_cls"]
    mem = r["peak_mib"]
    return f"""# BERT encoder speed (all-MiniLM-L6-v2 shape)

{{header}}Batch {r['batch']} x {r['seq']} tokens (a quarter of the rows padded to half length), {r['threads']} threads,
medians over {r['repeats']} interleaved rounds. Ratio = transformers' time / genfeat's (> 1: genfeat faster).

| step | genfeat ms | transformers ms | ratio |
|---|---|---|---|
{rows}

Peak memory of one training step in a fresh process that loads only that model (peak resident memory on CPU):
genfeat {mem['genfeat']:.0f} MiB, transformers {mem['hf']:.0f} MiB.

Multi-CLS inference at equal total length ({r['seq']} tokens including the facets): K = 1 {m['k1_ms']:.1f} ms,
K = 5 {m['k5_ms']:.1f} ms per batch, **K5 / K1 = {m['ratio']:.3f}** (thesis C Table 5.3 on a GPU: 1.07).

{reading(NAME)}
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--worker", choices=["genfeat", "hf"])
    ap.add_argument("--weights", help="(worker) the HF directory to load")
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args)
    torch.set_num_threads(args.threads)
    device = torch.device(ran_on())
    x = inputs(args.batch, args.seq, device)
    ours, ref = models(device)
    bert = {}
    for name, train in (("forward (eval)", False), ("forward + backward (train)", True)):
        t = interleaved_median_seconds({"genfeat": step(ours, x, train, False), "hf": step(ref, x, train, True)},
                                       args.repeats)
        bert[name] = {"genfeat_ms": 1000 * t["genfeat"], "hf_ms": 1000 * t["hf"], "ratio": t["hf"] / t["genfeat"]}
        print(name, bert[name], flush=True)
    del ref
    clf = {}
    for k in (1, 5):
        torch.manual_seed(0)
        clf[k] = MultiCLSClassifier(MultiCLSEncoder(BertModel(MINILM), MultiCLSConfig(k=k)), 2).to(device).eval()
    xk = {k: {n: v[:, : args.seq - k] for n, v in x.items()} for k in (1, 5)}  # equal total length with facets

    def infer(k):
        def run() -> None:
            with torch.no_grad():
                clf[k](**xk[k])
            if device.type == "cuda":
                torch.cuda.synchronize()
        return run
    t = interleaved_median_seconds({1: infer(1), 5: infer(5)}, args.repeats)
    multi = {"k1_ms": 1000 * t[1], "k5_ms": 1000 * t[5], "ratio": t[5] / t[1]}
    print("multi-cls", multi, flush=True)
    with tempfile.TemporaryDirectory() as d:
        save_pretrained(ours, d)
        mem = {impl: peak(impl, args, d) for impl in ("genfeat", "hf")}
    record = {"batch": args.batch, "seq": args.seq, "repeats": args.repeats, "threads": args.threads, "bert": bert,
              "multi_cls": multi, "peak_mib": mem}
    print(write_results(NAME, record, markdown))


if __name__ == "__main__":
    main()
