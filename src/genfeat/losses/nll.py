"""Negative log-likelihood over a `HeadOutput`, whether it holds logits or log-probabilities."""

from __future__ import annotations

import torch
from torch import Tensor

from genfeat.heads.base import HeadOutput, target_log_softmax, upcast


def nll(out: HeadOutput, targets: Tensor, ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """-log p(target). scores (..., V), targets (...). Computed in (at least) fp32 for stability under AMP.

    reduction: "mean" over non-ignored targets, "sum", or "none" (same shape as targets).
    Scores and targets that do not align (a model called on all T tokens, targets the T - 1 next ones) raise a
    ValueError naming both shapes: a reshape would otherwise pair scores with the wrong targets silently.
    """
    check_aligned(out, targets)
    valid = targets != ignore_index
    if out.target_log_probs is not None:
        lp = out.target_log_probs
    else:
        scores = upcast(out.scores).reshape(-1, out.scores.size(-1))  # (N, V)
        safe = torch.where(valid, targets, 0).reshape(-1)  # (N,)
        if out.is_log_prob:
            lp = scores.gather(-1, safe[:, None]).squeeze(-1)
        else:
            lp = target_log_softmax(scores, safe)
        lp = lp.view(targets.shape)
    loss = torch.where(valid, -upcast(lp), 0.0)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction != "mean":
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    return loss.sum() / valid.sum().clamp(min=1)


def check_aligned(out: HeadOutput, targets: Tensor) -> None:
    """Raise ValueError unless `out` scores exactly the positions of `targets`: scores (*targets.shape, V) or
    target_log_probs targets.shape."""
    if out.target_log_probs is not None:
        what, shape, positions = "target log-probabilities", out.target_log_probs.shape, out.target_log_probs.shape
    elif out.scores is not None:
        what, shape, positions = "scores", out.scores.shape, out.scores.shape[:-1]
    else:
        raise ValueError("the HeadOutput holds neither scores nor target log-probabilities")
    if positions != targets.shape:
        raise ValueError(f"{what} of shape {tuple(shape)} do not align with targets of shape {tuple(targets.shape)}: "
                         f"the model scores positions {tuple(positions)}; call it on input_ids[:, :-1] with targets "
                         "input_ids[:, 1:]")
