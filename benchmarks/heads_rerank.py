"""The two-stage reranker Rs2 beside the cheap partitions on PTB (thesis C §2.4.1.3, Table 2.4's upper block):
Softmax, Softmax + C + Mi, Softmax + R:100 + Mi, Softmax + Rs2:100 + Mi and Softmax + CLR:20 + Mi, each
`genfeat run lm --preset quickstart --model.head H` (2 layers, d_model 128, 3,200 steps of 8 x 64 tokens), 3 seeds.
Records docs/results/heads_rerank.{md,json}.

    python -m benchmarks.heads_rerank [--heads softmax c+mi r100+mi rs2:100+mi clr20+mi] [--seeds 0 1 2]
    python -m benchmarks.heads_rerank --train-only --only gpt-rs2:100+mi ...   # one worker's share
    python -m benchmarks.heads_rerank --collect                               # time the models, record the runs

What the thesis found (GPT-2 Small, Wikipedia, 0.15 epoch): used alone, C is best, then Rs2, then R (validation
perplexity 28.76 < 28.89 < 29.13), and Rs2 costs at least 5x a softmax's training time at n = 20. Rs2 retrieves the
top n words with the first facet, runs the decoder again over the context, a second facet and the candidates, and
re-scores the candidates from their hidden states (`genfeat.heads.two_stage`). Cost here: the whole model's forward
+ backward per training batch (8 x 64 tokens, V = 10,000), median of interleaved rounds in one process
(`heads_ptb.model_times`), beside the runs' training time on the device that trained them.
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from benchmarks.common import mean_std, ran_on, reading, render, result_args, write_results
from benchmarks.heads_ptb import job, model_times
from benchmarks.sweep import Sweep
from genfeat.heads.config import LABELS

NAME = "heads_rerank"
RERANK_HEADS = ["softmax", "c+mi", "r100+mi", "rs2:100+mi", "clr20+mi"]
THESIS_015 = {"softmax": 29.53, "c+mi": 28.76, "r100+mi": 29.13, "rs2:100+mi": 28.89}  # Table 2.4, 0.15 epoch


def means(record: dict[str, Any]) -> dict[str, float]:
    """head -> mean test perplexity over its seeds."""
    out: dict[str, list[float]] = {}
    for r in record["results"]["runs"]:
        out.setdefault(r["head"], []).append(r["test_ppl"])
    return {h: statistics.mean(v) for h, v in out.items()}


def ordering(m: dict[str, float]) -> str:
    """The thesis's claim (C < Rs2 < R) checked on the mean test perplexities."""
    c, rs2, r = (m.get(h) for h in ("c+mi", "rs2:100+mi", "r100+mi"))
    if None in (c, rs2, r):
        return "C, Rs2 and R: not all run yet."
    holds = c < rs2 < r
    order = " < ".join(f"{LABELS[h]} {m[h]:.2f}" for h in sorted(("c+mi", "rs2:100+mi", "r100+mi"), key=m.get))
    return f"Ordering by test perplexity: {order}; the thesis's C < Rs2 < R {'holds' if holds else 'does not hold'}."


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    mt = res["model_seconds"]
    rows = []
    for h in res["heads"]:
        runs = [r for r in res["runs"] if r["head"] == h]
        if not runs:
            continue
        model = f"{mt[h] * 1000:.0f} ({mt[h] / mt['softmax']:.1f}×)" if h in mt and "softmax" in mt else "–"
        rows.append(f"| {LABELS[h]} | {runs[0]['params']:,} | {mean_std([r['valid_ppl'] for r in runs])} | "
                    f"**{mean_std([r['test_ppl'] for r in runs])}** | {model} | "
                    f"{statistics.mean(r['train_s'] for r in runs):.0f} | {len(runs)} | "
                    f"{THESIS_015.get(h, '–')} |")
    return f"""# The two-stage reranker Rs2 beside C, R and CLR on PTB

{{header}}Every row is `genfeat run lm --preset quickstart --model.head H` (GPT, 2 layers, d_model 128, 3,200 steps of
8 x 64 tokens) with only the head changed. Test perplexity at the best validation step, mean ± std over seeds
{record['seeds']}. Model time: forward + backward of the whole model per training batch (V = 10,000), median of
{res['repeats']} interleaved rounds in one process on the machine that rendered this page ({res['timed_on']}). Training
time: the runs' own `train_s` on the device that trained them, with other runs sharing it (indicative only).

| head | parameters | valid ppl | test ppl | model ms / batch | training s | seeds | thesis (Table 2.4, 0.15 ep.) |
|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

{ordering(means(record))}

{reading(NAME)}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heads", nargs="+", default=RERANK_HEADS)
    ap.add_argument("--repeats", type=int, default=10)
    result_args(ap, [0, 1, 2], runs="runs/bench_heads_rerank")
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    sweep = Sweep.from_args(args)
    runs = sweep.results(job("gpt", h, s, 0) for s in args.seeds for h in args.heads)
    if args.train_only:
        return
    keep = ("head", "seed", "params", "valid_ppl", "test_ppl", "best_step", "train_s", "device")
    print(write_results(NAME, {"heads": args.heads, "repeats": args.repeats, "timed_on": ran_on(),
                               "model_seconds": model_times(args.repeats, args.heads),
                               "runs": [{k: r.get(k) for k in keep} for r in runs]},
                        markdown, seeds=args.seeds, machine=sweep.machine()))


if __name__ == "__main__":
    main()
