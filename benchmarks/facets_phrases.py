"""Thesis C Table 3.4's analogue: unsupervised phrase similarity on phrase sets built from WordNet 3.0 the way
Turney (2012) built his (`data.wordnet.phrase_items`); records docs/results/facets_phrases.{md,json}.

    python -m benchmarks.facets_phrases [--runs runs/bench_facets] [--items 2000] [--models p10 p1 p10-random ...]
    python -m benchmarks.facets_phrases --train-only --only p10      # one worker's share of the phrase models

Items: a two-word noun lemma ("smash hit"), its one-word synonym from the same synset ("blockbuster") and 4
distractors (a one-word synonym of the modifier and one of the head, two random one-word noun lemmas: Turney's
5-choice set), built over the words that have GloVe vectors and are in the facets models' vocabulary (the BBC
News training words, shared by every facets model: an unknown word would be <unk> to them). Turney (5): the
answer must score above the 4 distractors; Turney (10): also above the 5 pairs of the reversed bigram ("hit
smash") with the same unigrams (word order); ties split the credit (an answer tied with m - 1 other candidates
scores 1 / m: the rule the thesis's GloVe row implies, `metrics.phrases`). SemEval-2013 5a style:
(bigram, answer) positive, (bigram, first random distractor) negative; AUC of the precision-recall curve and the
best F1 over thresholds (scikit-learn). Scores: GloVe 6B 50d Avg; MiniLM-L6 CLS / Avg; for each finished facets
model of `benchmarks.facets_lee` (the sentence models, trained on BBC News sentences; kept under --runs): Emb (the
cosine of the mean contextual encoder states of the phrase and of the word) and SC (Eq. 3.5 between their facet
sets, negated), mean ± std over seeds. Facets models (the sweep harness, shared with `benchmarks.facets_lee`): the
phrase models p10 / p1 (`genfeat run facets --preset bbc_phrases`: noun phrases of BBC News by the WordNet-lexicon
rule, targets the words within 5 tokens, K = 10 / 1), the same with a random input table of width 100
(p10-random / p1-random; the default starts from GloVe 6B 50d), and the sentence models k10 / k1 for comparison.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from benchmarks.common import mean_std, reading, render, write_results
from benchmarks.facets_lee import MODELS, PHRASE_MODELS, Vectors, facets_args, facets_job
from benchmarks.sweep import Sweep
from genfeat.analysis import facet_scores as S
from genfeat.data.wordnet import PhraseItem, phrase_items
from genfeat.metrics.phrases import choice_accuracy, pair_scores

NAME = "facets_phrases"
Scorer = Callable[[list[tuple[str, str]]], np.ndarray]  # (phrase, word) pairs -> similarities


def evaluate(items: list[PhraseItem], score: Scorer) -> dict[str, float]:
    """The four scores of Table 3.4 (`metrics.phrases`: Turney's ties split, as the thesis's GloVe row implies)."""
    pairs = [(it.bigram, w) for it in items for w in (it.answer, *it.distractors)]
    rev = [(" ".join(it.bigram.split()[::-1]), w) for it in items for w in (it.answer, *it.distractors)]
    s = score(pairs + rev)
    n = 1 + len(items[0].distractors)
    fwd, back = s[: len(pairs)].reshape(len(items), n), s[len(pairs):].reshape(len(items), n)
    semeval = pair_scores(fwd[:, 0], fwd[:, 3])  # the answer against the first random distractor
    return {"semeval_auc": semeval["auc"], "semeval_f1": semeval["f1"], "turney5": choice_accuracy(fwd),
            "turney10": choice_accuracy(fwd, back)}


def glove_scorer(vec: Vectors) -> Scorer:
    def score(pairs):
        return np.array([S.cosine(vec.of(p.split()).mean(0), vec.of([w])[0]) for p, w in pairs])
    return score


def minilm_scorers() -> dict[str, Scorer]:
    from genfeat.models.bert import bert_dir, from_pretrained, mean_pool
    from genfeat.models.bert.tokenizer import encode, load_wordpiece

    d = bert_dir("minilm-l6")
    model, _ = from_pretrained(d)
    tok = load_wordpiece(d)
    cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def embed(texts: list[str]) -> None:
        new = sorted({t for t in texts if t not in cache})
        for a in range(0, len(new), 256):
            x = encode(tok, new[a: a + 256], max_len=16)
            with torch.no_grad():
                h = model(**x).hidden
            for t, c, m in zip(new[a: a + 256], h[:, 0].numpy(), mean_pool(h, x["attention_mask"]).numpy(),
                               strict=True):
                cache[t] = (c, m)

    def scorer(which: int) -> Scorer:
        def score(pairs):
            embed([t for pr in pairs for t in pr])
            return np.array([S.cosine(cache[p][which], cache[w][which]) for p, w in pairs])
        return score
    return {"CLS (MiniLM-L6)": scorer(0), "Avg (MiniLM-L6)": scorer(1)}


def facet_scorers(run, tag: str) -> dict[str, Scorer]:
    from genfeat.data.facets import EOS, tokenize
    from genfeat.models.facets.inference import load_run, sentence_facets

    model, vocab, _, _ = load_run(run)
    ids = {w: i for i, w in enumerate(vocab)}
    emb: dict[str, np.ndarray] = {}
    fac: dict[str, np.ndarray] = {}

    def prepare(texts: list[str]) -> None:
        new = sorted({t for t in texts if t not in emb})
        for t, f in zip(new, sentence_facets(model, vocab, new), strict=True):
            x = torch.tensor([[ids.get(w, 1) for w in tokenize(t)] + [ids[EOS]]])
            with torch.no_grad():
                states, _ = model.encode(x)
            emb[t], fac[t] = states[0, :-1].mean(0).numpy(), f  # the phrase's tokens, not EOS

    def score_emb(pairs):
        prepare([t for pr in pairs for t in pr])
        return np.array([S.cosine(emb[p], emb[w]) for p, w in pairs])

    def score_sc(pairs):
        prepare([t for pr in pairs for t in pr])
        return -S.sc_distances([(fac[p], fac[w]) for p, w in pairs], iters=300, tol=1e-6, batch=512)
    return {f"Emb (Ours {tag})": score_emb, f"SC (Ours {tag})": score_sc}


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    names = list(dict.fromkeys(r["name"] for r in res["rows"]))
    keys = ("semeval_auc", "semeval_f1", "turney5", "turney10")
    lines = []
    for n in names:
        rs = [r for r in res["rows"] if r["name"] == n]
        lines.append(f"| {n} | " + " | ".join(mean_std([r[k] for r in rs], 1, 100) for k in keys) + f" | {len(rs)} |")
    return f"""# Multi-facet embeddings: phrase similarity on WordNet phrase sets (thesis C Table 3.4's analogue)

