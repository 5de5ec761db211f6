"""Every output head trained from scratch on real PTB (thesis C Tables 2.1/2.4 direction, at CPU scale);
records docs/results/heads_ptb.{md,json}.

    python -m benchmarks.heads_ptb                     # train all runs (resumable), time the heads, write results
    python -m benchmarks.heads_ptb --train-only --only gpt-mos3 gpt-mfs    # one worker's share
    python -m benchmarks.heads_ptb --collect           # time the heads and write results from the kept runs

GPT rows: `genfeat run lm --preset quickstart` (2 layers, d=128, 3,200 steps of 8x64 tokens) with only
`model.head` changed. Transformer-XL rows: `genfeat run transformer_xl --preset ptb` (4 layers, d=128, memory 64)
with `--txl-steps` steps. Each (backbone, head, seed) is a separate run kept under `--runs` by the sweep harness
(`benchmarks.sweep`), so several workers (`--train-only --only gpt-mos3 ...`, one thread each) can share the list
and a stopped benchmark resumes. Head
time: head-only forward + backward at the run's batch shape, median of interleaved rounds, one quiet process
(`--collect`).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
from typing import Any

from benchmarks.common import interleaved_median_seconds, mean_std, reading, render, result_args, write_results
from benchmarks.heads_cost import time_heads, training_step
from benchmarks.sweep import Job, Sweep
from genfeat.heads.config import HEADS, LABELS

NAME = "heads_ptb"
GPT_HEADS = ["softmax", "softmax_facet", "sigsoftmax", "mos3", "doc", "softmax+mi", "mfs", "c+mi", "clr20+mi",
             "copynet", "pointer_generator", "pointer_sentinel"]
TXL_HEADS = ["softmax", "clr20+mi"]


def config(arch: str, head: str, seed: int, txl_steps: int):
    from genfeat.registry import RECIPES

    if arch == "gpt":
        cfg = RECIPES["lm"].presets["quickstart"]()
    else:
        cfg = RECIPES["transformer_xl"].presets["ptb"]()
        cfg = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, max_steps=txl_steps,
                                                                 eval_every=max(1, txl_steps // 3)))
    return dataclasses.replace(cfg, seed=seed, model=dataclasses.replace(cfg.model, head=HEADS[head]))


def job(arch: str, head: str, seed: int, txl_steps: int) -> Job:
    return Job(f"{arch}-{head}-seed{seed}", {"arch": arch, "head": head, "seed": seed},
               "lm" if arch == "gpt" else "transformer_xl", config(arch, head, seed, txl_steps), group=f"{arch}-{head}")


def head_times(repeats: int) -> dict[str, dict[str, float]]:
    """Head-only forward + backward seconds at each backbone's training batch shape (PTB vocabulary)."""
    out = {}
    for arch, heads in (("gpt", GPT_HEADS), ("txl", TXL_HEADS)):
        cfg = config(arch, "softmax", 0, 1)
        d = cfg.model.d_model
        seq = cfg.data.seq_len if arch == "gpt" else cfg.model.tgt_len
        out[arch] = time_heads(heads, d, 10_000, repeats, batch=cfg.data.batch_size, length=seq)
        print(arch, {h: round(v * 1000, 2) for h, v in out[arch].items()}, flush=True)
    return out


