"""Thesis C Table 3.2's analogue on the Lee et al. (2005) document-similarity set (1,225 human-judged pairs of
50 news documents; the "Low" half: the pairs with the lowest gold scores): Pearson and Spearman correlation of
unsupervised similarity scores with the human judgements.

    python -m benchmarks.facets_lee [--models k10 k1 k10-kmeans] [--seeds 0 1 2] [--steps 1500] [--sc]
    python -m benchmarks.facets_lee --train-only --only k10 ...      # one worker's share of the facets runs
    python -m benchmarks.facets_lee --collect                        # evaluate and record the finished runs

Facets runs (the sweep harness, `benchmarks.sweep`; kept under --runs): `genfeat run facets --preset
bbc_glove50 --train.max_steps STEPS --seed S` with K = 10 (k10), K = 1 (k1) or K = 10 trained with the k-means
loss instead of NNSC (k10-kmeans, `loss.solver kmeans`: the thesis's ablation); K = 3 and 100 (k3, k100: Table
3.3's, read by `benchmarks.facets_summaries`) and the phrase models (p10, p1: `--preset bbc_phrases`, for
`benchmarks.facets_phrases`) are trained by the same jobs (`--train-only --models k3 --only k3`). Every model's
input table starts from the GloVe targets (the recipe's default); `-random`: a random input table of width 100
(the ablation); k10-prose: `--preset prose_glove50` (every offline prose corpus, sentences deduplicated).
Rows: GloVe 6B 50d Avg / Prob_avg / SIF / WMD / Prob_WMD; with each facets model the same scores weighted by the
facet importance a_i ("Our a", Eq. 3.6; "Our a_max": the largest facet cosine instead of the sum, a deviation that
docs/results/facets_synthetic.md motivates), mean ± std over the seeds, and, with --sc, the facet-set distance SC
(Eq. 3.5; its E-step to a projected gradient of 1e-6 or 300 FISTA iterations, batched over zero-padded facet sets,
`analysis.facet_scores.sc_distances`);
MiniLM-L6 [CLS] and mean pooling.
A document's facets are the union of its sentences' facets; a word's importance uses the facets of its
own sentence. p(w): unigram frequencies of the BBC News training articles (the facets runs' corpus); SIF's
component: from the Prob_avg embeddings of the 300 Lee background documents (the reference set stands in for a
training distribution, as the thesis's †); the "Our a" rows remove that same component, computed without the
importance weights (the background documents have no facets computed: a deviation).
Writes docs/results/facets.{md,json}.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks.common import mean_std, reading, render, result_args, write_results
from benchmarks.sweep import Job, Sweep
from genfeat.analysis import facet_scores as S
from genfeat.data.facets import tokenize
from genfeat.data.sentence_split import split_sentences
from genfeat.data.similarity_sets import lee_background, lee_documents, lee_pairs
from genfeat.data.text_classification import load_bbc_news, stratified_split
from genfeat.data.word_vectors import load_glove
from genfeat.metrics.classification import correlation
from genfeat.tasks.similarity import Similarity

NAME = "facets"


class Vectors:
    def __init__(self):
        words, vecs = load_glove()
        self.index = {w: i for i, w in enumerate(words)}
        self.vecs = vecs

    def of(self, tokens: list[str]) -> np.ndarray:
        out = np.zeros((len(tokens), self.vecs.shape[1]))
        for i, t in enumerate(tokens):
            if t in self.index:
                out[i] = self.vecs[self.index[t]]
        return out


def unigram_probs() -> dict[str, float]:
    docs = load_bbc_news()
    counts = Counter(t for i in stratified_split(docs.labels, 0)["train"] for t in tokenize(docs.texts[i]))
    total = sum(counts.values())
    return {w: c / total for w, c in counts.items()}


def scores(name: str, pairs, embed=None, dist=None) -> dict[str, Any]:
    """Similarity of every pair from document embeddings (cosine) or a distance (negated)."""
    sim = np.array([S.cosine(embed[i], embed[j]) for i, j in pairs] if embed is not None else
                   [-dist(i, j) for i, j in pairs])
    return {"name": name, "sim": sim}


def evaluate(rows: list[dict[str, Any]], gold: np.ndarray) -> list[dict[str, Any]]:
    """Pearson / Spearman of each row's similarities with the gold scores, on all pairs and the low half (the
    similarity task, `tasks.similarity`)."""
    task = Similarity({"lee": (list(range(len(gold))), gold)})
    return [{"name": r["name"], **task.score(np.asarray(r["sim"], dtype=np.float64), "lee")} for r in rows]


def glove_rows(tokens, vec: Vectors, probs, weights=None, tag="GloVe") -> list[dict[str, Any]]:
    """Avg / Prob_avg / SIF / WMD / Prob_WMD, each word's weight times `weights` (Our a) when given."""
    pairs, _ = lee_pairs()
    words = [vec.of(t) for t in tokens]
    a = weights or [np.ones(len(t)) for t in tokens]
    sif = [S.sif_weights(np.array([probs.get(w, 0.0) for w in t])) for t in tokens]
    avg = [S.weighted_average(w, x) for w, x in zip(words, a, strict=True)]
    pavg = [S.weighted_average(w, s * x) for w, s, x in zip(words, sif, a, strict=True)]
    bg = [tokenize(d) for d in lee_background()]
    ref = np.stack([S.weighted_average(vec.of(t), S.sif_weights(np.array([probs.get(w, 0.0) for w in t])))
                    for t in bg])
    u = S.principal_component(ref)
    sif_emb = S.remove_component(np.stack(pavg), u)
    return [scores(f"Avg ({tag})", pairs, embed=avg), scores(f"Prob_avg ({tag})", pairs, embed=pavg),
            scores(f"SIF† ({tag})", pairs, embed=sif_emb),
            scores(f"WMD ({tag})", pairs, dist=lambda i, j: S.wmd(words[i], words[j], a[i], a[j])),
            scores(f"Prob_WMD ({tag})", pairs,
                   dist=lambda i, j: S.wmd(words[i], words[j], sif[i] * a[i], sif[j] * a[j]))]


