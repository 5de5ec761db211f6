"""Planetoid's comparison set (thesis Y Table 3.6: ManiReg, SemiEmb, TSVM beside Feat, LP, GraphEmb, GCN),
transductive and inductive, on the protocols of `benchmarks.planetoid`; records
docs/results/planetoid_baselines.{md,json}.

    python -m benchmarks.planetoid_baselines [--seeds 0 1 2] [--methods ...] [--protocols ...] [--runs DIR]
        [--train-only --only METHOD ...] [--collect]

Every method runs on the same splits as `benchmarks.planetoid` (its `config`) on one torch thread through the sweep
harness (one directory per run holding its record; workers share the list by method with --only), for each setting
of its weight in GRID (the library default first); per protocol the setting with the best mean validation accuracy
over the seeds is reported (the thesis tuned its baselines), the defaults beside it.
`_t`: the whole graph and every unlabeled node; `_i`: never a test node (the inductive protocol of Planetoid-I).
The rows of the methods recorded in
docs/results/planetoid.json (Planetoid-T / -I / -G, Feat, LP, GraphEmb, GCN; same protocols and splits, 5 seeds) are
shown beside them for comparison; they are not re-run here.
"""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks.common import load_result, mean_std, reading, render, result_args, write_results
from benchmarks.planetoid import LABELS as PLANETOID_LABELS
from benchmarks.planetoid import PROTOCOLS, config
from benchmarks.sweep import Job, Sweep
from genfeat.config import override

NAME = "planetoid_baselines"
LABELS = {"feat_lr": "Feat (logistic regression)", "feat_mlp": "Feat (MLP)", "lp": "Label propagation",
          "gcn": "GCN (PyG)", "manireg_t": "ManiReg, transductive", "manireg_i": "ManiReg, inductive",
          "semiemb_t": "SemiEmb, transductive", "semiemb_i": "SemiEmb, inductive",
          "tsvm_t": "TSVM stand-in (self-trained linear SVC), transductive",
          "tsvm_i": "TSVM stand-in (self-trained linear SVC), inductive"}
THESIS = {"Feat": "0.572 / 0.574 / 0.698", "ManiReg": "0.601 / 0.595 / 0.707", "SemiEmb": "0.596 / 0.590 / 0.711",
          "Planetoid-I": "0.647 / 0.612 / 0.772", "TSVM (transductive)": "0.640 / 0.575 / 0.622",
          "Planetoid-T (transductive)": "0.629 / 0.757 / 0.757"}  # Table 3.6, Citeseer / Cora / Pubmed
# each method's weight, the library default (models/planetoid/baselines.py BaselineConfig) first
GRID: dict[str, list[dict[str, str]]] = {
    "manireg": [{"baseline.manireg_gamma": g} for g in ("1.0", "0.01", "0.1", "10.0", "100.0")],
    "semiemb": [{"baseline.semiemb_lambda": lam, "baseline.semiemb_margin": m}
                for lam in ("0.1", "0.001", "0.01") for m in ("1.0", "0.1")],
    "tsvm": [{"baseline.tsvm_threshold": t} for t in ("0.75", "0.5", "0.9")]}


def grid(method: str) -> list[dict[str, str]]:
    return GRID.get(method.rsplit("_", 1)[0], [{}])


def job(method: str, seed: int, protocol: str, over: dict[str, str]) -> Job:
    """One grid cell: `genfeat run planetoid` with the method's weight `over` (seconds: restarted, not resumed)."""
    name = "-".join([protocol.replace(" ", "_"), method, *(f"{k.removeprefix('baseline.')}{v}"
                                                            for k, v in over.items()), f"seed{seed}"])
    return Job(name, {"method": method, "seed": seed, "protocol": protocol, "overrides": over}, "planetoid",
               override(config(method, seed, protocol, {}), over), group=method)


