"""Phrase-similarity metrics (thesis C §3.2.2.5, Table 3.4; spec multi-facet-embedding.md §7.4).

    choice_accuracy    Turney (2012): per item, the answer (column 0) against its distractors, and with
                       Turney (10) also against the reversed bigram's pairs; accuracy in [0, 1] with ties split:
                       an item whose answer shares the top score with m - 1 other candidates gets 1 / m (what a
                       random tie-break gives in expectation). The thesis's own GloVe row implies this rule: an
                       average of two word vectors always ties with its reversal, and its Turney (10) of 12.9 is
                       half its Turney (5) of 25.9.
    pair_scores        SemEval-2013 5(a) style: similar pairs (label 1) against dissimilar ones (0); the area
                       under the precision-recall curve (average precision) and the best F1 over thresholds
                       (scikit-learn)
"""

from __future__ import annotations

import numpy as np

TIE_TOL = 1e-12  # relative: scores this close to the top score tie with it


def choice_accuracy(scores, reversed_scores=None) -> float:
    """scores (n, C): column 0 the answer, the others its distractors; reversed_scores (n, C'): further
    candidates (Turney (10): the reversed bigram against the same C words) or None. Ties split (module
    docstring)."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 2 or s.shape[1] < 2:
        raise ValueError(f"scores must be (items, candidates >= 2), got shape {s.shape}")
    if reversed_scores is not None:
        r = np.asarray(reversed_scores, dtype=np.float64)
        if r.ndim != 2 or r.shape[0] != s.shape[0]:
            raise ValueError(f"reversed scores {r.shape} do not match scores {s.shape}")
        s = np.concatenate([s, r], 1)
    top = s.max(1, keepdims=True)
    tied = s >= top - TIE_TOL * np.maximum(1.0, np.abs(top))  # (n, C + C')
    return float(np.mean(np.where(tied[:, 0], 1.0 / tied.sum(1), 0.0)))


def pair_scores(positive, negative) -> dict[str, float]:
    """{"auc": average precision, "f1": best F1 over thresholds} of similarity scores of similar (positive) and
    dissimilar (negative) pairs."""
    from sklearn.metrics import average_precision_score, precision_recall_curve

    pos, neg = np.asarray(positive, dtype=np.float64), np.asarray(negative, dtype=np.float64)
    if pos.ndim != 1 or neg.ndim != 1 or not len(pos) or not len(neg):
        raise ValueError("need non-empty 1-d arrays of positive and negative scores")
    y, x = np.r_[np.ones(len(pos)), np.zeros(len(neg))], np.r_[pos, neg]
    p, r, _ = precision_recall_curve(y, x)
    f1 = np.where(p + r > 0, 2 * p * r / np.maximum(p + r, 1e-12), 0.0)
    return {"auc": float(average_precision_score(y, x)), "f1": float(f1.max())}
