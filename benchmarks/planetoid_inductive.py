"""Why Planetoid-I stays near the feature-only baselines on the kernel-docs graph (issue #26 item 5): Planetoid-I
(inductive: the test nodes are never seen in training, `models.planetoid.train.context_nodes_for`) under changes of
training length, learning rates, the supervised / context balance and the context mix, on the fixed split of
`benchmarks.planetoid` ("linuxdoc fixed"), beside the recorded Feat rows.

    python -m benchmarks.planetoid_inductive [--seeds 0 1 2] [--protocol 'linuxdoc fixed'] [--runs DIR]
    python -m benchmarks.planetoid_inductive --train-only --only ROW-SLUG ...   # one worker's share
    python -m benchmarks.planetoid_inductive --collect                         # the page from the kept runs

Runs go through the sweep harness (`benchmarks.sweep`: one resumable run directory per row and seed, named
<row slug>-seed<S>). Each row is `genfeat run planetoid --preset linuxdoc_i` with the recorded tuned settings
(10,000 rounds, T1 = 0.2, evaluation every 100 rounds) plus the row's overrides; test accuracy of the
best-validation state, mean ± std over seeds, with the validation accuracy (the honest way to choose among the
rows) and the accuracy of each branch of the model alone (the feature branch h^k(x) and the embedding branch
h^l(e(x))). Writes docs/results/planetoid_inductive.{md,json}.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

import numpy as np

from benchmarks.common import load_result, mean_std, reading, render, result_args, write_results
from benchmarks.planetoid import config
from benchmarks.sweep import Job, Sweep

NAME = "planetoid_inductive"
BASE = {"train.eval_every": "100", "train.rounds": "10000", "train.t1": "0.2"}  # the recorded (tuned) setting
ROWS: dict[str, dict[str, str]] = {
    "recorded setting": {},
    "2x longer (20,000 rounds)": {"train.rounds": "20000", "train.eval_every": "200"},
    "context lr 0.025 (T's)": {"train.lr_ctx": "0.025"},
    "T1 = 1 (a supervised step every round)": {"train.t1": "1.0"},
    "graph context only (r2 = 1)": {"sampler.r2": "1.0"},
    "no per-branch losses": {"model.aux_branch_loss": "false"},
    "validation nodes unseen too (selection on unseen nodes)": {"sampler.unseen": "valid+test"},
}


def slug(row: str) -> str:
    return re.sub("[^a-z0-9]+", "-", row.lower()).strip("-")


def job(row: str, seed: int, protocol: str) -> Job:
    cfg = config("planetoid_i", seed, protocol, {"planetoid_i": BASE | ROWS[row]})
    return Job(f"{slug(row)}-seed{seed}", {"row": row, "seed": seed},
               "planetoid", cfg, group=slug(row))


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    lines = []
    for row in res["rows"]:
        runs = [r for r in res["runs"] if r["row"] == row]
        if not runs:
            continue
        branches = sorted({b for r in runs for b in r.get("branch_test_acc", {})})
        br = ", ".join(f"{b} {np.mean([r['branch_test_acc'][b] for r in runs]):.3f}" for b in branches)
        lines.append(f"| {row} | {len(runs)} | {mean_std([r['valid_acc'] for r in runs], 3)} | "
                     f"{mean_std([r['test_acc'] for r in runs], 3)} | {br or '–'} | "
                     f"{np.mean([r['train_s'] for r in runs]):.0f} |")
    feat = res.get("feat", {})
    feat_line = ", ".join(f"{k} {v['mean']:.3f} ± {v['std']:.3f}" for k, v in feat.items())
    return f"""# Planetoid-I on unseen nodes of the kernel-docs graph: what moves it

{{header}}Protocol `{res['protocol']}` (docs/results/planetoid.md's split); seeds {record['seeds']}. Every row: the
recorded setting ({', '.join(f'{k} {v}' for k, v in BASE.items())}) plus the row's change.

| change | runs | val acc | test acc | test acc of each branch alone | train s |
|---|---|---|---|---|---|
{chr(10).join(lines)}

Recorded test accuracy on the same split, 5 seeds (docs/results/planetoid.md): {feat_line or '–'}.

{reading(NAME)}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--protocol", default="linuxdoc fixed")
    ap.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    result_args(ap, [0, 1, 2], runs="runs/bench_planetoid_inductive")
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    sweep = Sweep.from_args(args)
    keep = ("row", "seed", "valid_acc", "test_acc", "train_s", "branch_test_acc", "device")
    runs = [{k: r[k] for k in keep if k in r}
            for r in sweep.results(job(row, s, args.protocol) for row in args.rows for s in args.seeds)]
    if args.train_only:
        return
    agg = (load_result("planetoid") or {}).get("results", {}).get("aggregate", {})
    feat = {m: agg[args.protocol][m]["test_acc"] for m in ("feat_lr", "feat_mlp", "planetoid_i")
            if m in agg.get(args.protocol, {})}
    print(write_results(NAME, {"protocol": args.protocol, "rows": [r for r in args.rows if any(x["row"] == r
                                                                                              for x in runs)],
                               "runs": runs, "feat": feat}, markdown, seeds=args.seeds, machine=sweep.machine()))

if __name__ == "__main__":
    main()
