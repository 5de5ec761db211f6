"""Negative log-likelihood over a `HeadOutput`, whether it holds logits or log-probabilities."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from genfeat.heads.base import HeadOutput, upcast


def nll(out: HeadOutput, targets: Tensor, ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """-log p(target). scores (..., V), targets (...). Computed in (at least) fp32 for stability under AMP.

    reduction: "mean" over non-ignored targets, "sum", or "none" (same shape as targets).
    """
    if out.target_log_probs is not None:
        valid = targets != ignore_index
        loss = torch.where(valid, -upcast(out.target_log_probs), 0.0)
        if reduction == "none":
            return loss
        return loss.sum() if reduction == "sum" else loss.sum() / valid.sum().clamp(min=1)
    scores = upcast(out.scores).reshape(-1, out.scores.size(-1))  # (N, V)
    flat = targets.reshape(-1)  # (N,)
    if out.is_log_prob:
        loss = F.nll_loss(scores, flat, ignore_index=ignore_index, reduction=reduction)
    else:
        loss = F.cross_entropy(scores, flat, ignore_index=ignore_index, reduction=reduction)
    return loss.view(targets.shape) if reduction == "none" else loss
