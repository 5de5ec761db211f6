"""Planetoid's comparison set (thesis Y Table 3.6: ManiReg, SemiEmb, TSVM beside Feat, LP, GraphEmb, GCN),
transductive and inductive, on the protocols of `benchmarks.planetoid`; records
docs/results/planetoid_baselines.{md,json}.

    python -m benchmarks.planetoid_baselines [--seeds 0 1 2] [--jobs 2] [--methods ...] [--protocols ...]

Every method runs with the library defaults (no tuning) on the same splits as `benchmarks.planetoid` (its
`config`), one process per run with one torch thread. `_t`: the whole graph and every unlabeled node;
`_i`: never a test node (the inductive protocol of Planetoid-I). The rows of the methods recorded in
docs/results/planetoid.json (Planetoid-T / -I / -G, Feat, LP, GraphEmb, GCN; same protocols and splits, 5 seeds) are
shown beside them for comparison; they are not re-run here.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from benchmarks.common import load_result, mean_std, reading, render, result_args, write_results
from benchmarks.planetoid import LABELS as PLANETOID_LABELS
from benchmarks.planetoid import PROTOCOLS, _one

NAME = "planetoid_baselines"
LABELS = {"feat_lr": "Feat (logistic regression)", "feat_mlp": "Feat (MLP)", "lp": "Label propagation",
          "gcn": "GCN (PyG)", "manireg_t": "ManiReg, transductive", "manireg_i": "ManiReg, inductive",
          "semiemb_t": "SemiEmb, transductive", "semiemb_i": "SemiEmb, inductive",
          "tsvm_t": "TSVM stand-in (self-trained linear SVC), transductive",
          "tsvm_i": "TSVM stand-in (self-trained linear SVC), inductive"}
THESIS = {"Feat": "0.572 / 0.574 / 0.698", "ManiReg": "0.601 / 0.595 / 0.707", "SemiEmb": "0.596 / 0.590 / 0.711",
          "Planetoid-I": "0.647 / 0.612 / 0.772", "TSVM (transductive)": "0.640 / 0.575 / 0.622",
          "Planetoid-T (transductive)": "0.629 / 0.757 / 0.757"}  # Table 3.6, Citeseer / Cora / Pubmed


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    protocols = res["protocols"]
    rows = []
    for m in res["methods"]:  # run here
        cells = [mean_std([r["test_acc"] for r in res["runs"] if r["method"] == m and r["protocol"] == p], 3)
                 for p in protocols]
        rows.append(f"| {LABELS[m]} | " + " | ".join(cells) + " |")
    for m, agg in res.get("planetoid_recorded", {}).items():
        rows.append(f"| {PLANETOID_LABELS[m]} (recorded, docs/results/planetoid.md) | " +
                    " | ".join(f"{agg[p]['mean']:.3f} ± {agg[p]['std']:.3f}" if p in agg else "–"
                               for p in protocols) + " |")
    thesis = "; ".join(f"{k}: {v}" for k, v in THESIS.items())
    return f"""# Planetoid's comparison set: ManiReg, SemiEmb and a TSVM stand-in (thesis Y Table 3.6's protocol)

{{header}}Test accuracy of the best-validation state, mean ± std over seeds {record['seeds']}, library defaults (no
tuning), the protocols and splits of docs/results/planetoid.md.

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
    ap.add_argument("--jobs", type=int, default=2)
    result_args(ap, [0, 1, 2])
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    with ProcessPoolExecutor(args.jobs) as pool:
        runs = []
        for r in pool.map(_one, [(m, s, p, {}) for p in args.protocols for s in args.seeds for m in args.methods]):
            print(f"{r['protocol']:16s} seed {r['seed']} {r['method']:10s} val {r['val_acc']:.4f} "
                  f"test {r['test_acc']:.4f} ({r['train_seconds']:.1f} s)", flush=True)
            runs.append(r)
    rec = load_result("planetoid")
    recorded = {m: {p: rec["results"]["aggregate"][p][m]["test_acc"] for p in args.protocols
                    if m in rec["results"]["aggregate"].get(p, {})}
                for m in rec["results"]["methods"]} if rec else {}
    print(write_results(NAME, {"methods": args.methods, "protocols": args.protocols, "runs": runs,
                               "planetoid_recorded": recorded}, markdown, seeds=args.seeds, device="cpu"))


if __name__ == "__main__":
    main()
