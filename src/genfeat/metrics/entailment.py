"""Pattern-entailment metrics (thesis C §3.3.2.2, Table 3.7; Shwartz et al. 2017's hypernymy practice; spec
multi-facet-universal-schema.md §8, §11.10).

    ap          average precision over every pair (AP@all) of a score against "is an entailment" (`>` or `<`),
                scikit-learn's `average_precision_score` (tied scores: one threshold)
    micro       direction accuracy over the entailment pairs: `>` is right when diff > 0 (the original is the
                premise), `<` when diff < 0; diff = 0 counts ½
    macro       the mean over groups (the inserted hypernym, `EntailmentPair.inserted`) of each group's accuracy

Inputs: numpy arrays over the pairs (labels as strings); non-entailment pairs are left out of the directions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.metrics import average_precision_score


def direction_correct(diff: np.ndarray, labels: Sequence[str]) -> np.ndarray:
    """Per entailment pair, 1 / 0 / ½ (a tie); NaN for the others."""
    diff, labels = np.asarray(diff, dtype=np.float64), np.asarray(labels)
    sign = np.where(labels == ">", 1.0, np.where(labels == "<", -1.0, np.nan))
    return np.where(np.isnan(sign), np.nan, np.where(diff == 0, 0.5, (diff * sign > 0).astype(np.float64)))


def entailment_metrics(score: np.ndarray, diff: np.ndarray, labels: Sequence[str],
                       groups: Sequence[tuple[str, ...]]) -> dict[str, float]:
    """{"ap", "micro", "macro"}: `score` ranks entailment against the rest, `diff` > 0 says the original is the
    premise; `groups` keys the macro average."""
    labels = np.asarray(labels)
    y = np.isin(labels, (">", "<"))
    if not y.any():
        raise ValueError("no entailment pair (> or <) to evaluate")
    right = direction_correct(diff, labels)
    by: dict[tuple[str, ...], list[float]] = {}
    for g, r in zip(groups, right, strict=True):
        if not np.isnan(r):
            by.setdefault(tuple(g), []).append(r)
    return {"ap": float(average_precision_score(y, np.asarray(score, dtype=np.float64))),
            "micro": float(np.nanmean(right)), "macro": float(np.mean([np.mean(v) for v in by.values()]))}