def selected(runs: list[dict[str, Any]], method: str, protocol: str) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The setting of `method` with the best mean validation accuracy on `protocol` (ties: the earlier in GRID, as
    `max` keeps the first maximum) and its runs."""
    def runs_of(over):
        return [r for r in runs if r["method"] == method and r["protocol"] == protocol and r["overrides"] == over]
    best = max((o for o in grid(method) if runs_of(o)),
               key=lambda o: sum(r["valid_acc"] for r in runs_of(o)) / len(runs_of(o)))
    return best, runs_of(best)


def setting(over: dict[str, str]) -> str:
    """{"baseline.manireg_gamma": "10.0"} -> "gamma 10.0"."""
    return ", ".join(f"{k.rsplit('_', 1)[-1]} {v}" for k, v in over.items()) or "defaults"


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    protocols, runs = res["protocols"], res["runs"]
    rows = []
    for m in res["methods"]:  # run here
        chosen = [selected(runs, m, p) for p in protocols]
        default = [[r for r in runs if r["method"] == m and r["protocol"] == p and r["overrides"] == grid(m)[0]]
                   for p in protocols]
        rows.append(f"| {LABELS[m]} | " + " | ".join(
            f"{mean_std([r['test_acc'] for r in rs], 3)} ({setting(o)}) / {mean_std([r['test_acc'] for r in d], 3)}"
            for (o, rs), d in zip(chosen, default, strict=True)) + " |")
    for m, agg in res.get("planetoid_recorded", {}).items():
        rows.append(f"| {PLANETOID_LABELS[m]} (recorded, docs/results/planetoid.md) | " +
                    " | ".join(f"{agg[p]['mean']:.3f} ± {agg[p]['std']:.3f}" if p in agg else "–"
                               for p in protocols) + " |")
    grids = "; ".join(" × ".join(f"{key.removeprefix('baseline.')} " + ", ".join(sorted({o[key] for o in v}, key=float))
                                 for key in v[0]) for v in GRID.values())
    thesis = "; ".join(f"{k}: {v}" for k, v in THESIS.items())
    return f"""# Planetoid's comparison set: ManiReg, SemiEmb and a TSVM stand-in (thesis Y Table 3.6's protocol)

{{header}}Test accuracy of the best-validation state, mean ± std over seeds {record['seeds']}, the protocols and splits
of docs/results/planetoid.md. Each cell: the setting with the best mean validation accuracy on that protocol (in
brackets) / the library default (`BaselineConfig`: manireg_gamma 1, semiemb_lambda 0.1, semiemb_margin 1,
tsvm_threshold 0.75). Settings tried: {grids}.

| method | {' | '.join(protocols)} |
|---|{'---|' * len(protocols)}
{chr(10).join(rows)}

Thesis (Table 3.6, Citeseer / Cora / Pubmed; ManiReg and SemiEmb in its inductive block): {thesis}.

{reading(NAME)}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--methods", nargs="+", default=[m for m in LABELS if m[-2:] in ("_t", "_i")],
                    choices=list(LABELS))
    ap.add_argument("--protocols", nargs="+", default=list(PROTOCOLS), choices=list(PROTOCOLS))
    result_args(ap, [0, 1, 2], runs="runs/bench_planetoid_baselines")
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    sweep = Sweep.from_args(args)
    jobs = [job(m, s, p, o) for p in args.protocols for m in args.methods for o in grid(m) for s in args.seeds]
    runs = sweep.results(jobs)
    if args.train_only:
        return
    if len(runs) < len(jobs):
        raise SystemExit(f"{len(jobs) - len(runs)} of {len(jobs)} runs are not finished under {args.runs}")
    rec = load_result("planetoid")
    recorded = {m: {p: rec["results"]["aggregate"][p][m]["test_acc"] for p in args.protocols
                    if m in rec["results"]["aggregate"].get(p, {})}
                for m in rec["results"]["methods"]} if rec else {}
    print(write_results(NAME, {"methods": args.methods, "protocols": args.protocols, "runs": runs,
                               "planetoid_recorded": recorded}, markdown, seeds=args.seeds, machine=sweep.machine()))


if __name__ == "__main__":
    main()
