"""Table 3.8's analogue on the Debian citation graph (thesis C §3.4.3; spec citation-prediction.md §10); records
docs/results/citation.{md,json}. Each cell is a `genfeat run citation --preset debian_cpu` run through the sweep
harness; the CBOW rows and the mixtures are each run's `baselines` (λ chosen on valid authorship MAP).

    genfeat data fetch debian-packages glove-6b-50d
    python -m benchmarks.citation [--seeds 0 1 2] [--runs runs/bench_citation] [--only k1 k1-noauto]

Rows: K = 1 without Ω (γ = 0), K = 1, K = 3, K = 5, the network of `debian_cpu` otherwise unchanged (the thesis
tunes on K = 1 and changes only K). The transformer and bi-GRU encoders (`debian`, `--model.encoder gru`) are not
run at this budget (an order of magnitude slower a step on the 2-core CPU).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from benchmarks.common import mean_std, result_args
from benchmarks.sweep import Job, sweep_page
from genfeat.registry import RECIPES

NAME = "citation"
ROWS = {"k1-noauto": ("K=1 (no auto)", 1, 0.0), "k1": ("K=1", 1, None), "k3": ("K=3", 3, None),
        "k5": ("K=5", 5, None)}
ROW_NAMES = [name for name, _, _ in ROWS.values()]
METRICS = ("ap", "auc", "ndcg", "r@50", "r@200")
THESIS = {  # Table 3.8, ×100: A-MAP A-AUC A-NDCG A-R@50 A-R@200 | C-MAP C-AUC C-NDCG C-R@50 C-R@200
    "K=1 (no auto)": (10.15, 90.71, 25.14, 47.68, 72.84, 18.50, 96.48, 33.83, 71.29, 88.80),
    "K=1": (12.36, 90.44, 26.87, 46.88, 70.85, 18.81, 96.27, 33.89, 69.22, 88.13),
    "K=3": (15.13, 89.68, 29.61, 52.89, 73.98, 22.86, 96.39, 37.70, 75.19, 89.96),
    "K=5": (15.51, 90.49, 29.91, 52.74, 73.76, 24.06, 96.28, 38.71, 75.15, 89.76),
    "CBOW Avg": (16.67, 87.42, 29.96, 44.06, 63.02, 16.33, 91.10, 30.11, 50.20, 71.88),
    "CBOW Max": (20.37, 88.29, 33.45, 46.97, 65.58, 15.46, 91.26, 29.34, 49.34, 72.79),
    "K=1 + CBOW Avg": (18.70, 90.54, 32.43, 51.02, 71.77, 21.76, 94.80, 35.92, 64.82, 83.06),
    "K=5 + CBOW Avg": (19.66, 90.35, 33.34, 53.07, 72.47, 23.66, 94.76, 37.71, 67.91, 84.08),
    "K=1 + CBOW Max": (22.61, 90.89, 36.00, 54.32, 73.11, 22.17, 94.62, 36.27, 64.73, 83.72),
    "K=5 + CBOW Max": (23.23, 90.63, 36.57, 55.79, 73.44, 24.13, 94.54, 38.10, 67.94, 84.48),
}


def job(group: str, seed: int) -> Job:
    _, k, gamma = ROWS[group]
    cfg = RECIPES["citation"].presets["debian_cpu"]()
    loss = cfg.loss if gamma is None else dataclasses.replace(cfg.loss, gamma=gamma)
    cfg = dataclasses.replace(cfg, seed=seed, model=dataclasses.replace(cfg.model, k=k), loss=loss)
    return Job(f"{group}-seed{seed}", {"row": ROWS[group][0], "seed": seed}, "citation", cfg, group=group,
               preset="debian_cpu")


def _values(runs: list[dict[str, Any]], row: str) -> list[dict[str, float]]:
    """Each seed's test metrics of a table row: a model's own, or a baseline / mixture out of a model's runs."""
    if row in ("CBOW Avg", "CBOW Max"):  # no training, one split: the same in every run; one value
        name = "cbow_avg" if row == "CBOW Avg" else "cbow_max"
        return [r["baselines"][name] for r in runs if r["row"] == "K=1"][:1]
    if "+" in row:
        model, base = row.split(" + ")
        name = "model+cbow_avg" if base == "CBOW Avg" else "model+cbow_max"
        return [r["baselines"][name] for r in runs if r["row"] == model]
    return [r for r in runs if r["row"] == row]


