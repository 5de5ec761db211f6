"""Full-ranking top-K metrics for next-item recommendation (thesis C §2.5.1; spec sequential-recommendation.md §8).

Every item is a candidate ("negative samples are all other possible items"); one relevant item per example,
so with r = the target's rank (1 = best):

    Hit@K  = 1[r <= K]        NDCG@K = 1[r <= K] / log2(r + 1)        MRR@K = 1[r <= K] / r

Vectorised over a (B, n) score matrix (`metrics.multi_positive.relevant_positions` with one relevant candidate):
r = 1 + #{x : s_x > s_y} (+ #{x != y : s_x = s_y} with
`ties="pessimistic"`, the default: a model gains nothing from ties, e.g. underflowing probabilities;
"optimistic" counts ties in the target's favour). `exclude_ids` (padding 0) never rank. History items are
*not* excluded (thesis protocol: on repeat datasets they are valid answers, and the context partition must
learn to exclude them itself); `history` + `mask_history=True` excludes them (the target itself stays).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from genfeat.metrics.multi_positive import POSITION_TIES as TIES
from genfeat.metrics.multi_positive import relevant_positions


def target_ranks(scores: Tensor, target: Tensor, exclude_ids: tuple[int, ...] = (0,), history: Tensor | None = None,
                 mask_history: bool = False, ties: str = "pessimistic") -> Tensor:
    """(B,) rank of each target among the candidates (1 = best), as float."""
    if ties not in TIES:
        raise ValueError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
    if scores.dim() != 2 or target.shape != scores.shape[:1]:
        raise ValueError(f"scores must be (B, n) and target (B,), got {tuple(scores.shape)} and {tuple(target.shape)}")
    s = scores if scores.dtype == torch.float64 else scores.float()  # no precision lost to ties
    excluded = torch.zeros_like(s, dtype=torch.bool)
    if exclude_ids:
        excluded[:, list(exclude_ids)] = True
    if mask_history:
        if history is None:
            raise ValueError("mask_history needs the history item ids")
        excluded.scatter_(1, history, True)
    rows = torch.arange(len(target), device=s.device)
    excluded[rows, target] = False
    relevant = torch.zeros_like(excluded)
    relevant[rows, target] = True
    return relevant_positions(s, relevant, ~excluded, ties)[0][:, 0].float()  # the one relevant candidate


def ranking_metrics_from_ranks(ranks: Tensor, ks: tuple[int, ...] = (10,)) -> dict[str, Tensor]:
    """Per-example hit@k, ndcg@k, mrr@k (B,) from the ranks."""
    out = {}
    for k in ks:
        hit = (ranks <= k).float()
        out[f"hit@{k}"] = hit
        out[f"ndcg@{k}"] = hit / torch.log2(ranks + 1.0)
        out[f"mrr@{k}"] = hit / ranks
    return out


def full_ranking_metrics(scores: Tensor, target: Tensor, ks: tuple[int, ...] = (10,),
                         exclude_ids: tuple[int, ...] = (0,), history: Tensor | None = None,
                         mask_history: bool = False, ties: str = "pessimistic") -> dict[str, float]:
    """Mean Hit@K, NDCG@K and MRR@K over the batch (multiply by 100 for the thesis tables)."""
    ranks = target_ranks(scores, target, exclude_ids, history, mask_history, ties)
    return {k: float(v.mean()) for k, v in ranking_metrics_from_ranks(ranks, ks).items()}


def geometric_mean(values: list[float]) -> float:
    """G-mean across datasets (Table 2.7): over per-dataset averages."""
    if not values or any(v <= 0 for v in values):
        raise ValueError("geometric mean needs positive values")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def history_mass(log_probs: Tensor, history: Tensor, pad_id: int = 0) -> Tensor:
    """(B,) probability the model gives to the distinct items of each history (a diagnostic, spec §10)."""
    in_hist = torch.zeros_like(log_probs, dtype=torch.bool).scatter_(1, history, True)
    in_hist[:, pad_id] = False
    return (log_probs.exp() * in_hist).sum(1)
