"""Ranking metrics with several relevant candidates per query, over the full candidate list (citation, co-citation
and relation ranking: thesis C §3.3–3.4, §5.3; spec citation-prediction.md §7, multi2spe.md §6).

A query has a score for each of n candidates (B, n), a relevance mask (B, n) and optionally a candidate mask
(B, n: False = not a candidate, e.g. the query itself). With the R relevant candidates at rank positions
p_1 < ... < p_R (1 = best) and N irrelevant candidates:

    AP       (1/R) Σ_j j / p_j                                       trec_eval `map`, sklearn average_precision_score
    NDCG     Σ_j 1/log2(p_j + 1) / Σ_{j<=R} 1/log2(j + 1)           trec_eval `ndcg` (binary gains), full list
    NDCG@k   the same over p_j <= k, ideal Σ_{j<=min(R,k)}           trec_eval `ndcg_cut_k`
    R@k      #{p_j <= k} / R          (plain recall, trec_eval `recall_k`, the thesis's wording)
    Rcap@k   #{p_j <= k} / min(R, k)  (the reference implementation's recall: a query with more than k positives
                                       can still reach 1)
    MRR      1 / p_1                                                 trec_eval `recip_rank`
    AUC      the fraction of (relevant, irrelevant) pairs the scores order correctly, a tie counting one half
             (sklearn roc_auc_score)

Ties between a relevant and an irrelevant candidate: `ties="pessimistic"` (the default: the relevant one ranks
below every irrelevant candidate with its score, so a constant scorer gains nothing) or "optimistic"; ties among
relevant candidates change no metric. AUC always counts a tie as one half. With one relevant candidate a query's
rank is `metrics.ranking.target_ranks`'s, which is built on `relevant_positions`.

Queries without a relevant candidate get NaN (and AUC NaN without an irrelevant one); `mean_metrics` averages
each metric over the queries where it is defined, unweighted (the thesis's averages over test columns).
Vectorised: one sort of the irrelevant scores per query and a binary search per relevant one, O(n log n).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

TIES = ("pessimistic", "optimistic")


def _check(scores: Tensor, relevant: Tensor, candidates: Tensor | None) -> tuple[Tensor, Tensor]:
    """(candidate mask, the scores in at least fp32 with -inf lifted to the lowest finite value: log-probabilities
    of 0 tie with each other and rank last)."""
    if scores.dim() != 2 or relevant.shape != scores.shape:
        raise ValueError(f"scores and relevant must both be (B, n), got {tuple(scores.shape)} and "
                         f"{tuple(relevant.shape)}")
    if candidates is not None and candidates.shape != scores.shape:
        raise ValueError(f"candidates must be (B, n) like scores, got {tuple(candidates.shape)}")
    cand = torch.ones_like(relevant, dtype=torch.bool) if candidates is None else candidates.bool()
    s = scores if scores.dtype == torch.float64 else scores.float()  # no precision lost to ties
    if torch.isnan(s[cand]).any() or (s[cand] == math.inf).any():
        raise ValueError("candidate scores must not be NaN or +inf")
    return cand, s.clamp(min=torch.finfo(s.dtype).min)


def relevant_positions(scores: Tensor, relevant: Tensor, candidates: Tensor | None = None,
                       ties: str = "pessimistic") -> tuple[Tensor, Tensor, Tensor]:
    """(positions, above, level) of the relevant candidates, each (B, n) in descending score order of the relevant
    ones and +inf / 0 past the R-th: positions p_j (1 = best), `above` the irrelevant candidates scored strictly
    higher than the j-th relevant one, `level` those scored equal to it."""
    if ties not in TIES:
        raise ValueError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
    cand, s = _check(scores, relevant, candidates)
    rel = relevant.bool() & cand
    irr = ~relevant.bool() & cand
    irr_sorted = torch.where(irr, s, torch.full_like(s, -math.inf)).sort(dim=1).values  # (B, n), pads first
    n_irr = irr.sum(1, keepdim=True)  # (B, 1)
    rel_scores = torch.where(rel, s, torch.full_like(s, -math.inf)).sort(dim=1, descending=True).values  # (B, n)
    pads = (~irr).sum(1, keepdim=True)  # the -inf slots at the front of each sorted row
    le = torch.searchsorted(irr_sorted, rel_scores, right=True) - pads  # irrelevant <= the score
    lt = torch.searchsorted(irr_sorted, rel_scores, right=False) - pads  # irrelevant < the score
    above, level = n_irr - le, le - lt  # (B, n)
    in_r = torch.arange(s.size(1), device=s.device)[None] < rel.sum(1, keepdim=True)  # (B, n): j < R
    ahead = above + (level if ties == "pessimistic" else 0)
    pos = torch.arange(1, s.size(1) + 1, device=s.device, dtype=s.dtype)[None] + ahead.to(s.dtype)
    pos = torch.where(in_r, pos, torch.full_like(pos, math.inf))
    return pos, torch.where(in_r, above, 0), torch.where(in_r, level, 0)


def multi_positive_metrics(scores: Tensor, relevant: Tensor, candidates: Tensor | None = None,
                           ks: tuple[int, ...] = (), ties: str = "pessimistic") -> dict[str, Tensor]:
    """Per-query metrics (B,) of the module docstring: ap, ndcg, mrr, auc and, for each k in `ks`, ndcg@k, r@k,
    rcap@k and mrr@k (MRR counting only a first hit within the top k); NaN where undefined."""
    cand, _ = _check(scores, relevant, candidates)
    pos, above, level = relevant_positions(scores, relevant, cand, ties)
    dt = pos.dtype
    n_rel = (relevant.bool() & cand).sum(1).to(dt)  # (B,)
    n_irr = (~relevant.bool() & cand).sum(1).to(dt)
    j = torch.arange(1, pos.size(1) + 1, device=pos.device, dtype=dt)[None]  # (1, n)
    found = torch.isfinite(pos)
    none = torch.where(n_rel > 0, n_rel, torch.full_like(n_rel, math.nan))  # NaN for a query without positives
    disc = torch.where(found, 1.0 / torch.log2(pos + 1.0), 0.0)
    ideal = torch.cumsum(1.0 / torch.log2(j + 1.0), 1)  # (1, n): IDCG of the first m relevant
    out = {"ap": torch.where(found, j / pos, 0.0).sum(1) / none,
           "ndcg": disc.sum(1) / ideal[0, (n_rel.long() - 1).clamp(min=0)] * (none / none),
           "mrr": (1.0 / pos[:, 0]) * (none / none),
           "auc": torch.where(found, n_irr[:, None] - above - 0.5 * level, 0.0).sum(1)
           / (none * torch.where(n_irr > 0, n_irr, torch.full_like(n_irr, math.nan)))}
    for k in ks:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        hit = found & (pos <= k)
        hits = hit.sum(1).to(dt)
        out[f"ndcg@{k}"] = torch.where(hit, disc, 0.0).sum(1) / ideal[0, (n_rel.clamp(max=k).long() - 1).clamp(min=0)] \
            * (none / none)
        out[f"r@{k}"] = hits / none
        out[f"rcap@{k}"] = hits / none.clamp(max=k)
        out[f"mrr@{k}"] = torch.where(pos[:, 0] <= k, 1.0 / pos[:, 0], 0.0) * (none / none)
    return out


def mean_metrics(per_query: dict[str, Tensor]) -> dict[str, float]:
    """Each metric averaged over the queries where it is defined (not NaN), unweighted; NaN if none is."""
    return {k: float(v[~torch.isnan(v)].mean()) if (~torch.isnan(v)).any() else math.nan
            for k, v in per_query.items()}
