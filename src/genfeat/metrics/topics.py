"""Metrics of topic options and topic-conditioned generations (thesis C §4.3.2.1, §4.3.3.1, §4.3.4; spec
interactive-generation.md §6.2-6.4 and §9 tests 10-13).

    sim(T, Ȳ)     Eq. 4.2, mean-normalised × 100: 100 / O' Σ_o max_k t_k^T e_o   (topics T (K, E) and words Ȳ
                  (O', E), unit rows; the thesis's numbers are means, not the sum Eq. 4.2 writes)
    sim_diff      sim(T, Ȳ) - sim(T, X̄): relevant to the continuation and new against the prompt X̄
    distinct_n    distinct n-grams / all n-grams over every generation of a method (Dist-1, Dist-2)
    topic_hits    Token / Word / Topic: generated tokens in the chosen topics' words, their distinct types, the
                  chosen topics with at least one word mentioned (exact string match)
    bleu2         BLEU-2 with Chen & Cherry's smoothing 3 (NLTK `SmoothingFunction().method3`); self_bleu: the
                  mean over generations of BLEU-2 against the others (Texygen)
    topic_judgements  Table 4.2's human counts of one (prompt, worker) item: L (topics judged likely), TP (that
                  promote the narrative), L&TP (both); `complement=True` reads the reference's form, where the worker
                  marks the topics that are *not* likely / *not* promoting among the K shown (spec §9 test 14);
                  `mean_se` aggregates items as mean ± standard error
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def sim(topics: np.ndarray, words: np.ndarray) -> float:
    """Eq. 4.2 (mean × 100) of unit topics (K, E) against unit word vectors (O', E); nan without words."""
    if len(words) == 0:
        return float("nan")
    return float(100.0 * (np.asarray(words) @ np.asarray(topics).T).max(1).mean())


def sim_diff(topics: np.ndarray, continuation: np.ndarray, prompt: np.ndarray) -> float:
    return sim(topics, continuation) - sim(topics, prompt)


def distinct_n(generations: Sequence[Sequence[str]], n: int) -> float:
    grams = [tuple(g[i: i + n]) for g in generations for i in range(len(g) - n + 1)]
    return len(set(grams)) / len(grams) if grams else float("nan")


def topic_hits(generation: Sequence[str], topics: Sequence[Sequence[str]]) -> dict[str, int]:
    words = {w for t in topics for w in t}
    hit = [w for w in generation if w in words]
    return {"token": len(hit), "word": len(set(hit)), "topic": sum(any(w in set(hit) for w in t) for t in topics)}


def bleu2(references: Sequence[Sequence[str]], hypothesis: Sequence[str]) -> float:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    return float(sentence_bleu([list(r) for r in references], list(hypothesis), weights=(0.5, 0.5),
                               smoothing_function=SmoothingFunction().method3))


def self_bleu(generations: Sequence[Sequence[str]]) -> float:
    if len(generations) < 2:
        raise ValueError("Self-BLEU needs at least two generations")
    return float(np.mean([bleu2([g for j, g in enumerate(generations) if j != i], h)
                          for i, h in enumerate(generations)]))


def topic_judgements(likely: Sequence[int], promoting: Sequence[int], k: int = 10, complement: bool = False
                     ) -> dict[str, int]:
    """{"L", "TP", "L&TP"} of one item: topic indices in [0, k) judged likely and promoting (or, `complement`,
    marked as not likely / not promoting)."""
    a, b = set(likely), set(promoting)
    if any(not 0 <= t < k for t in a | b):
        raise ValueError(f"topic indices must be in [0, {k})")
    if complement:
        a, b = set(range(k)) - a, set(range(k)) - b
    return {"L": len(a), "TP": len(b), "L&TP": len(a & b)}


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """(mean, standard error = sample std / sqrt(n)) over items."""
    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        raise ValueError("a standard error needs at least two items")
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v)))
