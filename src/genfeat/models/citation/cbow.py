"""The document-similarity baselines of thesis C §3.4.3.2 (Table 3.8's CBOW rows; spec citation-prediction.md §8)
and the λ-mixtures with a cold-start model.

    paper vector     v_i = Σ_w∈T_i ν / (ν + p(w)) w      SIF weights, ν = 1e-4 (Eq. B.4 without H), the fixed
                                                          word vectors (one-hot rows: bags of words)
    CBOW Avg         s(i, j) = mean of cos(v_i, v_i') over the column's training papers i'
    CBOW Max         s(i, j) = max of the same cosines
    mixture          λ s_cold + (1 - λ) s_CBOW             λ chosen on validation (the thesis: 0.2)

A column with no training paper scores 0. Scorers have the signature of `tasks.citation.ScoreFn`:
(kind, papers (n,), columns (m,)) -> (m, n).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

Scorer = Callable[[str, np.ndarray, np.ndarray], Tensor]


class CBOWScorer:
    """CBOW Avg / Max (`reduce` mean | max) over the training pairs of each kind: {kind: (P, 2) pairs}."""

    def __init__(self, paper_vectors: np.ndarray, train_pairs: dict[str, np.ndarray], reduce: str = "max"):
        if reduce not in ("mean", "max"):
            raise ValueError(f"reduce must be mean or max, got {reduce!r}")
        v = torch.as_tensor(paper_vectors, dtype=torch.float64)
        self.unit = v / v.norm(dim=1, keepdim=True).clamp_min(1e-12)
        self.pairs = {k: torch.from_numpy(p) for k, p in train_pairs.items()}
        self.reduce = reduce

    def __call__(self, kind: str, papers: np.ndarray, columns: np.ndarray, chunk: int = 4096) -> Tensor:
        pairs, cols = self.pairs[kind], torch.from_numpy(columns)
        if len(cols) > 1 and not bool((cols[1:] > cols[:-1]).all()):
            raise ValueError("columns must be ascending")
        sub = pairs[torch.isin(pairs[:, 1], cols)]  # the queried columns' training papers
        where = torch.searchsorted(cols, sub[:, 1].contiguous())  # (P,) the column's row
        query = self.unit[torch.from_numpy(papers)]  # (n, d)
        n, m = len(papers), len(cols)
        if self.reduce == "mean":  # the mean cosine is the cosine with the mean of the unit vectors
            total = torch.zeros(m, query.size(1), dtype=query.dtype).index_add_(0, where, self.unit[sub[:, 0]])
            return (query @ total.T / torch.bincount(where, minlength=m).clamp_min(1)).T
        best = torch.full((n, m), -torch.inf, dtype=query.dtype)
        for a in range(0, len(sub), chunk):  # (n, chunk) cosines at a time: a team's thousands of papers fit
            cos = query @ self.unit[sub[a: a + chunk, 0]].T
            best.scatter_reduce_(1, where[a: a + chunk][None].expand(n, -1), cos, "amax")
        return torch.where(torch.isinf(best), 0.0, best).T


def mix(cold: Tensor, doc: Tensor, lam: float) -> Tensor:
    """λ cold + (1 - λ) doc, elementwise (in float64)."""
    return lam * cold.double() + (1 - lam) * doc.double()


def mixture(cold: Scorer, doc: Scorer, lam: float) -> Scorer:
    """The scorer of `mix`."""
    return lambda kind, papers, columns: mix(cold(kind, papers, columns), doc(kind, papers, columns), lam)
