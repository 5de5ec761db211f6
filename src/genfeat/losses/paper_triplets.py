"""Multi²SPE's citation-triplet objective (thesis C §5.3.1.2, Eqs. 5.6-5.7; spec multi2spe.md §4) and SPECTER's
margin loss.

    S(A, B) = λ max_{i,j} c_i^A · c_j^B + (1 - λ) (Σ_k c_k^A) · (Σ_k c_k^B)          Eq. 5.7, raw dot products
    L       = softplus(S(Q, -) - S(Q, +))                                            Eq. 5.6, one negative each

`lambda_mode`: "logit" mixes inside S as Eq. 5.7 writes (the thesis); "loss" mixes two losses, (1 - λ)
softplus(s_sum^- - s_sum^+) + λ softplus(s_max^- - s_max^+) (the public code's 0.9 / 0.1 `loss_config`); the two
agree at λ = 0 and 1 only. `specter_margin`: max(0, ||q - p|| - ||q - n|| + margin) on the summed embeddings (the
SPECTER paper's loss, margin 1). Shapes: facets (B, K, D) -> (B,) similarities; losses are batch means.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

LAMBDA_MODES = ("logit", "loss")


def best_pair(ca: Tensor, cb: Tensor) -> Tensor:
    """max_{i,j} c_i^A · c_j^B over the K² facet pairs, (B,)."""
    return torch.einsum("bkd,bld->bkl", ca, cb).flatten(1).max(1).values


def sum_dot(ca: Tensor, cb: Tensor) -> Tensor:
    """(Σ_k c_k^A) · (Σ_k c_k^B), (B,)."""
    return (ca.sum(1) * cb.sum(1)).sum(-1)


def pair_similarity(ca: Tensor, cb: Tensor, lam: float) -> Tensor:
    """Eq. 5.7, (B,)."""
    return lam * best_pair(ca, cb) + (1 - lam) * sum_dot(ca, cb)


def triplet_loss(cq: Tensor, cp: Tensor, cn: Tensor, lam: float = 0.1, lambda_mode: str = "logit") -> Tensor:
    """Eq. 5.6 over a batch of (query, cited, not-cited) facet embeddings (B, K, D) each; a scalar."""
    if lambda_mode == "logit":
        return F.softplus(pair_similarity(cq, cn, lam) - pair_similarity(cq, cp, lam)).mean()
    if lambda_mode == "loss":
        s = F.softplus(sum_dot(cq, cn) - sum_dot(cq, cp)).mean()
        m = F.softplus(best_pair(cq, cn) - best_pair(cq, cp)).mean()
        return (1 - lam) * s + lam * m
    raise ValueError(f"lambda_mode must be one of {', '.join(LAMBDA_MODES)}, got {lambda_mode!r}")


def specter_margin(q: Tensor, p: Tensor, n: Tensor, margin: float = 1.0) -> Tensor:
    """SPECTER's triplet loss on paper embeddings (B, D): mean of max(0, ||q - p||_2 - ||q - n||_2 + margin)."""
    return F.relu((q - p).norm(dim=-1) - (q - n).norm(dim=-1) + margin).mean()