@dataclass(frozen=True)
class FacetsModel:
    """A row of the facets benchmarks: its label, the recipe preset it trains from and the overrides on it."""

    label: str
    overrides: dict[str, str]
    preset: str = "bbc_glove50"


# the random-input-table ablation: a width (100) other than the target vectors' (50), so the recipe does not copy
# GloVe into the input embeddings (its default, as the thesis's encoder starts from its GloVe table)
RANDOM_INPUT = {"model.d_model": "100", "model.n_head": "4", "model.d_inner": "400"}


def random_input(models: dict[str, FacetsModel]) -> dict[str, FacetsModel]:
    """The same models with a random input table of width 100, named `<model>-random`."""
    return {f"{m}-random": dataclasses.replace(x, label=f"{x.label}, random input",
                                               overrides=x.overrides | RANDOM_INPUT) for m, x in models.items()}


MODELS = {"k10": FacetsModel("Our a K10", {"model.k": "10"}), "k1": FacetsModel("Our a K1", {"model.k": "1"})}
MODELS |= random_input(MODELS) | {  # sentence models
    "k10-kmeans": FacetsModel("Our a K10, k-means loss", {"model.k": "10", "loss.solver": "kmeans"}),
    "k3": FacetsModel("Our a K3", {"model.k": "3"}), "k100": FacetsModel("Our a K100", {"model.k": "100"}),
    # every offline prose corpus (BBC News, Wikipedia, Austen, KJV, Shakespeare, Python docs), deduplicated
    "k10-prose": FacetsModel("Our a K10, all prose", {"model.k": "10"}, "prose_glove50")}
LEE_MODELS = ["k10", "k1", "k10-kmeans", "k10-random", "k1-random", "k10-prose"]  # Table 3.2 (K 3, 100: Table 3.3)
PHRASE_MODELS = {"p10": FacetsModel("phrase model K10", {"model.k": "10"}, "bbc_phrases"),
                 "p1": FacetsModel("phrase model K1", {"model.k": "1"}, "bbc_phrases")}
PHRASE_MODELS |= random_input(PHRASE_MODELS)


def facets_args(ap: argparse.ArgumentParser, models: list[str], choices: list[str]) -> argparse.Namespace:
    """The options of the benchmarks that read the facets sweep: --models, --steps, the seeds and the runs."""
    ap.add_argument("--models", nargs="+", default=models, choices=choices)
    ap.add_argument("--steps", type=int, default=1500)
    result_args(ap, [0, 1, 2], runs="runs/bench_facets")
    return ap.parse_args()


