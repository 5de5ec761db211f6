"""Candidate answers from unlabelled text and their subsampling to a target answer-type distribution (thesis Y
§3.2.5; spec gdan.md §4.1): `subsample_answers` keeps `k` candidates of a paragraph so that their types follow
`type_freq` (the labelled set's, or SQuAD's).

Each candidate of type t is drawn with probability ∝ type_freq[t] / (the paragraph's number of candidates of
type t), without replacement, so a paragraph's draws follow type_freq over the types it has; types of frequency 0
are never drawn.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

SQUAD_TYPES = {"date": 0.089, "other_numeric": 0.109, "person": 0.129, "location": 0.044, "other_entity": 0.153,
               "common_noun_phrase": 0.318, "adjective_phrase": 0.039, "verb_phrase": 0.055, "clause": 0.037,
               "other": 0.027}  # Rajpurkar et al. 2016, Table 2


def type_distribution(types: Sequence[str]) -> dict[str, float]:
    counts = Counter(types)
    return {t: c / len(types) for t, c in counts.items()}


def subsample_answers(candidates: Sequence[tuple[tuple[int, int], str]], type_freq: Mapping[str, float], k: int,
                      rng: np.random.Generator) -> list[tuple[tuple[int, int], str]]:
    """candidates: ((start, end), type) of one paragraph -> at most k of them, in paragraph order."""
    n_type = Counter(t for _, t in candidates)
    w = np.array([type_freq.get(t, 0.0) / n_type[t] for _, t in candidates], dtype=float)
    if not len(candidates) or w.sum() <= 0:
        return []
    n = min(k, int((w > 0).sum()))
    pick = rng.choice(len(candidates), n, replace=False, p=w / w.sum())
    return [candidates[i] for i in sorted(pick)]
