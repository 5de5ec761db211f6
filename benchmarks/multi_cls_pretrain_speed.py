"""Continued-pretraining throughput of Multi-CLS BERT (issue: tokens/s with peak memory beside it), K = 1 against
K = 5, from MiniLM-L6 on the `minilm_bbc` preset's batches (10 triples of 128-token sequences from the BBC News
validation articles: MCQT with hard negatives, sentence order, TF-IDF and MLM):

    python -m benchmarks.multi_cls_pretrain_speed [--repeats 5] [--threads 2]

Tokens/s: real (unpadded) tokens of a batch over the median time of a full training step (forward, the four losses,
backward, AdamW), K = 1 and K = 5 timed in alternation in one process; peak memory: the peak resident memory of a
fresh process that builds one pretrainer and runs one step. Writes docs/results/multi_cls_pretrain_speed.{md,json}.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
from typing import Any

import torch

from benchmarks.bert_speed import high_water_mib
from benchmarks.common import interleaved_median_seconds, reading, render, timing_args, write_results

NAME = "multi_cls_pretrain_speed"


def setup(k: int, batches: int = 3):
    """(pretrainer, optimizer, batches) for K facets, from the released MiniLM weights."""
    from genfeat.data.multi_cls import TripleBatches
    from genfeat.data.sentences import bbc_documents
    from genfeat.models.bert import bert_dir, from_pretrained
    from genfeat.models.bert.tokenizer import load_wordpiece
    from genfeat.models.multi_cls.inference import build_pretrainer
    from genfeat.registry import RECIPES
    from genfeat.train.loop import build_optimizer
    from genfeat.train.seed import seed_everything

    cfg = RECIPES["multi_cls_pretrain"].presets["minilm_bbc"]()
    cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, k=k), heads_lr=1e-3)
    seed_everything(0)
    src = bert_dir(cfg.init)
    bert, _ = from_pretrained(src)
    pre = build_pretrainer(cfg.objective, cfg.model, bert.train(), cfg.data.hard_negatives)
    docs = bbc_documents(cfg.data.split_seed, 0, cfg.data.corpus)
    it = TripleBatches(docs["valid"], load_wordpiece(src), cfg.data.n_triples, cfg.data.max_len - k, 0,
                       cfg.data.hard_negatives)
    data = [next(it) for _ in range(batches)]
    bert_ids = {id(p) for p in pre.encoder.bert.parameters()}
    opt = build_optimizer(pre, cfg.train, [p for p in pre.parameters() if id(p) not in bert_ids], cfg.heads_lr)
    return pre, opt, data


def stepper(pre, opt, data):
    state = {"i": 0}

    def step() -> None:
        batch = data[state["i"] % len(data)]
        state["i"] += 1
        loss = pre(**batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    timing_args(ap, repeats=5, threads=2)
    ap.add_argument("--worker", type=int, help="(internal) one step with K facets in this process; print the peak")
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    torch.set_num_threads(args.threads)
    if args.worker is not None:
        stepper(*setup(args.worker, batches=1))()
        print(json.dumps({"peak_mib": round(high_water_mib(), 1)}))
        return
    runs = {k: setup(k) for k in (1, 5)}
    tokens = {k: sum(int(b["attention_mask"].sum()) for b in data) / len(data) for k, (_, _, data) in runs.items()}
    t = interleaved_median_seconds({k: stepper(*runs[k]) for k in runs}, args.repeats)
    peak = {}
    for k in runs:
        out = subprocess.run([sys.executable, "-m", "benchmarks.multi_cls_pretrain_speed", "--worker", str(k),
                              "--threads", str(args.threads)], capture_output=True, text=True, check=True)
        peak[k] = json.loads(out.stdout.strip().splitlines()[-1])["peak_mib"]
    rows = [{"k": k, "step_s": t[k], "tokens_per_batch": tokens[k], "tokens_per_s": tokens[k] / t[k],
             "peak_mib": peak[k]} for k in runs]
    print(write_results(NAME, {"threads": args.threads, "repeats": args.repeats, "rows": rows,
                               "k5_over_k1_time": t[5] / t[1]}, markdown))


def markdown(record: dict[str, Any]) -> str:
    r = record["results"]
    rows = "\n".join(f"| K = {x['k']} | {1e3 * x['step_s']:.0f} | {x['tokens_per_batch']:.0f} | "
                     f"{x['tokens_per_s']:.0f} | {x['peak_mib']:.0f} |" for x in r["rows"])
    return f"""# Multi-CLS BERT: continued-pretraining throughput

{{header}}MiniLM-L6 continued with the `minilm_bbc` preset's objective (30 sequences of 128 tokens per batch: MCQT with
hard negatives, sentence order, TF-IDF, MLM), {r['threads']} threads; step = forward, losses, backward, AdamW;
medians of {r['repeats']} interleaved rounds in one process. Peak memory: a fresh process, one step.

| model | ms per step | tokens per batch | tokens / s | peak memory (MiB) |
|---|---|---|---|---|
{rows}

K = 5 / K = 1 step time: **{r['k5_over_k1_time']:.3f}x** (the facets replace text tokens: equal total length).

{reading(record['name'])}
"""


if __name__ == "__main__":
    main()