def facets_job(model: str, seed: int, steps: int) -> Job:
    from genfeat.config import override
    from genfeat.registry import RECIPES

    spec = (MODELS | PHRASE_MODELS)[model]
    cfg = override(RECIPES["facets"].presets[spec.preset](), spec.overrides | {
        "train.max_steps": str(steps), "seed": str(seed), "train.eval_every": str(max(1, steps // 5))})
    return Job(f"{model}-seed{seed}-steps{steps}", {"model": model, "seed": seed}, "facets", cfg, group=model,
               preset=spec.preset)


def covered_pairs(vocab: set[str], vec: Vectors) -> dict[str, list[tuple[str, str, float]]]:
    """WordSim353 and SimLex-999 pairs whose words are in `vocab` (the facets models') and in GloVe."""
    from genfeat.data.similarity_sets import word_pairs

    return {name: [(a, b, g) for a, b, g in word_pairs(name) if {a, b} <= vocab and a in vec.index
                   and b in vec.index] for name in ("wordsim353", "simlex999")}


def word_rows(run: Path | None, vec: Vectors, tag: str, pairs: dict[str, list]) -> list[dict[str, Any]]:
    """Spearman / Pearson of cosine similarities with the human scores of `pairs`: GloVe (run None), or the
    run's learned input embeddings and the mean of a word's K unit facets (the word alone as a sentence)."""
    from genfeat.models.facets.inference import load_run, sentence_facets

    out = []
    for name, rows in pairs.items():
        gold = np.array([g for *_, g in rows])
        words = sorted({w for a, b, _ in rows for w in (a, b)})
        if run is None:
            kinds = {f"GloVe ({tag})": {w: vec.of([w])[0] for w in words}}
        else:
            model, vocab, _, _ = load_run(run)
            ids, table = {w: i for i, w in enumerate(vocab)}, model.encoder.tok.weight.detach().numpy()
            kinds = {f"input embeddings ({tag})": {w: table[ids[w]] for w in words},
                     f"mean facet ({tag})": dict(zip(words, (f.mean(0) for f in sentence_facets(model, vocab, words)),
                                                     strict=True))}
        for kind, emb in kinds.items():
            c = correlation(np.array([S.cosine(emb[a], emb[b]) for a, b, _ in rows]), gold)
            out.append({"set": name, "name": kind, "pairs": len(rows), **c})
    return out


def facet_rows(run: Path, docs: list[str], tokens, vec, probs, sc: bool, tag: str) -> list[dict[str, Any]]:
    from genfeat.models.facets.inference import load_run, sentence_facets

    model, vocab, _, _ = load_run(run)
    facets, weights, largest = [], [], []
    for d in docs:
        sents = split_sentences(d)
        fs = sentence_facets(model, vocab, sents)
        facets.append(np.concatenate(fs))
        for out, reduce in ((weights, "sum"), (largest, "max")):
            out.append(np.concatenate([S.importance(vec.of(tokenize(s)), f, reduce)
                                       for s, f in zip(sents, fs, strict=True)]))
    pairs, _ = lee_pairs()
    rows = glove_rows(tokens, vec, probs, weights, tag)
    rows += glove_rows(tokens, vec, probs, largest, tag.replace("Our a", "Our a_max"))
    if sc:  # E-step to 1e-6 (or 300 FISTA iterations), batched over padded pairs of ~100-facet documents
        rows.append({"name": f"SC ({tag.replace('Our a', 'Our c')})",
                     "sim": -S.sc_distances([(facets[i], facets[j]) for i, j in pairs], iters=300, tol=1e-6)})
    return rows


def minilm_rows(docs: list[str]) -> list[dict[str, Any]]:
    from genfeat.models.bert import bert_dir, from_pretrained, mean_pool
    from genfeat.models.bert.tokenizer import encode, load_wordpiece

    d = bert_dir("minilm-l6")
    model, _ = from_pretrained(d)
    x = encode(load_wordpiece(d), docs, max_len=256)
    with torch.no_grad():
        h = model(**x).hidden
    pairs, _ = lee_pairs()
    return [scores("CLS (MiniLM-L6)", pairs, embed=h[:, 0].numpy()),
            scores("Avg (MiniLM-L6)", pairs, embed=mean_pool(h, x["attention_mask"]).numpy())]


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per score name, in first-seen order: mean ± std of each correlation over the rows (seeds)."""
    names = list(dict.fromkeys(r["name"] for r in rows))
    keys = ("pearson", "spearman", "low_pearson", "low_spearman")
    return [{"name": n, "seeds": len(rs := [r for r in rows if r["name"] == n]),
             **{k: mean_std([r[k] for r in rs], 1, scale=100) for k in keys}} for n in names]


def word_table(words: list[dict[str, Any]]) -> str:
    if not words:
        return ""
    names = list(dict.fromkeys(r["name"] for r in words))
    lines = []
    for n in names:
        cells = []
        for s in ("wordsim353", "simlex999"):
            rs = [r for r in words if r["name"] == n and r["set"] == s]
            cells.append(mean_std([r["spearman"] for r in rs], 1, 100))
        lines.append(f"| {n} | {' | '.join(cells)} | {sum(r['name'] == n for r in words) // 2} |")
    n_pairs = {r["set"]: r["pairs"] for r in words}
    return f"""Word similarity of what the models learned (Spearman × 100, cosine; the {n_pairs.get('wordsim353')}
WordSim353 and {n_pairs.get('simlex999')} SimLex-999 pairs whose words are in the facets models' vocabulary and in
GloVe):

| embedding (model) | WordSim353 | SimLex-999 | seeds |
|---|---|---|---|
{chr(10).join(lines)}"""


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    table = "\n".join(f"| {r['name']} | {r['pearson']} | {r['spearman']} | {r['low_pearson']} | {r['low_spearman']} | "
                      f"{r['seeds']} |" for r in summarise(res["rows"]))
    runs = ", ".join(f"{r['model']} seed {r['seed']} (valid loss {r['valid_loss']:.3f})" for r in res["facet_runs"])
    return f"""# Multi-facet embeddings: document similarity on Lee et al. (2005) (thesis C Table 3.2's analogue)

{{header}}1,225 pairs of 50 news documents with mean human similarity; Low = the 612 pairs with the lowest gold
scores. Correlations x 100, mean ± std over the facets models' seeds (GloVe and MiniLM rows have no seed).
Facets runs ({res['steps']} steps of 64 sentences each, BBC News but for the all-prose model): {runs or 'none yet'}.

| score (model) | Pearson All | Spearman All | Pearson Low | Spearman Low | seeds |
|---|---|---|---|---|---|
{table}

{word_table(res.get("words", []))}

Thesis (STS-B test, Pearson All / Low): Avg GloVe 36.6 / 30.9, Our a K10 50.0 / 46.5; SIF† GloVe 63.2 / 58.1, Our a
K10 64.6 / 62.2; SC Our c K10 52.6 / 47.8; BERT Avg 51.2 / 39.1.

{reading(NAME)}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sc", action="store_true", help="also SC between the documents' facet sets (slow)")
    args = facets_args(ap, LEE_MODELS, list(MODELS))
    if args.render_only:
        print(render(NAME, markdown))
        return
    sweep = Sweep.from_args(args)
    jobs = [facets_job(m, seed, args.steps) for m in args.models for seed in args.seeds]
    runs = [(j, r) for j in jobs if (r := sweep.result(j)) is not None]
    if args.train_only:
        return
    docs = lee_documents()
    tokens = [tokenize(d) for d in docs]
    vec, probs = Vectors(), unigram_probs()
    _, gold = lee_pairs()
    rows = evaluate(glove_rows(tokens, vec, probs), gold)
    for j, r in runs:
        rows += [x | {"model": r["model"], "seed": r["seed"]} for x in evaluate(
            facet_rows(sweep.path(j), docs, tokens, vec, probs, args.sc, MODELS[r["model"]].label), gold)]
    rows += evaluate(minilm_rows(docs), gold)
    words: list[dict[str, Any]] = []
    if runs:  # the pairs every model's input vocabulary covers (the BBC training split's, or all prose's)
        vocab = set.intersection(*(set((sweep.path(j) / "vocab.txt").read_text().splitlines()) for j, _ in runs))
        pairs = covered_pairs(vocab, vec)
        words = word_rows(None, vec, "6B 50d", pairs)
        for j, r in runs:
            words += [x | {"model": r["model"], "seed": r["seed"]}
                      for x in word_rows(sweep.path(j), vec, MODELS[r["model"]].label.removeprefix("Our a "), pairs)]
    for r in summarise(rows):
        print(f"{r['name']:<45} {r['pearson']:>14} {r['low_pearson']:>14}")
    facet_runs = [{k: r[k] for k in ("model", "seed", "steps", "valid_loss", "device")} for _, r in runs]
    print(write_results(NAME, {"steps": args.steps, "facet_runs": facet_runs, "rows": rows, "words": words}, markdown,
                        seeds=args.seeds, machine=sweep.machine()))


if __name__ == "__main__":
    main()
