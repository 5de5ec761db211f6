"""The multi-facet model's small-scale claims C1-C6 (spec multi-facet-embedding.md §10.2) on the synthetic
two-topic corpus (`genfeat.data.topic_corpus`), median over seeds.

    python -m benchmarks.facets_synthetic [--seeds 0 1 2] [--runs runs/bench_facets_synthetic] [--arch bow]

Runs (the sweep harness, kept under --runs): `genfeat run facets --preset synthetic --seed S --data.split_seed S`
with K = 3 (k3), K = 1 (k1) and K = 3 trained with the k-means loss (k3-kmeans); seed S also draws the corpus.
Evaluation, on sentences drawn from the corpus with a stream no run trained on:
    C1  300 sentences: recovery = min over the pair's topics t of max_k cos(c_k, μ_t); share > 0.8 (K = 3: >= 0.5,
        K = 1: <= 0.05, impossible above 1/√2 for one vector and two orthonormal centres)
    C2  400 sentence pairs, a third each with the same topic pair (gold 1), one shared topic (0.5), none (0):
        Pearson(-SC, gold) of K = 3 minus that of K = 1 (>= 0.03); SC: Eq. 3.5, `analysis.facet_scores`
    C3  the same pairs: cosine of importance-weighted word averages (Eq. 3.6 from K = 3, no SIF) minus the uniform
        average's Pearson (>= 0.02); and the mean importance of incidental words below that of topic words
    C4  SIF weights (α = 1e-3, unigram from 5,000 sentences, no component removal) x importance (K = 3) against SIF
        weights alone (>= -0.005); importance from K = 1 is reported (the spec: not reliably helpful), and how evenly
        the importance of a sentence's words splits between its two topics (median ratio of the two topics' means)
    C5  mean pairwise cosine of a sentence's facets, k-means-trained >= NNSC-trained (reported, not gated)
    C6  the positive / negative reconstruction error per word with the exact E-step on the held-out sentences of the
        run (its validation): K = 3 positive < 0.5 and negative >= 0.75; K = 1 positive higher
Writes docs/results/facets_synthetic.{md,json}.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import reading, render, result_args, write_results
from benchmarks.sweep import Job, Sweep
from genfeat.analysis import facet_scores as S
from genfeat.data.topic_corpus import INCIDENTAL, STOPWORD, TopicCorpus, topic_corpus
from genfeat.metrics.classification import correlation

NAME = "facets_synthetic"
MODELS = {"k3": {"model.k": "3"}, "k1": {"model.k": "1"}, "k3-kmeans": {"model.k": "3", "loss.solver": "kmeans"}}
SIF_ALPHA = 1e-3  # the toy's vocabulary is tiny (spec §10.1)


# bow: the spec's reference encoder
ARCHS = {"transformer": {}, "bow": {"model.encoder": "bow", "model.decoder": "linear", "train.lr": "3e-3"}}


def job(model: str, seed: int, arch: str = "transformer") -> Job:
    from genfeat.config import override
    from genfeat.registry import RECIPES

    cfg = override(RECIPES["facets"].presets["synthetic"](),
                   MODELS[model] | ARCHS[arch] | {"seed": str(seed), "data.split_seed": str(seed)})
    tag = "" if arch == "transformer" else f"-{arch}"
    return Job(f"{model}{tag}-seed{seed}", {"model": model, "seed": seed}, "facets", cfg, group=f"{model}{tag}",
               preset="synthetic")


def sentence_pairs(corpus: TopicCorpus, n: int, rng: np.random.Generator) -> tuple[list, list, np.ndarray]:
    """n pairs of sentences, a third each sharing both topics (gold 1), one (0.5) or none (0)."""
    T = len(corpus.centres)
    first, second, gold = [], [], []
    for i in range(n):
        a, b, c, d = rng.permutation(T)[:4]
        kind = i % 3
        other = (a, b) if kind == 0 else (a, c) if kind == 1 else (c, d)
        first.append(corpus.sentence((a, b), rng)[0])
        second.append(corpus.sentence(other, rng)[0])
        gold.append((1.0, 0.5, 0.0)[kind])
    return first, second, np.array(gold)


def evaluate_seed(runs: dict[str, Path], seed: int) -> dict[str, Any]:
    from genfeat.models.facets.inference import load_run, sentence_facets

    corpus = topic_corpus(seed)
    index = {w: i for i, w in enumerate(corpus.words)}
    rng = np.random.default_rng([seed, 2024])  # a stream the runs' examples never use
    held = corpus.random_pairs(300, rng)
    held_sents = [corpus.sentence(p, rng)[0] for p in held]
    first, second, gold = sentence_pairs(corpus, 400, rng)
    probs = corpus.unigram(5000, seed)
    vec = corpus.vectors
    out: dict[str, Any] = {"seed": seed}
    facets: dict[str, dict[str, list[np.ndarray]]] = {}
    for model, run in runs.items():
        m, vocab, _, _ = load_run(run)
        facets[model] = {name: sentence_facets(m, vocab, [" ".join(s) for s in sents])
                         for name, sents in (("held", held_sents), ("first", first), ("second", second))}
    for model, f in facets.items():  # C1 and C5
        rec = np.array([S.topic_recovery(f["held"][i], corpus.centres[list(pair)]) for i, pair in enumerate(held)])
        out[f"c1_{model}"], out[f"recovery_mean_{model}"] = float((rec > 0.8).mean()), float(rec.mean())
        k = f["held"][0].shape[0]
        if k > 1:
            out[f"c5_{model}"] = float(np.mean([S.facet_spread(x) for x in f["held"]]))
    for model in ("k3", "k1"):  # C2
        sc = S.sc_distances(list(zip(facets[model]["first"], facets[model]["second"], strict=True)), lam=0.4,
                            iters=300, tol=1e-6)
        out[f"c2_{model}"] = correlation(-sc, gold)["pearson"]

    ids = {name: [np.array([index[w] for w in s]) for s in sents]
           for name, sents in (("held", held_sents), ("first", first), ("second", second))}
    sides = ("first", "second")

    def weights(fn) -> dict[str, list[np.ndarray]]:  # fn(side, j, word ids) -> the weights of pair j's sentence
        return {side: [fn(side, j, x) for j, x in enumerate(ids[side])] for side in sides}

    def times(a: dict, b: dict) -> dict[str, list[np.ndarray]]:
        return {side: [u * v for u, v in zip(a[side], b[side], strict=True)] for side in sides}

    def pearson(w: dict | None = None) -> float:  # C3 / C4: cosine of weighted word averages against gold
        sims = [S.cosine(*(S.weighted_average(vec[ids[side][j]], None if w is None else w[side][j]) for side in sides))
                for j in range(len(gold))]
        return correlation(np.array(sims), gold)["pearson"]

    imp = {(m, r): weights(lambda side, j, x, m=m, r=r: S.importance(vec[x], facets[m][side][j], r))
           for m, r in (("k3", "sum"), ("k3", "max"), ("k1", "sum"))}
    sif = weights(lambda side, j, x: S.sif_weights(probs[x], SIF_ALPHA))
    out["c3_uniform"] = pearson()
    out["c3_importance"] = pearson(imp["k3", "sum"])
    out["c4_sif"] = pearson(sif)
    out["c4_sif_importance"] = pearson(times(sif, imp["k3", "sum"]))
    out["c3_importance_max"] = pearson(imp["k3", "max"])
    out["c4_sif_importance_max"] = pearson(times(sif, imp["k3", "max"]))
    out["oracle_topic_words"] = pearson(weights(lambda side, j, x: (corpus.topic[x] >= 0).astype(float)))
    out["c4_sif_importance_k1"] = pearson(times(sif, imp["k1", "sum"]))
    held_imp = [S.importance(vec[x], f) for x, f in zip(ids["held"], facets["k3"]["held"], strict=True)]
    a, kind = np.concatenate(held_imp), corpus.topic[np.concatenate(ids["held"])]
    ratio = []  # the mechanism behind C3 / C4: how evenly a sentence's importance splits between its two topics
    for x, w, (ta, tb) in zip(ids["held"], held_imp, held, strict=True):
        per_topic = sorted((w[corpus.topic[x] == ta].mean(), w[corpus.topic[x] == tb].mean()))
        ratio.append(per_topic[1] / per_topic[0])
    out["topic_weight_ratio"] = float(np.median(ratio))
    out["importance_topic"] = float(a[kind >= 0].mean())
    out["importance_incidental"] = float(a[kind == INCIDENTAL].mean())
    out["importance_stop"] = float(a[kind == STOPWORD].mean())
    return out


def claims(per_seed: list[dict[str, Any]], summaries: dict[tuple[str, int], dict[str, Any]]) -> list[dict[str, Any]]:
    """The claims' medians over seeds and whether each holds."""
    def med(key: str) -> float:
        return float(np.median([s[key] for s in per_seed]))

    def err(model: str, part: str) -> float:
        return float(np.median([v[f"valid_er_{part}"] for (m, _), v in summaries.items() if m == model]))

    c6 = {"c6_pos_k3": err("k3", "pos"), "c6_neg_k3": err("k3", "neg"), "c6_pos_k1": err("k1", "pos"),
          "c6_neg_k1": err("k1", "neg")}
    rows = [
        ("C1", "share of sentences recovering both topics (> 0.8), K = 3 / K = 1",
         f"{med('c1_k3'):.2f} / {med('c1_k1'):.2f}", "0.83 / 0.00", med("c1_k3") >= 0.5 and med("c1_k1") <= 0.05),
        ("C2", "Pearson(-SC, gold), K = 3 / K = 1 (gain >= 0.03)",
         f"{med('c2_k3'):.3f} / {med('c2_k1'):.3f}", "0.974 / 0.888", med("c2_k3") - med("c2_k1") >= 0.03),
        ("C3", "importance-weighted / uniform average (gain >= 0.02)",
         f"{med('c3_importance'):.3f} / {med('c3_uniform'):.3f}", "0.952 / 0.894",
         med("c3_importance") - med("c3_uniform") >= 0.02),
        ("C3", "mean importance of topic / incidental / stop words (incidental below topic)",
         f"{med('importance_topic'):.3f} / {med('importance_incidental'):.3f} / {med('importance_stop'):.3f}", "–",
         med("importance_incidental") < med("importance_topic")),
        ("C4", "SIF x importance (K = 3) / SIF alone (>= -0.005)",
         f"{med('c4_sif_importance'):.3f} / {med('c4_sif'):.3f}", "0.953 / 0.935",
         med("c4_sif_importance") >= med("c4_sif") - 0.005),
        ("C3/C4", "median ratio of the mean importance of a sentence's two topics (1: even; reported)",
         f"{med('topic_weight_ratio'):.2f}", "–", None),
        ("C3/C4", "oracle weights: 1 on the topic words, 0 elsewhere (the ceiling of a word weighting; reported)",
         f"{med('oracle_topic_words'):.3f}", "–", None),
        ("C3/C4", "importance as the largest facet cosine instead of the sum (a deviation): alone / x SIF "
         "(reported)", f"{med('c3_importance_max'):.3f} / {med('c4_sif_importance_max'):.3f}", "–", None),
        ("C4", "SIF x importance from K = 1 (reported)", f"{med('c4_sif_importance_k1'):.3f}", "0.842", None),
        ("C5", "mean pairwise facet cosine, k-means / NNSC (k-means >= NNSC; reported)",
         f"{med('c5_k3-kmeans'):.3f} / {med('c5_k3'):.3f}", "–", None),
        ("C6", "positive / negative error per word, K = 3 (< 0.5 / >= 0.75)",
         f"{c6['c6_pos_k3']:.2f} / {c6['c6_neg_k3']:.2f}", "0.33 / 0.82",
         c6["c6_pos_k3"] < 0.5 and c6["c6_neg_k3"] >= 0.75),
        ("C6", "positive / negative error per word, K = 1 (positive above K = 3's)",
         f"{c6['c6_pos_k1']:.2f} / {c6['c6_neg_k1']:.2f}", "0.67 / 0.91", c6["c6_pos_k1"] > c6["c6_pos_k3"]),
    ]
    return [{"claim": c, "what": w, "measured": m, "reference": r, "holds": h} for c, w, m, r, h in rows]


