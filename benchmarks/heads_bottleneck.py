"""Where the softmax bottleneck binds (thesis C §2.2): the same GPT backbone on PTB (`lm --preset quickstart`:
2 layers, d_model 128, 3,200 steps of 8 x 64 tokens) with the head reading its states through a linear map to
d_head dimensions (`--model.head.input_dim`, `genfeat.heads.bottleneck`), for Softmax, MoS(3), MFS and
Softmax + C + Mi; test perplexity against d_head, as a table and a plot. Records
docs/results/heads_bottleneck.{md,json,png}.

    python -m benchmarks.heads_bottleneck [--dims 32 64 128 256] [--heads softmax mos3 mfs c+mi] [--seeds 0 1 2]
    python -m benchmarks.heads_bottleneck --train-only --only mos3-d32 ...   # one worker's share (head-d<D>)
    python -m benchmarks.heads_bottleneck --collect                          # record the finished runs

Each run is `genfeat run lm --preset quickstart --model.head H --model.head.input_dim D --seed S`, kept in --runs by
the sweep harness. What the theory predicts: a softmax's log-probability matrix has rank at most d_head + 1, so
as d_head shrinks below the rank the data needs, its perplexity rises faster than a mixture's (MoS, MFS), and
MoS's gain over the softmax grows. Every point, d_head = 128 included, has the projection and its own output
embedding, so the points differ in the width alone (the untied d_head = 128 row is not the tied `heads_ptb` row).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from benchmarks import common
from benchmarks.common import load_result, mean_std, reading, render, result_args, write_results
from benchmarks.sweep import Job, Sweep
from genfeat.heads.config import HEADS, LABELS

NAME = "heads_bottleneck"
DIMS = [32, 64, 128, 256]
BOTTLENECK_HEADS = ["softmax", "mos3", "mfs", "c+mi"]


def config(head: str, dim: int, seed: int):
    """The quickstart LM config with the named head reading `dim` dimensions."""
    from genfeat.registry import RECIPES

    cfg = RECIPES["lm"].presets["quickstart"]()
    return dataclasses.replace(cfg, seed=seed, model=dataclasses.replace(
        cfg.model, head=dataclasses.replace(HEADS[head], input_dim=dim)))


def label(head: str) -> str:
    return LABELS[head].removesuffix(" (tied)")  # every head here has its own output embedding


def job(head: str, dim: int, seed: int) -> Job:
    cfg = config(head, dim, seed)
    return Job(f"{head}-d{dim}-seed{seed}", {"head": head, "dim": dim, "seed": seed},
               "lm", cfg, group=f"{head}-d{dim}")


def cells(record: dict[str, Any]) -> dict[tuple[str, int], list[float]]:
    """(head, d_head) -> the test perplexities of its seeds."""
    out: dict[tuple[str, int], list[float]] = {}
    for r in record["results"]["runs"]:
        out.setdefault((r["head"], r["dim"]), []).append(r["test_ppl"])
    return out


def plot(record: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    res, c = record["results"], cells(record)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for head in res["heads"]:
        dims = [d for d in res["dims"] if (head, d) in c]
        if dims:
            ax.errorbar(dims, [np.mean(c[head, d]) for d in dims],
                        yerr=[np.std(c[head, d], ddof=1) if len(c[head, d]) > 1 else 0 for d in dims],
                        marker="o", capsize=3, label=label(head))
    ax.set_xscale("log", base=2)
    ax.set_xticks(res["dims"], [str(d) for d in res["dims"]])
    ax.set_xlabel("head input width d_head (backbone d_model = 128)")
    ax.set_ylabel("PTB test perplexity")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(common.RESULTS / f"{NAME}.png", dpi=120)
    plt.close(fig)


def markdown(record: dict[str, Any]) -> str:
    res, c = record["results"], cells(record)
    dims = res["dims"]
    rows = [f"| {label(h)} | " + " | ".join(mean_std(c.get((h, d), []), 2) for d in dims) + " |" for h in res["heads"]]
    gains = []
    for h in res["heads"]:
        if h == "softmax":
            continue
        diff = [f"{sum(c[h, d]) / len(c[h, d]) - sum(c['softmax', d]) / len(c['softmax', d]):+.2f}"
                if (h, d) in c and ("softmax", d) in c else "–" for d in dims]
        gains.append(f"| {label(h)} - Softmax | " + " | ".join(diff) + " |")
    seeds = sorted({len(v) for v in c.values()})
    return f"""# Where the softmax bottleneck binds: PTB perplexity against the head's input width

{{header}}Backbone: `lm --preset quickstart` (GPT, 2 layers, d_model 128, 3,200 steps of 8 x 64 tokens), fixed; the
head reads P h_t with P: 128 -> d_head and has its own output embedding (`--model.head.input_dim`). Test perplexity
at the best validation step, mean ± std over seeds (runs per cell: {', '.join(map(str, seeds)) or 'none'}).

| head | {' | '.join(f'd_head = {d}' for d in dims)} |
|---|{'---|' * len(dims)}
{chr(10).join(rows)}

Difference from the softmax at the same width (perplexity; negative: better than the softmax):

| head | {' | '.join(f'd_head = {d}' for d in dims)} |
|---|{'---|' * len(dims)}
{chr(10).join(gains)}

![perplexity against d_head]({NAME}.png)

{reading(record['name'])}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dims", type=int, nargs="+", default=DIMS)
    ap.add_argument("--heads", nargs="+", default=BOTTLENECK_HEADS, choices=list(HEADS))
    result_args(ap, [0, 1, 2], runs="runs/bench_heads_bottleneck")
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        plot(load_result(NAME))
        return
    sweep = Sweep.from_args(args)
    runs = sweep.results(job(h, d, s) for s in args.seeds for d in args.dims for h in args.heads)
    if args.train_only:
        return
    keep = ("head", "dim", "seed", "params", "valid_ppl", "test_ppl", "best_step", "wall_s", "device")
    print(write_results(NAME, {"dims": args.dims, "heads": args.heads,
                               "runs": [{k: r.get(k) for k in keep} for r in runs]},
                        markdown, seeds=args.seeds, machine=sweep.machine()))
    plot(load_result(NAME))


if __name__ == "__main__":
    main()
