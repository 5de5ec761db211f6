"""The max-facet recommendation losses of cold-start citation and authorship prediction (thesis C §3.4.1.2,
Eqs. 3.12-3.14, Appendix B.3-B.4; spec citation-prediction.md §4).

    S(F(T_i), a_j) = max(0, max_k a_j · p_ik)                     Eq. 3.13 (`truncate=False`: no clip at 0)
    L^S = Σ_(i,j)∈R r_ij (S(F(T_i), a_j) - y_ij)²                  Eq. 3.12: every positive pair (y = 1) with one
                                                                  negative (a random paper i', y = 0), r ∝ 1 / the
                                                                  column's number of papers, mean 1 over R
    Ω^S = γ Σ_i (p'_i · μ_i - 1)² + (p'_j(i) · μ_i)²              Eq. B.3: μ_i = the mean of paper i's un-scaled
                                                                  facets, p'_j = H Σ_w∈T_j ν/(ν + p(w)) w (Eq. B.4,
                                                                  the fixed word vectors, H trained), j(i) a random
                                                                  other paper
    joint = α L^S(authors) + β L^S(citers) + Ω^S                   Eq. 3.14, α : β : γ = 5 : 1 : 10

Gradients of S reach only the arg-max facet and the column's embedding, and nothing when the score is clipped.
Shapes: facets (B, K, d), columns (B, d) for pairs or (n, d) for every column, scores (B,) / (B, n).
"""

from __future__ import annotations

import torch
from torch import Tensor


def max_facet_score(facets: Tensor, columns: Tensor, truncate: bool = True) -> Tensor:
    """Eq. 3.13 for pairs: facets (B, K, d), columns (B, d) -> (B,)."""
    if facets.dim() != 3 or columns.shape != (facets.size(0), facets.size(2)):
        raise ValueError(f"facets (B, K, d) and columns (B, d) expected, got {tuple(facets.shape)} and "
                         f"{tuple(columns.shape)}")
    s = torch.einsum("bkd,bd->bk", facets, columns).max(1).values  # (B,) only the arg-max facet gets a gradient
    return s.clamp(min=0) if truncate else s


def max_facet_scores(facets: Tensor, table: Tensor, truncate: bool = True) -> Tensor:
    """Eq. 3.13 for every (paper, column): facets (B, K, d), table (n, d) -> (B, n)."""
    if facets.dim() != 3 or table.dim() != 2 or table.size(1) != facets.size(2):
        raise ValueError(f"facets (B, K, d) and a table (n, d) expected, got {tuple(facets.shape)} and "
                         f"{tuple(table.shape)}")
    s = torch.einsum("bkd,nd->bnk", facets, table).max(2).values  # (B, n)
    return s.clamp(min=0) if truncate else s


def inverse_frequency_weights(columns: Tensor, n_columns: int) -> Tensor:
    """r of Eq. 3.12 for positive pairs given by their column ids (P,): 1 / the column's number of pairs, scaled
    to mean exactly 1 over the pairs (a negative takes its positive's weight, so the mean over R is 1 too)."""
    count = torch.bincount(columns, minlength=n_columns).to(torch.float64)
    w = 1.0 / count[columns]
    return (w * (len(columns) / w.sum())).float()


def weighted_square_loss(scores: Tensor, targets: Tensor, weights: Tensor) -> Tensor:
    """Σ r (S - y)² over the pairs (Eq. 3.12's sum; the caller divides by its batch)."""
    return (weights * (scores - targets) ** 2).sum()


def autoencoder_regulariser(facets: Tensor, own: Tensor, other: Tensor) -> Tensor:
    """Σ over the B papers of Eq. B.3's two terms (before γ): facets (B, K, d) un-scaled; own (B, d) = H p^aw_i of
    each paper's own words, other (B, d) = H p^aw_j of its random other paper j(i) (Eq. B.4, projected)."""
    mu = facets.mean(1)  # (B, d) μ(F(T_i))
    return (((own * mu).sum(1) - 1.0) ** 2 + (other * mu).sum(1) ** 2).sum()
