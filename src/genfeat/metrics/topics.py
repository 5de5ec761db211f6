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