{{header}}{res['items']} Turney-style items from WordNet 3.0 nouns (split seed {res['split_seed']}); × 100, mean ± std
over the facets models' seeds. Phrase models: BBC News noun phrases (WordNet-lexicon rule), targets the words
within 5 tokens, {res.get('steps', 1500)} steps; sentence models: those of docs/results/facets.md.

| score (model) | SemEval-style AUC | SemEval-style F1 | Turney (5) | Turney (10) | seeds |
|---|---|---|---|---|---|
{chr(10).join(lines)}

Thesis (SemEval 2013 5a AUC / F1, Turney (5) / (10)): GloVe Avg 79.5 / 73.7, 25.9 / 12.9; BERT Avg 66.5 / 67.1,
43.4 / 24.3; Ours K=10 Emb 85.6 / 77.1, 49.4 / 31.8; Ours K=10 SC 80.3 / 72.8, 45.6 / 28.8; Ours K=1 Emb 87.8 / 78.6,
50.3 / 32.5. Chance: Turney (5) 20, Turney (10) 10.

{reading(NAME)}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--split-seed", type=int, default=0)
    args = facets_args(ap, ["p10", "p1", "p10-random", "p1-random", "k10", "k1"], [*PHRASE_MODELS, *MODELS])
    if args.render_only:
        print(render(NAME, markdown))
        return
    sweep = Sweep.from_args(args)
    jobs = [(m, seed, facets_job(m, seed, args.steps)) for m in args.models for seed in args.seeds]
    done = [(m, seed, job) for m, seed, job in jobs if sweep.result(job) is not None]
    if args.train_only:
        return
    vec = Vectors()
    vocab = set((sweep.path(done[0][2]) / "vocab.txt").read_text().splitlines()) if done else set(vec.index)
    items = phrase_items(seed=args.split_seed, n_items=args.items,  # every word known to every model
                         vocabulary={w for w in vocab if w in vec.index})
    rows = [{"name": "Avg (GloVe 6B 50d)", **evaluate(items, glove_scorer(vec))}]
    rows += [{"name": n, **evaluate(items, f)} for n, f in minilm_scorers().items()]
    for m, seed, job in done:
        tag = (PHRASE_MODELS[m].label if m in PHRASE_MODELS
               else "sentence model " + MODELS[m].label.removeprefix("Our a "))
        for n, f in facet_scorers(sweep.path(job), tag).items():
            rows.append({"name": n, "model": m, "seed": seed, **evaluate(items, f)})
            print(rows[-1], flush=True)
    print(write_results(NAME, {"items": len(items), "split_seed": args.split_seed, "steps": args.steps, "rows": rows},
                        markdown,
                        seeds=args.seeds, device="cpu"))


if __name__ == "__main__":
    main()
