"""Similarity as a task: how well a model's similarity scores of pairs correlate with human judgements (STS-B,
the Lee et al. document pairs, WordSim353, SimLex-999), overall and on the half of the pairs with the lowest gold
scores ("low": the first floor(n / 2) of a stable ascending sort of the split's own gold scores, thesis C Table
3.2's STSB-Low as the reference code cuts it).

The model is any callable `scorer(pairs) -> scores (N,)` over the split's pairs (whatever a pair is for that
model: two token lists, two document ids); the task holds the pairs and the gold scores. Evaluation only
(unsupervised similarity): `train_rows` is None.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from genfeat.metrics.classification import correlation
from genfeat.tasks.base import Task


def low_half(gold) -> np.ndarray:
    """Indices of the floor(n / 2) lowest gold scores (stable ascending sort)."""
    return np.argsort(np.asarray(gold), kind="stable")[: len(gold) // 2]


class Similarity(Task):
    metric = "spearman"

    def __init__(self, data: Mapping[str, tuple[Sequence[Any], Sequence[float]]], low: bool = True):
        """data: {split: (pairs, gold scores)}; `low` also scores the low half of the pairs (`low_half`)."""
        self.data = {k: (list(p), np.asarray(g, dtype=np.float64)) for k, (p, g) in data.items()}
        for k, (p, g) in self.data.items():
            if len(p) != len(g) or len(p) < 2:
                raise ValueError(f"split {k}: {len(p)} pairs and {len(g)} gold scores (need equal numbers >= 2)")
        self.splits, self.low = tuple(self.data), low

    def predict(self, model: Callable[[list], Any], split: str) -> np.ndarray:
        scores = np.asarray(model(self.data[split][0]), dtype=np.float64)
        if scores.shape != (len(self.data[split][0]),):
            raise ValueError(f"the scorer returned shape {scores.shape} for {len(self.data[split][0])} pairs")
        return scores

    def score(self, pred: np.ndarray, split: str) -> dict[str, float]:
        gold = self.data[split][1]
        out = correlation(pred, gold)
        if self.low and len(gold) >= 4:
            below = low_half(gold)
            out |= {f"low_{k}": v for k, v in correlation(pred[below], gold[below]).items()}
        return out
