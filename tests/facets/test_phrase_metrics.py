"""Phrase-similarity metrics (thesis C Table 3.4; `metrics.phrases`): Turney's choice accuracy with split ties and
the SemEval-style precision-recall scores, against values worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from genfeat.metrics.phrases import choice_accuracy, pair_scores


def test_choice_accuracy_splits_ties():
    scores = [[1.0, 0.5, 0.2], [0.3, 0.3, 0.1], [0.2, 0.5, 0.1], [0.4, 0.4, 0.4]]
    assert choice_accuracy(scores) == pytest.approx((1 + 1 / 2 + 0 + 1 / 3) / 4)
    rev = [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.5, 0.0, 0.0]]
    assert choice_accuracy(scores, rev) == pytest.approx((1 / 2 + 1 / 2 + 0 + 0) / 4)
    with pytest.raises(ValueError, match="do not match"):
        choice_accuracy(scores, rev[:2])


def test_an_order_free_score_gets_half_of_turney_5_in_turney_10():
    """The average of two word vectors equals the average of the reversed pair, so every item it gets right in
    Turney (5) ties with the reversed bigram: half credit (the thesis's GloVe Avg: 25.9 / 12.9)."""
    rng = np.random.default_rng(0)
    vec = rng.standard_normal((30, 8))

    def cos(a, b):
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    fwd, back = [], []
    for _ in range(40):
        m, h, *cands = rng.choice(30, 7, replace=False)
        fwd.append([cos((vec[m] + vec[h]) / 2, vec[c]) for c in cands])
        back.append([cos((vec[h] + vec[m]) / 2, vec[c]) for c in cands])
    t5, t10 = choice_accuracy(fwd), choice_accuracy(fwd, back)
    assert t5 > 0 and t10 == pytest.approx(t5 / 2)


def test_pair_scores_by_hand():
    # ranked: 0.9 (+), 0.5 (-), 0.4 (+), 0.1 (-): AP = 1/2 * 1 + 1/2 * 2/3; best F1 at 0.4: P 2/3, R 1 -> 0.8
    got = pair_scores([0.9, 0.4], [0.5, 0.1])
    assert got["auc"] == pytest.approx(0.5 + 1 / 3) and got["f1"] == pytest.approx(0.8)
    assert pair_scores([0.9, 0.8], [0.1, 0.2]) == {"auc": 1.0, "f1": 1.0}
