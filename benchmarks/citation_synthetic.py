"""The spec §13 synthetic claims of cold-start citation prediction (spec citation-prediction.md §13.2: R1-R4);
records docs/results/citation_synthetic.{md,json}. Each cell is a `genfeat run citation` run through the sweep
harness; R3's oracle and random scorers are evaluated by the same task on the same graphs.

    python -m benchmarks.citation_synthetic [--seeds 0 1 2] [--runs runs/bench_citation_synthetic]

R1: the capacity-limited graph (preset tiny: 30 topics, 3 per paper, d = 8), K = 5 against K = 1 on test citation
MAP. R2: not capacity-limited (preset r2: d = 16, 20 topics, 1-2 per paper): K should not matter. R3: an oracle
(1 when the paper has the citer's topic) and a random scorer. R4: authorship, CBOW Avg (bag-of-words centroids)
against the K = 1 model and their mixture (λ chosen on valid authorship MAP).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import numpy as np
import torch

from benchmarks.common import mean_std, result_args
from benchmarks.sweep import Job, sweep_page
from genfeat.data.citation_synthetic import synthetic_citations
from genfeat.registry import RECIPES
from genfeat.tasks.citation import CitationPrediction

NAME = "citation_synthetic"
PRESETS = ("tiny", "r2")
KS = (5, 1)


def job(preset: str, k: int, seed: int) -> Job:
    cfg = RECIPES["citation"].presets[preset]()
    cfg = dataclasses.replace(cfg, seed=seed, model=dataclasses.replace(cfg.model, k=k))
    return Job(f"{preset}-k{k}-seed{seed}", {"preset": preset, "k": k, "seed": seed}, "citation", cfg,
               group=f"{preset}-k{k}", preset=preset)


def reference_scorers(seeds: list[int]) -> list[dict[str, Any]]:
    """R3: the oracle and a random scorer on each seed's tiny graph, test split."""
    out = []
    for seed in seeds:
        cfg = RECIPES["citation"].presets["tiny"]()
        syn = synthetic_citations(dataclasses.replace(cfg.data.synthetic, seed=cfg.data.synthetic.seed + seed))
        task = CitationPrediction(syn.data, ks=cfg.eval.ks)
        g = torch.Generator().manual_seed(seed)
        oracle = task.evaluate_scores(lambda kind, papers, cols, syn=syn: torch.from_numpy(
            syn.oracle_scores(kind, papers)[cols]), "test")
        rand = task.evaluate_scores(lambda kind, papers, cols, g=g: torch.rand(len(cols), len(papers), generator=g),
                                    "test")
        papers = syn.data.papers("test")
        pairs = syn.data.pairs("citer", "test")
        rate = float(np.mean([np.isin(papers, pairs[pairs[:, 1] == c, 0]).mean() for c in np.unique(pairs[:, 1])]))
        out.append({"seed": seed, "oracle_cite_ap": oracle["test_cite_ap"], "random_cite_ap": rand["test_cite_ap"],
                    "positive_rate": rate})
    return out


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    runs = res["runs"]

    def cell(preset: str, k: int, key: str, baseline: str | None = None, digits: int = 3) -> str:
        vals = [(r["baselines"][baseline] if baseline else r)[key] for r in runs
                if r["preset"] == preset and r["k"] == k]
        return mean_std(vals, digits, spread="se")

    def diffs(preset: str) -> list[float]:
        by = {(r["k"], r["seed"]): r["test_cite_ap"] for r in runs if r["preset"] == preset}
        return [by[5, s] - by[1, s] for s in record["seeds"] if (5, s) in by and (1, s) in by]

    ref = res["reference"]
    r1, r2 = diffs("tiny"), diffs("r2")
    se = lambda xs: float(np.std(xs, ddof=1) / np.sqrt(len(xs))) if len(xs) > 1 else float("nan")  # noqa: E731
    verdict = {
        "R1": "holds" if r1 and np.mean(r1) - 2 * se(r1) >= 0.05 else "does not hold",
        "R2": "holds" if r2 and abs(np.mean(r2)) + 2 * se(r2) <= 0.02 else
              ("holds in the mean, not by its interval" if r2 and abs(np.mean(r2)) <= 0.02 else "does not hold"),
        "R3": "holds" if ref and min(r["oracle_cite_ap"] for r in ref) >= 0.75 else "does not hold",
    }
    authors = {name: np.mean([(r["baselines"][name] if name else r)["test_author_ap"] for r in runs
                              if r["preset"] == "tiny" and r["k"] == 1]) for name in ("", "cbow_avg", "model+cbow_avg")}
    verdict["R4"] = "holds" if authors["model+cbow_avg"] >= max(authors[""], authors["cbow_avg"]) - 1e-9 else \
        "does not hold"
    lam = sorted({r["baselines"]["model+cbow_avg"]["lambda"] for r in runs if r["preset"] == "tiny" and r["k"] == 1})
    return f"""# Cold-start citation prediction: the spec §13 synthetic claims

{{header}}Spec `citation-prediction.md` §13 (the generator: `data/citation_synthetic.py`; each cell a `genfeat run
citation` run, the task's per-column ranking of the 500 test papers with scikit-learn's tie rules). Mean ± s.e. over
seeds {record['seeds']} (each seed draws its own graph and network). The reference values are the spec's NumPy
prototype (1,200 steps, citation pairs only); ours train the thesis's joint objective (authorship and citation pairs,
α : β = 5 : 1) for 4,000 steps, since at 1,200 it is still improving.

**R1 (capacity-limited: 30 topics, 3 per paper, d = 8).** Test citation MAP: K = 5 {cell('tiny', 5, 'test_cite_ap')},
K = 1 {cell('tiny', 1, 'test_cite_ap')}; K = 5 − K = 1 per seed {mean_std(diffs('tiny'), 3, spread='se')}
(claim ≥ 0.05; reference 0.57–0.60 against 0.45–0.46).

**R2 (not capacity-limited: d = 16, 20 topics, 30 % one-topic and 70 % two-topic papers).** K = 5
{cell('r2', 5, 'test_cite_ap')}, K = 1 {cell('r2', 1, 'test_cite_ap')}; difference
{mean_std(diffs('r2'), 3, spread='se')} (claim: within ± 0.02; reference 0.812 against 0.806).

**R3 (metric sanity, tiny graphs).** Oracle MAP {mean_std([r['oracle_cite_ap'] for r in ref], 3, spread='se')}
(claim ≥ 0.75, capped by the 0.8 citation probability); random MAP
{mean_std([r['random_cite_ap'] for r in ref], 3, spread='se')} against the mean positive rate
{mean_std([r['positive_rate'] for r in ref], 3, spread='se')}.

**R4 (authorship, tiny graphs).** Test authorship MAP: K = 1 {cell('tiny', 1, 'test_author_ap')}, CBOW Avg
{cell('tiny', 1, 'test_author_ap', 'cbow_avg')}, their mixture {cell('tiny', 1, 'test_author_ap', 'model+cbow_avg')}
(λ on valid: {', '.join(map(str, lam))}); CBOW Max {cell('tiny', 1, 'test_author_ap', 'cbow_max')}.

| graph | K | test cite MAP | cite NDCG | cite R@50 | cite Rcap@50 | test author MAP | steps | train s |
|---|---|---|---|---|---|---|---|---|
{chr(10).join(f"| {p} | {k} | {cell(p, k, 'test_cite_ap')} | {cell(p, k, 'test_cite_ndcg')} | "
              f"{cell(p, k, 'test_cite_r@50')} | {cell(p, k, 'test_cite_rcap@50')} | {cell(p, k, 'test_author_ap')} | "
              f"{runs[0]['steps']} | {cell(p, k, 'train_s', digits=1)} |" for p in PRESETS for k in KS)}

Reading (mean ± 2 s.e. against each claim's threshold): R1 {verdict['R1']}, R2 {verdict['R2']}, R3
{verdict['R3']}, R4 {verdict['R4']} (the mixture's mean at least that of each part). Random MAP sits a little
above the positive rate because AP over a short list of a few dozen positives is biased upwards, not because the
scorer knows anything.
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    result_args(ap, [0, 1, 2], runs="runs/bench_citation_synthetic")
    args = ap.parse_args()
    jobs = [job(p, k, s) for p in PRESETS for k in KS for s in args.seeds]
    sweep_page(args, NAME, jobs, markdown, lambda runs: {"runs": runs, "reference": reference_scorers(args.seeds)})


if __name__ == "__main__":
    main()