def model_times(repeats: int, heads: list[str] = (*GPT_HEADS, "softmax+rs2:20", "clr20+rs2:20+mi")
                ) -> dict[str, float]:
    """Whole-model forward + backward seconds of the quickstart GPT (8x64 tokens, V=10,000) per head, plus the
    two-stage reranker (thesis Table 2.1 times are whole-model), median of interleaved rounds, one process."""
    cfg = config("gpt", "softmax", 0, 1)
    steps = {h: training_step(dataclasses.replace(cfg.model, vocab_size=10_000, head=HEADS[h]), cfg.data.batch_size,
                              cfg.data.seq_len) for h in heads}
    out = interleaved_median_seconds(steps, repeats)
    for h, sec in out.items():
        print("model", h, round(sec * 1000, 1), flush=True)
    return out


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    rows, agg = [], {}
    for arch, heads in (("gpt", res["gpt_heads"]), ("txl", res["txl_heads"])):
        base_t = res["head_seconds"][arch]["softmax"]
        for h in heads:
            runs = [r for r in res["runs"] if r["arch"] == arch and r["head"] == h]
            if not runs:
                continue
            v, t = ([r[k] for r in runs] for k in ("valid_ppl", "test_ppl"))
            agg[(arch, h)] = statistics.mean(t)
            ht = res["head_seconds"][arch][h]
            backbone = "GPT (quickstart)" if arch == "gpt" else "Transformer-XL (ptb)"
            mt = res.get("model_seconds", {}) if arch == "gpt" else {}
            model_col = f"{mt[h] * 1000:.0f} ({mt[h] / mt['softmax']:.2f}×)" if h in mt else "–"
            rows.append(f"| {backbone} | {LABELS[h]} | {runs[0]['params']:,} | {mean_std(v)} | "
                        f"**{mean_std(t)}** | {ht * 1000:.1f} ({ht / base_t:.2f}×) | {model_col} | "
                        f"{statistics.mean(r['wall_s'] for r in runs):.0f} | {len(runs)} |")

    def cmp(a: str, b: str, arch: str = "gpt") -> str:
        x, y = agg.get((arch, a)), agg.get((arch, b))
        where = "" if arch == "gpt" else "Transformer-XL: "
        if x is None or y is None:
            return f"{where}{LABELS[a]} vs {LABELS[b]}: not run yet"
        return f"{where}{LABELS[a]} {x:.2f} {'<' if x < y else '≥'} {LABELS[b]} {y:.2f}"

    mt = res.get("model_seconds", {})
    rs2 = "".join(f"Whole-model time of the two-stage reranker {h} (not trained here: ≥ 5× a softmax run, as the "
                  f"thesis found): {mt[h] * 1000:.0f} ms per batch ({mt[h] / mt['softmax']:.1f}× the softmax model).\n"
                  for h in ("softmax+rs2:20", "clr20+rs2:20+mi") if h in mt)
    checks = "\n".join(f"- {c}" for c in (cmp("mfs", "mos3"), cmp("mos3", "softmax"), cmp("mos3", "softmax_facet"),
                                          cmp("clr20+mi", "mfs"), cmp("clr20+mi", "softmax"),
                                          cmp("clr20+mi", "softmax", "txl")))
    return f"""# Output heads trained from scratch on PTB

{{header}}Each row changes only the output head (`model.head`, names from `genfeat.heads.config.HEADS`) of the same
backbone, same data order and budget per seed: GPT rows are `genfeat run lm --preset quickstart` (2 layers, d=128,
no dropout, 3,200 steps of 8×64 tokens, 1.8 epochs); Transformer-XL rows are `genfeat run transformer_xl --preset
ptb` (4 layers, d=128, memory 64, {res['txl_steps']} steps of 16×64 tokens). Test perplexity at the best validation
step, mean ± std over seeds {record['seeds']}. Head time: head-only forward + backward at the training batch shape,
V = 10,000, called as training calls it, median of {res['repeats']} rounds in one quiet process, each round timing every
head once in turn (ratio to that backbone's tied softmax); model time: the whole GPT's forward + backward per batch,
timed the same way. Wall time: the whole run (training, evaluation, sampling) with one torch thread, sharing the 2
cores with other benchmark runs, mean over seeds trained by different code versions: indicative only; the head and
model times are the cost measure.

| backbone | head | parameters | valid ppl | test ppl | head ms / batch | model ms / batch | wall s | seeds |
|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

{rs2}
The thesis's direction (Tables 2.1, 2.4: MFS < MoS < Softmax, CLR ≤ MFS at a fraction of the cost), here:

{checks}

{reading(NAME)}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", choices=["gpt", "txl", "both"], default="both")
    ap.add_argument("--heads", nargs="+", help="restrict to these heads (default: every head of the table)")
    ap.add_argument("--txl-steps", type=int, default=1500)
    ap.add_argument("--repeats", type=int, default=20)
    result_args(ap, [0, 1, 2], runs="runs/bench_heads_ptb")
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    rows = [(a, h) for a, hs in (("gpt", GPT_HEADS), ("txl", TXL_HEADS)) if args.arch in (a, "both")
            for h in hs if not args.heads or h in args.heads]
    sweep = Sweep.from_args(args)
    results = sweep.results(job(arch, head, seed, args.txl_steps) for seed in args.seeds for arch, head in rows)
    if args.train_only:
        return
    record = {"gpt_heads": GPT_HEADS, "txl_heads": TXL_HEADS, "txl_steps": args.txl_steps, "repeats": args.repeats,
              "runs": results, "head_seconds": head_times(args.repeats), "model_seconds": model_times(args.repeats)}
    print(write_results(NAME, record, markdown, seeds=args.seeds, machine=sweep.machine()))


if __name__ == "__main__":
    main()
