"""Thesis C Table 3.2's analogue on the Lee et al. (2005) document-similarity set (1,225 human-judged pairs of
50 news documents; the "Low" half: the pairs with the lowest gold scores): Pearson and Spearman correlation of
unsupervised similarity scores with the human judgements.

    python -m benchmarks.facets_lee [--facets RUN ...]      # RUN: `genfeat run facets` directories (K, seed)

Rows: GloVe 6B 50d Avg / Prob_avg / SIF / WMD / Prob_WMD; with each facets run the same scores weighted by the
facet importance a_i ("Our a", Eq. 3.6) and, with --sc, the facet-set distance SC (Eq. 3.5; its E-step to a
projected gradient of 1e-6 or 300 FISTA iterations, as a document has many facets); MiniLM-L6 [CLS] and mean
pooling.
A document's facets are the union of its sentences' facets; a word's importance uses the facets of its
own sentence. p(w): unigram frequencies of the BBC News training articles (the facets runs' corpus); SIF's
component: from the Prob_avg embeddings of the 300 Lee background documents (the reference set stands in for a
training distribution, as the thesis's †). Writes docs/results/facets.{md,json}.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks.common import reading, render, write_results
from genfeat.analysis import facet_scores as S
from genfeat.data.facets import tokenize
from genfeat.data.sentences import split_sentences
from genfeat.data.similarity_sets import lee_background, lee_documents, lee_pairs
from genfeat.data.text_classification import load_bbc_news, stratified_split
from genfeat.data.word_vectors import load_glove
from genfeat.metrics.classification import correlation
from genfeat.tasks.similarity import low_half

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
    low = low_half(gold)
    out = []
    for r in rows:
        a, lo = correlation(r["sim"], gold), correlation(r["sim"][low], gold[low])
        out.append({"name": r["name"], "pearson": a["pearson"], "spearman": a["spearman"],
                    "low_pearson": lo["pearson"], "low_spearman": lo["spearman"]})
    return out


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


def facet_rows(run: Path, docs: list[str], tokens, vec, probs, sc: bool) -> list[dict[str, Any]]:
    from genfeat.data.facets import EOS
    from genfeat.recipes.facets import load_run

    model, vocab, _, table = load_run(run)
    ids = {w: i for i, w in enumerate(vocab)}
    facets, weights = [], []
    for d in docs:
        fs, ws = [], []
        for sent in split_sentences(d):
            toks = tokenize(sent)[: model.cfg.max_len - 1]
            with torch.no_grad():
                f = torch.nn.functional.normalize(model(torch.tensor([[ids.get(t, 1) for t in toks] + [ids[EOS]]]))[0],
                                                  dim=-1).numpy()
            fs.append(f)
            ws.append(S.importance(vec.of(tokenize(sent)), f))
        facets.append(np.concatenate(fs))
        weights.append(np.concatenate(ws))
    k = model.cfg.k
    pairs, _ = lee_pairs()
    tag = f"Our a K{k}, {run.name}"
    rows = glove_rows(tokens, vec, probs, weights, tag)
    if sc:  # E-step to 1e-6 (or 300 FISTA iterations); seconds per pair of ~100-facet documents on 2 cores
        rows.append(scores(f"SC (Our c K{k}, {run.name})", pairs,
                           dist=lambda i, j: S.sc_distance(facets[i], facets[j], iters=300, tol=1e-6)))
    return rows


def minilm_rows(docs: list[str]) -> list[dict[str, Any]]:
    from genfeat.models.bert import from_pretrained, mean_pool
    from genfeat.models.bert.tokenizer import encode, load_wordpiece
    from genfeat.recipes.multi_cls import bert_dir

    d = bert_dir("minilm-l6")
    model, _ = from_pretrained(d)
    x = encode(load_wordpiece(d), docs, max_len=256)
    with torch.no_grad():
        h = model(**x).hidden
    pairs, _ = lee_pairs()
    return [scores("CLS (MiniLM-L6)", pairs, embed=h[:, 0].numpy()),
            scores("Avg (MiniLM-L6)", pairs, embed=mean_pool(h, x["attention_mask"]).numpy())]


def markdown(record: dict[str, Any]) -> str:
    rows = record["results"]["rows"]
    table = "\n".join(f"| {r['name']} | {100 * r['pearson']:.1f} | {100 * r['spearman']:.1f} | "
                      f"{100 * r['low_pearson']:.1f} | {100 * r['low_spearman']:.1f} |" for r in rows)
    return f"""# Multi-facet embeddings: document similarity on Lee et al. (2005) (thesis C Table 3.2's analogue)

{{header}}1,225 pairs of 50 news documents with mean human similarity; Low = the 612 pairs with the lowest gold
scores. Correlations x 100. Facets runs: {', '.join(record['results']['facet_runs']) or 'none yet'}.

| score (model) | Pearson All | Spearman All | Pearson Low | Spearman Low |
|---|---|---|---|---|
{table}

Thesis (STS-B test, Pearson All / Low): Avg GloVe 36.6 / 30.9, Our a K10 50.0 / 46.5; SIF† GloVe 63.2 / 58.1, Our a
K10 64.6 / 62.2; SC Our c K10 52.6 / 47.8; BERT Avg 51.2 / 39.1.

{reading(NAME)}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facets", nargs="*", default=[], help="genfeat run facets directories")
    ap.add_argument("--sc", action="store_true", help="also SC between documents' facet sets (slow: hours on 2 cores)")
    ap.add_argument("--render-only", action="store_true")
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    docs = lee_documents()
    tokens = [tokenize(d) for d in docs]
    vec, probs = Vectors(), unigram_probs()
    _, gold = lee_pairs()
    rows = glove_rows(tokens, vec, probs)
    for run in args.facets:
        rows += facet_rows(Path(run), docs, tokens, vec, probs, args.sc)
    rows += minilm_rows(docs)
    results = evaluate(rows, gold)
    for r in results:
        print(f"{r['name']:<45} {100 * r['pearson']:6.1f} {100 * r['low_pearson']:6.1f}")
    print(write_results(NAME, {"facet_runs": [Path(r).name for r in args.facets], "rows": results}, markdown))


if __name__ == "__main__":
    main()
