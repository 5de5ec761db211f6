"""Thesis C Table 3.3's analogue: unsupervised extractive summarisation by facet coverage (Eq. 3.7) on Wikipedia
articles, whose lead section (written by the editors) is the human reference summary of the body; records
docs/results/facets_summaries.{md,json}.

    python -m benchmarks.facets_summaries [--runs runs/bench_facets] [--sentences 3]

Articles: every article of gensim's test dump (`data.summaries.wiki_articles`: lead >= 2 sentences, body >= 8).
Each method picks `--sentences` body sentences; the summary is those sentences in document order; ROUGE-1 / ROUGE-2
F1 against the lead (the `rouge-score` package, Porter stemming) and the summary's length in words, averaged over
the articles. Methods (spec §7.3): Random (seeded per article), Lead-3 (the first body sentences: uses order), Sent
Emb (each sentence one vector, the average of its GloVe 6B 50d words), W Emb (each sentence all its word vectors,
the gain divided by the sentence length), and Our c: the sentence's K facets from each finished facets model of
`benchmarks.facets_lee` (kept under --runs; mean ± std over seeds). The document side of Eq. 3.7 is the body's word
types, each weighted by its count times α / (α + p(w)) (p: BBC News training unigrams, α = 1e-4).
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

import numpy as np

from benchmarks.common import mean_std, reading, render, write_results
from benchmarks.facets_lee import MODELS, Vectors, facets_args, facets_job, unigram_probs
from benchmarks.sweep import Sweep
from genfeat.analysis import facet_scores as S
from genfeat.data.facets import tokenize
from genfeat.data.summaries import Article, wiki_articles

NAME = "facets_summaries"


def rouge(summary: str, reference: str) -> dict[str, float]:
    from rouge_score import rouge_scorer

    scores = rouge_scorer.RougeScorer(["rouge1", "rouge2"], use_stemmer=True).score(reference, summary)
    return {"r1": scores["rouge1"].fmeasure, "r2": scores["rouge2"].fmeasure}


def document(article: Article, vec: Vectors, probs: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """The body's word types with a GloVe vector (V, E) and their weights count × α / (α + p(w)) (V,)."""
    counts = Counter(t for s in article.body for t in tokenize(s) if t in vec.index)
    words = sorted(counts)
    w = np.array([counts[t] for t in words], dtype=np.float64) * S.sif_weights(np.array([probs.get(t, 0.0)
                                                                                         for t in words]))
    return vec.of(words), w


def pick(method: str, article: Article, n: int, reps: list[np.ndarray] | None, doc: tuple[np.ndarray, np.ndarray],
         seed: int, lengths: list[int]) -> list[int]:
    if method == "Random":
        return sorted(np.random.default_rng(seed).choice(len(article.body), n, replace=False).tolist())
    if method.startswith("Lead-3"):
        return list(range(n))
    chosen, _ = S.summarise(doc[0], doc[1], reps, n=n, per_length=lengths if method.startswith("W Emb") else None)
    return sorted(chosen)


def score_method(method: str, articles: list[Article], n: int, reps_of, docs, lengths) -> dict[str, Any]:
    r1, r2, lens = [], [], []
    for i, a in enumerate(articles):
        chosen = pick(method, a, n, reps_of(i) if reps_of else None, docs[i], i, lengths[i])
        summary = " ".join(a.body[j] for j in chosen)
        r = rouge(summary, " ".join(a.lead))
        r1.append(r["r1"])
        r2.append(r["r2"])
        lens.append(len(summary.split()))
    return {"method": method, "r1": float(np.mean(r1)), "r2": float(np.mean(r2)), "len": float(np.mean(lens))}


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    names = list(dict.fromkeys(r["method"] for r in res["rows"]))
    lines = []
    for name in names:
        rs = [r for r in res["rows"] if r["method"] == name]
        lines.append(f"| {name} | {mean_std([r['r1'] for r in rs], 1, 100)} | {mean_std([r['r2'] for r in rs], 1, 100)}"
                     f" | {mean_std([r['len'] for r in rs], 1)} | {len(rs)} |")
    return f"""# Multi-facet embeddings: extractive summarisation of Wikipedia articles (thesis C Table 3.3's analogue)

{{header}}{res['articles']} articles of gensim's test Wikipedia dump; reference: the article's lead section (mean
{res['lead_words']:.0f} words); candidates: the body's sentences (mean {res['body_sentences']:.0f} per article); every
method selects {res['sentences']} sentences. ROUGE F1 × 100 (`rouge-score`, stemming), length in words; mean over the
articles, then mean ± std over the facets models' seeds.

| method | ROUGE-1 F1 | ROUGE-2 F1 | length | seeds |
|---|---|---|---|---|
{chr(10).join(lines)}

Thesis (CNN/Daily Mail, R-1 / R-2 / Len): Random 28.1 / 8.0 / 68.7; W Emb (GloVe) 26.6 / 8.8 / 37.0; Sent Emb (GloVe)
32.6 / 10.7 / 78.2; Our c K=3 32.2 / 10.1, K=10 34.0 / 11.6, K=100 35.0 / 12.8; Lead-3 40.3 / 17.6 / 87.0.

{reading(NAME)}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentences", type=int, default=3)
    args = facets_args(ap, ["k3", "k10", "k100", "k1", "k10-kmeans", "k10-random", "k1-random", "k10-prose"],
                       list(MODELS))
    if args.render_only:
        print(render(NAME, markdown))
        return
    from genfeat.models.facets.inference import load_run, sentence_facets

    articles = wiki_articles()
    vec, probs = Vectors(), unigram_probs()
    docs = [document(a, vec, probs) for a in articles]
    words = [[vec.of([t for t in tokenize(s) if t in vec.index]) for s in a.body] for a in articles]
    lengths = [[max(1, len(w)) for w in ws] for ws in words]
    rows = [score_method("Random", articles, args.sentences, None, docs, lengths),
            score_method("Lead-3 (uses order)", articles, args.sentences, None, docs, lengths),
            score_method("Sent Emb (GloVe)", articles, args.sentences,
                         lambda i: [w.mean(0, keepdims=True) if len(w) else w for w in words[i]], docs, lengths),
            score_method("W Emb (GloVe)", articles, args.sentences, lambda i: words[i], docs, lengths)]
    sweep = Sweep(args.runs, collect=True)
    for m in args.models:
        for seed in args.seeds:
            job = facets_job(m, seed, args.steps)
            if (rec := sweep.result(job)) is None:
                continue
            model, vocab, _, _ = load_run(sweep.path(job))
            facets = [sentence_facets(model, vocab, a.body) for a in articles]
            label = MODELS[m].label.replace("Our a", "Our c")
            rows.append(score_method(label, articles, args.sentences, lambda i, f=facets: f[i], docs, lengths)
                        | {"seed": seed, "device": rec["device"]})
            print(rows[-1], flush=True)
    results = {"articles": len(articles), "sentences": args.sentences,
               "lead_words": float(np.mean([sum(len(s.split()) for s in a.lead) for a in articles])),
               "body_sentences": float(np.mean([len(a.body) for a in articles])), "rows": rows}
    print(write_results(NAME, results, markdown, seeds=args.seeds, device="cpu"))


if __name__ == "__main__":
    main()
