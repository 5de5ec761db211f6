"""Calibration and uncertainty (thesis C App. D.1.3, Eqs. D.1-D.2; spec multi-cls-bert.md §7).

    ECE (Eq. D.1)          Σ_j |B_j| / N · |acc(j) - conf(j)| over 10 confidence bins, in percent; bins of equal
                           width on [0, 1] (Guo et al. 2017, the default) or of equal count (`bins="count"`: between
                           the confidence deciles, tied confidences in one bin)
    variance_score         u(x) = mean_l Var_m P_m(y = l | x) over the members m of an ensemble (seeds, dropout
                           draws, or a Multi-CLS model's facets), population variance
    least_confidence       u(x) = 1 - max_y P(y | x)
    facet_distributions    P(y = l | x, k) = softmax_l(q_{l,k} · e_k(x)) with q_{l,k} the mean facet-k embedding
                           of the examples of class l (Eq. D.2)
    top_overlap            |Top20%(u_A) ∩ Top20%(u_B)| / (0.2 N), in percent (Table 5.4; chance ≈ 20)
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor


def ece(probs, labels, n_bins: int = 10, bins: str = "width") -> float:
    """Expected calibration error in percent of probabilities (N, C) against labels (N,)."""
    p, y = np.asarray(probs, dtype=np.float64), np.asarray(labels)
    conf, correct = p.max(1), (p.argmax(1) == y).astype(np.float64)
    n = len(conf)
    if bins == "width":
        idx = np.minimum((conf * n_bins).astype(np.int64), n_bins - 1)  # [0, 0.1), ..., [0.9, 1.0]
        groups = [idx == j for j in range(n_bins)]
    elif bins == "count":  # quantile edges: ties share a bin (all equal confidences: one bin)
        edges = np.quantile(conf, np.linspace(0, 1, n_bins + 1))[1:-1]
        idx = np.searchsorted(edges, conf, side="right")
        groups = [idx == j for j in range(n_bins)]
    else:
        raise ValueError(f"bins must be 'width' or 'count', got {bins!r}")
    return float(100 * sum(g.sum() / n * abs(correct[g].mean() - conf[g].mean()) for g in groups if g.any()))


def variance_score(member_probs: Tensor) -> Tensor:
    """(M, N, C) probabilities of M members -> u (N,): the variance over members, averaged over classes."""
    return member_probs.var(0, unbiased=False).mean(-1)


def least_confidence(probs: Tensor) -> Tensor:
    return 1 - probs.max(-1).values


def facet_distributions(emb: Tensor, labels: Tensor, n_classes: int, proto_emb: Tensor | None = None,
                        proto_labels: Tensor | None = None) -> Tensor:
    """emb (N, K, D) facet embeddings -> P(y | x, k) (K, N, C); the class prototypes are the mean embeddings per
    gold class of `proto_emb` / `proto_labels` (default: the analysed set itself, as Eq. D.2 reads)."""
    pe = emb if proto_emb is None else proto_emb
    pl = labels if proto_labels is None else proto_labels
    onehot = torch.nn.functional.one_hot(pl, n_classes).to(pe.dtype)  # (N', C)
    protos = torch.einsum("nc,nkd->ckd", onehot, pe) / onehot.sum(0).clamp_min(1)[:, None, None]  # (C, K, D)
    return torch.softmax(torch.einsum("nkd,ckd->knc", emb, protos), -1)


def top_overlap(u_a, u_b, share: float = 0.2) -> float:
    """Overlap in percent of the `share` most uncertain examples under two scores."""
    a, b = np.asarray(u_a), np.asarray(u_b)
    if a.shape != b.shape:
        raise ValueError(f"score arrays differ in shape: {a.shape} vs {b.shape}")
    m = max(1, int(round(share * len(a))))
    top_a, top_b = set(np.argsort(-a, kind="stable")[:m]), set(np.argsort(-b, kind="stable")[:m])
    return 100 * len(top_a & top_b) / m
