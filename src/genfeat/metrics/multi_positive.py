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
below every irrelevant candidate with its score, so a constant scorer gains nothing), "optimistic", or "average"
(scikit-learn's rules, the thesis's citation evaluation, whose truncated scores tie at 0 for many papers: AP takes
each group of equal scores as one threshold, `average_precision_score`; NDCG gives a tied group the mean discount
of the positions it spans, McSherry & Najork 2008, `ndcg_score`; R@k and NDCG@k count the expected hits of a
random order inside a group cut by k; MRR is not defined there and left out). Under the first two, ties among
relevant candidates change no metric. AUC always counts a tie as one half. With one relevant candidate a query's
rank is `metrics.ranking.target_ranks`'s, which is built on `relevant_positions`.

Queries without a relevant candidate get NaN (and AUC NaN without an irrelevant one); `tasks.ranking.RankingTask`
averages each metric over the queries where it is defined, unweighted (the thesis's averages over test columns).
Vectorised: one sort of the irrelevant scores per query and a binary search per relevant one, O(n log n).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

POSITION_TIES = ("pessimistic", "optimistic")  # the rules that give each relevant candidate one position
TIES = (*POSITION_TIES, "average")


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
    cand, s = _check(scores, relevant, candidates)
    return _positions(s, relevant.bool() & cand, ~relevant.bool() & cand, ties)


def _positions(s: Tensor, rel: Tensor, irr: Tensor, ties: str) -> tuple[Tensor, Tensor, Tensor]:
    if ties not in POSITION_TIES:
        raise ValueError(f"ties must be one of {', '.join(POSITION_TIES)}, got {ties!r}")
    irr_sorted = torch.where(irr, s, torch.full_like(s, -math.inf)).sort(dim=1).values  # (B, n), pads first
    rel_scores = torch.where(rel, s, torch.full_like(s, -math.inf)).sort(dim=1, descending=True).values  # (B, n)
    pads = (~irr).sum(1, keepdim=True)  # the -inf slots at the front of each sorted row
    le = torch.searchsorted(irr_sorted, rel_scores, right=True) - pads  # irrelevant <= the score
    lt = torch.searchsorted(irr_sorted, rel_scores, right=False) - pads  # irrelevant < the score
    above, level = irr.sum(1, keepdim=True) - le, le - lt  # (B, n)
    in_r = torch.arange(s.size(1), device=s.device)[None] < rel.sum(1, keepdim=True)  # (B, n): j < R
    ahead = above + (level if ties == "pessimistic" else 0)
    pos = torch.arange(1, s.size(1) + 1, device=s.device, dtype=s.dtype)[None] + ahead.to(s.dtype)
    pos = torch.where(in_r, pos, torch.full_like(pos, math.inf))
    return pos, torch.where(in_r, above, 0), torch.where(in_r, level, 0)


def multi_positive_metrics(scores: Tensor, relevant: Tensor, candidates: Tensor | None = None,
                           ks: tuple[int, ...] = (), ties: str = "pessimistic") -> dict[str, Tensor]:
    """Per-query metrics (B,) of the module docstring: ap, ndcg, mrr, auc and, for each k in `ks`, ndcg@k, r@k,
    rcap@k and mrr@k (MRR counting only a first hit within the top k); NaN where undefined."""
    if any(k < 1 for k in ks):
        raise ValueError(f"every k must be >= 1, got {ks}")
    if ties not in TIES:
        raise ValueError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
    cand, s = _check(scores, relevant, candidates)
    rel, irr = relevant.bool() & cand, ~relevant.bool() & cand
    if ties == "average":
        return _average_tie_metrics(s, rel, irr, ks)
    pos, above, level = _positions(s, rel, irr, ties)
    dt = pos.dtype
    n_rel, n_irr = rel.sum(1), irr.sum(1).to(dt)  # (B,)
    has_rel = n_rel > 0  # a query without positives: every metric NaN

    def defined(x: Tensor, also: Tensor | bool = True) -> Tensor:
        return torch.where(has_rel & also, x, math.nan)

    found = torch.isfinite(pos)  # (B, n): the first R slots
    j = torch.arange(1, pos.size(1) + 1, device=pos.device, dtype=dt)[None]  # (1, n)
    disc = torch.where(found, 1.0 / torch.log2(pos + 1.0), 0.0)
    ideal = torch.cumsum(1.0 / torch.log2(j[0] + 1.0), 0)  # (n,): the IDCG of the first m relevant, m = 1..n
    r = n_rel.clamp(min=1).to(dt)
    out = {"ap": defined(torch.where(found, j / pos, 0.0).sum(1) / r),
           "ndcg": defined(disc.sum(1) / ideal[n_rel.clamp(min=1) - 1]),
           "mrr": defined(1.0 / pos[:, 0]),
           "auc": defined(torch.where(found, n_irr[:, None] - above - 0.5 * level, 0.0).sum(1)
                          / (r * n_irr.clamp(min=1)), n_irr > 0)}
    for k in ks:
        hit = found & (pos <= k)
        hits = hit.sum(1).to(dt)
        out[f"ndcg@{k}"] = defined(torch.where(hit, disc, 0.0).sum(1) / ideal[n_rel.clamp(1, k) - 1])
        out[f"r@{k}"] = defined(hits / r)
        out[f"rcap@{k}"] = defined(hits / r.clamp(max=k))
        out[f"mrr@{k}"] = defined(torch.where(pos[:, 0] <= k, 1.0 / pos[:, 0], 0.0))
    return out


def _average_tie_metrics(s: Tensor, rel: Tensor, irr: Tensor, ks: tuple[int, ...]) -> dict[str, Tensor]:
    """`ties="average"` (module docstring). The j-th relevant candidate's group of equal scores starts after
    `a` = the candidates scored strictly higher and spans `m` = those scored equal (itself included) positions."""
    _, above, level = _positions(s, rel, irr, "pessimistic")  # irrelevant strictly higher / equal, (B, n)
    dt = s.dtype
    n_rel = rel.sum(1)  # (B,)
    rel_desc = torch.where(rel, s, torch.full_like(s, -math.inf)).sort(dim=1, descending=True).values  # (B, n)
    rel_asc = rel_desc.flip(1)  # pads (-inf) first
    pads = (~rel).sum(1, keepdim=True)
    in_r = torch.arange(s.size(1), device=s.device)[None] < n_rel[:, None]  # (B, n): j < R
    rel_ge = n_rel[:, None] - (torch.searchsorted(rel_asc, rel_desc, right=False) - pads)  # relevant >= the score
    rel_gt = n_rel[:, None] - (torch.searchsorted(rel_asc, rel_desc, right=True) - pads)  # relevant > the score
    a = torch.where(in_r, above + rel_gt, 0).to(dt)
    m = torch.where(in_r, level + rel_ge - rel_gt, 1).to(dt)
    n = s.size(1)
    cum = torch.cat([torch.zeros(1, dtype=dt, device=s.device),
                     torch.cumsum(1.0 / torch.log2(torch.arange(2, n + 2, device=s.device, dtype=dt)), 0)])  # (n+1,)

    def dcg(cut: int) -> Tensor:  # (B,): the group-mean discounts over the positions <= cut
        hi, lo = (a + m).clamp(max=cut).long(), a.clamp(max=cut).long()
        return torch.where(in_r, (cum[hi] - cum[lo]) / m, 0.0).sum(1)

    r = n_rel.clamp(min=1).to(dt)
    has_rel = n_rel > 0
    n_irr = irr.sum(1).to(dt)

    def defined(x: Tensor, also: Tensor | bool = True) -> Tensor:
        return torch.where(has_rel & also, x, math.nan)

    precision = rel_ge.to(dt) / (rel_ge + above + level).clamp(min=1).to(dt)  # at the group's threshold
    out = {"ap": defined(torch.where(in_r, precision, 0.0).sum(1) / r),
           "ndcg": defined(dcg(n) / cum[n_rel.clamp(min=1)]),
           "auc": defined(torch.where(in_r, n_irr[:, None] - above - 0.5 * level, 0.0).sum(1)
                          / (r * n_irr.clamp(min=1)), n_irr > 0)}
    for k in ks:
        hits = torch.where(in_r, ((k - a) / m).clamp(0.0, 1.0), 0.0).sum(1)  # expected hits in the top k
        out[f"ndcg@{k}"] = defined(dcg(k) / cum[n_rel.clamp(1, k)])
        out[f"r@{k}"] = defined(hits / r)
        out[f"rcap@{k}"] = defined(hits / r.clamp(max=k))
    return out
