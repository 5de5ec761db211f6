"""Facet-coverage scores between two rows of multi-facet universal schema (thesis C §3.3.1.3, Eqs. 3.10-3.11,
Figure 3.6; spec multi-facet-universal-schema.md §6): facet norms are ignored (cosines of unit facets).

    Asym(i -> j) = 1/K_j Σ_m max_k cos(s_ik, s_jm)      Eq. 3.10: every facet of j matched by some facet of i;
                                                        the mean runs over the SECOND argument's facets, the max
                                                        over the first's
    Sim(i, j)    = ½ [Asym(i -> j) + Asym(j -> i)]       Eq. 3.11: pattern vs KB relation in relation extraction
    Diff(i, j)   = Asym(i -> j) - Asym(j -> i)           "OursDiff": > 0 says i is the premise (the more
                                                        specific pattern); 0 for every pair when K = 1

Shapes: a (B, K_a, d), b (B, K_b, d) with masks (B, K_a), (B, K_b) (True = a real facet) -> (B,); the `_matrix`
forms score every row of a (n, K_a, d) against every row of b (m, K_b, d) -> (n, m).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def _cosines(a: Tensor, b: Tensor, pattern: str) -> Tensor:
    return torch.einsum(pattern, F.normalize(a, dim=-1), F.normalize(b, dim=-1))


def _coverage(cos: Tensor, mask_a: Tensor | None, mask_b: Tensor | None) -> Tensor:
    """cos (..., K_a, K_b) -> the mean over b's real facets of the max over a's real facets."""
    if mask_a is not None:
        cos = cos.masked_fill(~mask_a[..., :, None], float("-inf"))
    best = cos.max(-2).values  # (..., K_b)
    if mask_b is None:
        return best.mean(-1)
    m = mask_b.to(best.dtype)
    return (best.masked_fill(~mask_b, 0.0) * m).sum(-1) / m.sum(-1)


def asym(a: Tensor, b: Tensor, mask_a: Tensor | None = None, mask_b: Tensor | None = None) -> Tensor:
    """Eq. 3.10, Asym(a -> b), for B pairs of rows."""
    return _coverage(_cosines(a, b, "bkd,bmd->bkm"), mask_a, mask_b)


def sim(a: Tensor, b: Tensor, mask_a: Tensor | None = None, mask_b: Tensor | None = None) -> Tensor:
    """Eq. 3.11."""
    return 0.5 * (asym(a, b, mask_a, mask_b) + asym(b, a, mask_b, mask_a))


def direction(a: Tensor, b: Tensor, mask_a: Tensor | None = None, mask_b: Tensor | None = None) -> Tensor:
    """OursDiff: Asym(a -> b) - Asym(b -> a); > 0 predicts a as the premise."""
    return asym(a, b, mask_a, mask_b) - asym(b, a, mask_b, mask_a)


def asym_matrix(a: Tensor, b: Tensor, mask_a: Tensor | None = None, mask_b: Tensor | None = None) -> Tensor:
    """Asym(a_i -> b_j) for every i, j: (n, m)."""
    cos = _cosines(a, b, "nkd,mjd->nmkj")  # (n, m, K_a, K_b)
    ma = None if mask_a is None else mask_a[:, None, :].expand(-1, b.size(0), -1)
    mb = None if mask_b is None else mask_b[None].expand(a.size(0), -1, -1)
    return _coverage(cos, ma, mb)


def sim_matrix(a: Tensor, b: Tensor, mask_a: Tensor | None = None, mask_b: Tensor | None = None) -> Tensor:
    """Eq. 3.11 for every i, j: (n, m)."""
    return 0.5 * (asym_matrix(a, b, mask_a, mask_b) + asym_matrix(b, a, mask_b, mask_a).T)
