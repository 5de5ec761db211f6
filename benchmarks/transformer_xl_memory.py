"""Does a longer training memory help Transformer-XL? (thesis Y §2.1: training memory at least the segment length;
spec §6.3 D2). The `transformer_xl --preset ptb` model (segment L = 64) trained on a word-level corpus with memory
M = 64, 128 and 256 for the same steps and seeds, beside the vanilla model of equal parameters; each run evaluated
as its preset evaluates (Transformer-XL with memory 2M, the vanilla model on non-overlapping segments). Records
docs/results/transformer_xl_<corpus>_memory.{md,json}.

    python -m benchmarks.transformer_xl_memory --corpus austen --steps 3000 [--mems 64 128 256] [--seeds 0 1 2]
    python -m benchmarks.transformer_xl_memory --corpus austen --steps 3000 --train-only --only ptb   # a worker
    python -m benchmarks.transformer_xl_memory --corpus austen --steps 3000 --collect

The runs are `benchmarks.transformer_xl_ptb`'s (`--mem M`), so the same run directory serves both benchmarks;
this page reads only the runs' summaries (no weights needed), `transformer_xl_ptb --mem M --collect` adds the
evaluation-memory sweep, RECL and fragmentation of one training memory.
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from benchmarks.common import mean_std, reading, render, result_args, write_results
from benchmarks.sweep import Sweep
from benchmarks.transformer_xl_ptb import PRESETS, job


def page_name(corpus: str) -> str:
    return f"transformer_xl_{corpus}_memory"


def rows(record: dict[str, Any]) -> list[str]:
    res = record["results"]
    out = []
    for mem in res["mems"] + [0]:
        runs = [r for r in res["runs"] if r["mem"] == mem]
        if not runs:
            continue
        name = f"Transformer-XL, training memory {mem}" if mem else "vanilla (no memory)"
        evaluation = f"memory {2 * mem}" if mem else "non-overlapping segments"
        by_seed = ", ".join(f"{r['test_ppl']:.2f}" for r in sorted(runs, key=lambda r: r["seed"]))
        out.append(f"| {name} | {evaluation} | {mean_std([r['valid_ppl'] for r in runs])} | "
                   f"**{mean_std([r['test_ppl'] for r in runs])}** | "
                   f"{by_seed} | "
                   f"{statistics.mean(r['train_s'] for r in runs):.0f} | {len(runs)} |")
    return out


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    return f"""# Transformer-XL's training memory on {res['corpus']} (segment 64, equal budget)

{{header}}`transformer_xl --preset ptb` (4 layers, d=128, segment L = 64) on `{res['corpus']}` (word level, 10,000 most
frequent words) with training memory M, {res['steps']} steps of 16 streams, seeds {record['seeds']}; the vanilla
model (`--preset ptb_vanilla`, equal parameters) beside it where its runs are finished. Test perplexity with each
run's best validation weights, evaluated as its preset evaluates (Transformer-XL with memory 2M); mean ± std over
seeds, then each seed's value. Training time: the runs' own, on a shared device (indicative only).

| model | evaluation | valid ppl | test ppl | test ppl by seed | training s | runs |
|---|---|---|---|---|---|---|
{chr(10).join(rows(record))}

{reading(page_name(res['corpus']))}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="austen")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--mems", type=int, nargs="+", default=[64, 128, 256])
    result_args(ap, [0, 1, 2], runs="runs/bench_transformer_xl_<corpus>")
    args = ap.parse_args()
    name = page_name(args.corpus)
    if args.render_only:
        print(render(name, markdown))
        return
    args.runs = args.runs.replace("<corpus>", args.corpus)
    sweep = Sweep.from_args(args)
    jobs = [(mem, job("ptb", args.corpus, s, args.steps, mem)) for mem in args.mems for s in args.seeds]
    jobs += [(0, job(PRESETS[1], args.corpus, s, args.steps)) for s in args.seeds]
    runs = [r | {"mem": mem} for mem, j in jobs if (r := sweep.result(j)) is not None]
    if args.train_only:
        return
    keep = ("mem", "seed", "params", "valid_ppl", "test_ppl", "best_step", "train_s", "device")
    print(write_results(name, {"corpus": args.corpus, "steps": args.steps, "mems": args.mems,
                               "runs": [{k: r.get(k) for k in keep} for r in runs]},
                        markdown, seeds=sorted({r["seed"] for r in runs}), machine=sweep.machine()))


if __name__ == "__main__":
    main()