def markdown(record: dict[str, Any]) -> str:
    r = record["results"]
    verdict = {True: "yes", False: "**no**", None: "(reported)"}
    rows = "\n".join(f"| {c['claim']} | {c['what']} | {c['measured']} | {c['reference']} | {verdict[c['holds']]} |"
                     for c in r["claims"])
    keys = [k for k in r["per_seed"][0] if k != "seed"]
    seeds = "\n".join(f"| {k} | " + " | ".join(f"{s[k]:.3f}" for s in r["per_seed"]) + " |" for k in keys)
    runs = "\n".join(f"| {x['model']} | {x['seed']} | {x['valid_er_pos']:.3f} | {x['valid_er_neg']:.3f} | "
                     f"{x['train_s']:.0f} |" for x in r["runs"])
    arch = r.get("arch", "transformer")
    encoder = ("a 2 + 2-layer transformer of width 64" if arch == "transformer" else
               "the bag-of-words MLP encoder (`--model.encoder bow --model.decoder linear`, width 64, Adam at 3e-3)")
    return f"""# Multi-facet embeddings: the small-scale claims C1-C6 on the synthetic two-topic corpus ({arch})

{{header}}Corpus: spec multi-facet-embedding.md §10.1 (`genfeat.data.topic_corpus`: 8 orthonormal topics in 48d, a
sentence mixes two). Runs: `genfeat run facets --preset synthetic` (K = 3, K = 1, K = 3 with the k-means loss;
{encoder}, 1,000 steps of 16 sentences, exact E-step, λ = 0.4), seeds
{', '.join(map(str, record['seeds']))}.
Medians over the seeds; the reference column is the spec's reference run (a bag-of-words MLP encoder).

| claim | what | measured | reference | holds |
|---|---|---|---|---|
{rows}

Per seed:

| quantity | {' | '.join(f'seed {s["seed"]}' for s in r['per_seed'])} |
|---|{'---|' * len(r['per_seed'])}
{seeds}

Runs (validation: the exact E-step on 320 held-out sentences):

| model | seed | positive error | negative error | train s |
|---|---|---|---|---|
{runs}

{reading(record['name'])}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", choices=list(ARCHS), default="transformer", help="the facet encoder; bow: the spec's "
                    "reference bag-of-words MLP (Adam at 3e-3), the diagnostic when a claim fails with the transformer")
    result_args(ap, [0, 1, 2], runs="runs/bench_facets_synthetic")
    args = ap.parse_args()
    name = NAME if args.arch == "transformer" else f"{NAME}_{args.arch}"
    if args.render_only:
        print(render(name, markdown))
        return
    sweep = Sweep.from_args(args)
    jobs = [job(m, s, args.arch) for s in args.seeds for m in MODELS]
    records = sweep.results(jobs)
    if args.train_only:
        return
    done = {(r["model"], r["seed"]) for r in records}
    seeds = [s for s in args.seeds if all((m, s) in done for m in MODELS)]
    per_seed = [evaluate_seed({m: sweep.path(job(m, s, args.arch)) for m in MODELS}, s) for s in seeds]
    summaries = {(r["model"], r["seed"]): r for r in records if r["seed"] in seeds}
    keep = ("model", "seed", "valid_er_pos", "valid_er_neg", "valid_loss", "train_s", "steps")
    print(write_results(name, {"arch": args.arch, "per_seed": per_seed, "claims": claims(per_seed, summaries),
                               "runs": [{k: r[k] for k in keep} for r in records if r["seed"] in seeds]},
                        markdown, seeds=seeds, machine=sweep.machine()))


if __name__ == "__main__":
    main()
