"""Classification, regression and correlation metrics, through scikit-learn and SciPy.

    accuracy                 mean(argmax = y)
    split_accuracy           {split}_acc of one prediction of every item scored on several index sets (a graph's
                             train / valid / test nodes)
    mcc                      Matthews correlation (CoLA)                       sklearn.metrics.matthews_corrcoef
    f1                       F1 of the positive class 1 (MRPC, QQP)            sklearn.metrics.f1_score
    macro_f1                 unweighted mean of the per-class F1
    pearson / spearman       correlation of a score with the gold score (STS-B, human similarity judgements)
                                                                               scipy.stats.pearsonr / spearmanr
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

# scipy.stats and sklearn.metrics are imported where they are used: they take seconds to import, and the
# registry imports this module for every genfeat command

GLUE_EXTRA = {"CoLA": "mcc", "MRPC": "f1", "QQP": "f1"}  # reported beside accuracy, as GLUE does


def split_accuracy(pred, labels: np.ndarray, split_idx: Mapping[str, np.ndarray]) -> dict[str, float]:
    """{split}_acc: the fraction of each split's items whose predicted class (`pred` over all items, (N,)) is their
    label (`labels` (N,)); NaN for an empty split."""
    pred = np.asarray(pred)
    return {f"{s}_acc": float((pred[idx] == labels[idx]).mean()) if len(idx) else float("nan")
            for s, idx in split_idx.items()}


def correlation(pred, gold) -> dict[str, float]:
    """{"pearson", "spearman"} between two 1-d arrays of scores."""
    from scipy import stats

    p, g = np.asarray(pred, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    if p.shape != g.shape or p.ndim != 1 or len(p) < 2:
        raise ValueError(f"need two 1-d score arrays of the same length >= 2, got {p.shape} and {g.shape}")
    return {"pearson": float(stats.pearsonr(p, g).statistic), "spearman": float(stats.spearmanr(p, g).statistic)}


def classification_scores(logits, labels, task: str | None = None) -> dict[str, float]:
    """Accuracy and macro-F1 of logits (N, C) against labels (N,), plus GLUE's own metric for `task` (CoLA: MCC,
    MRPC / QQP: F1); for regression outputs (N,) the Pearson and Spearman correlations."""
    from sklearn import metrics as skm

    logits, labels = np.asarray(logits), np.asarray(labels)
    if logits.ndim == 1:
        return correlation(logits, labels)
    hat = logits.argmax(-1)
    out = {"accuracy": float((hat == labels).mean()),
           "macro_f1": float(skm.f1_score(labels, hat, average="macro", zero_division=0))}
    extra = GLUE_EXTRA.get(task or "")
    if extra == "mcc":
        out["mcc"] = float(skm.matthews_corrcoef(labels, hat))
    elif extra == "f1":
        out["f1"] = float(skm.f1_score(labels, hat, pos_label=1, zero_division=0))
    return out