def markdown(record: dict[str, Any]) -> str:
    runs = record["results"]["runs"]
    lines = []
    for row, thesis in THESIS.items():
        vals = _values(runs, row)
        if not vals:
            continue
        cells = [mean_std([v[f"test_{kind}_{m}"] for v in vals], 1, scale=100, spread="se")
                 for kind in ("author", "cite") for m in METRICS]
        lam = sorted({v["lambda"] for v in vals if "lambda" in v})
        name = row + (f" (λ {', '.join(map(str, lam))})" if lam else "")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("| thesis | " + " | ".join(f"{x:.2f}" for x in thesis) + " |")
    ds = runs[0]["dataset"] if runs else {}

    def by_seed(row: str, key: str) -> dict[int, float]:
        return {r["seed"]: r[key] for r in runs if r["row"] == row}

    def diff(a: str, b: str, key: str) -> str:
        x, y = by_seed(a, key), by_seed(b, key)
        d = [x[s] - y[s] for s in x if s in y]
        return mean_std(d, 1, scale=100, spread="se") if d else "–"

    def mean(vals: list[dict[str, float]], key: str) -> float:
        return sum(v[key] for v in vals) / len(vals) if vals else float("nan")

    cold = {row: mean(_values(runs, row), "test_cite_ap") for row in ROW_NAMES if _values(runs, row)}
    best = max(cold, key=cold.get) if cold else None
    docs = {row: mean(_values(runs, row), "test_cite_ap") for row in ("CBOW Avg", "CBOW Max") if _values(runs, row)}
    doc_row = max(docs, key=docs.get) if docs else None
    doc = docs.get(doc_row, float("nan"))
    cold_vs_doc = (f"the best cold-start row ({best}) {100 * cold[best]:.1f} against {doc_row} {100 * doc:.1f}: "
                   + ("the thesis's direction (cold start ahead on citation) holds" if cold[best] > doc else
                      "the thesis's direction (cold start ahead on citation) does not hold at this budget")
                   if best else "–")
    mixes = []
    for model in ("K=1", "K=5"):
        for base in ("CBOW Avg", "CBOW Max"):
            for kind in ("author", "cite"):
                key = f"test_{kind}_ap"
                m, parts = mean(_values(runs, f"{model} + {base}"), key), \
                    [mean(_values(runs, model), key), mean(_values(runs, base), key)]
                if m == m:
                    mixes.append(f"{model} + {base} {kind} MAP {100 * m:.1f} against {100 * max(parts):.1f} for "
                                 f"the better part")
    speed = [r["steps"] * 100 / r["train_s"] for r in runs if r.get("train_s")]  # 50 pairs = 100 papers a step
    header = " | ".join(f"{k}-{m.upper()}" for k in ("A", "C") for m in METRICS)
    return f"""# Cold-start citation and authorship prediction on the Debian citation graph (Table 3.8's analogue)

{{header}}The graph: `genfeat data build debian-citations` (`data/debian_citations.py`): {ds.get('papers', 0):,}
packages as papers ({ds.get('train_papers', 0):,} train / {ds.get('valid_papers', 0):,} valid /
{ds.get('test_papers', 0):,} test: 10 % of the packages with at least 5 citing packages, by source group),
{ds.get('authors', 0):,} maintainers as authors ({ds.get('authorship_pairs', 0):,} pairs), {ds.get('citers', 0):,}
citing packages ({ds.get('citation_pairs', 0):,} reverse-dependency pairs). Test metrics ×100, mean ± s.e. over
seeds {record['seeds']} (the network's seed; one split), each column's ranking of the test packages with
scikit-learn's tie rules; R@N is plain recall. Network (`debian_cpu`): bag-of-words encoder from GloVe 6B 50d, a
linear facet decoder with K output layers into R^100, the magnitude heads, Ω on unit-length SIF targets (γ = 10),
α : β = 5 : 1, Adam 1e-3, 4,000 steps of 50 pairs (under one pass over the 268k training pairs; the thesis trains
about a week on a GPU). Training throughput: {mean_std(speed, 0)} papers/s (mean ± std over the runs, 1 torch thread
each; a step encodes 50 papers and their
50 negatives).

| method | {header} |
|---|{'---|' * 10}
{chr(10).join(lines)}

Per-seed differences (×100, mean ± s.e.): K = 5 − K = 1 citation MAP {diff('K=5', 'K=1', 'test_cite_ap')},
authorship MAP {diff('K=5', 'K=1', 'test_author_ap')}; K = 1 − K = 1 (no auto) authorship MAP
{diff('K=1', 'K=1 (no auto)', 'test_author_ap')}, citation MAP {diff('K=1', 'K=1 (no auto)', 'test_cite_ap')}.
Mixtures: {'; '.join(mixes) or '–'}.
Cold start against document similarity on citation MAP: {cold_vs_doc}.

The thesis's numbers are on S2ORC (260k papers, 3,033 test papers with >= 5 authors); a Debian package has one
maintainer, so its authorship columns are teams and individuals with >= 2 packages, and its citations are
dependencies. The rows compare methods on the same graph; the thesis rows give the direction, not a target.
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    result_args(ap, [0, 1, 2], runs="runs/bench_citation")
    args = ap.parse_args()
    jobs = [job(g, s) for g in ROWS for s in args.seeds]
    sweep_page(args, NAME, jobs, markdown, lambda runs: {"runs": runs})


if __name__ == "__main__":
    main()
