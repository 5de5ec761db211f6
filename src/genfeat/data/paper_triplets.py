"""Training triplets and ranking queries from a citation graph (thesis C §5.3.2-5.3.3, App. D.2; spec
multi2spe.md §5-§6): what SPECTER's sampler and the Multi-SciDocs builders do, on any graph given as each paper's
cited ids.

    specter_triplets   per training query, up to `per_query` (5) triplets (query, cited, not cited): positives its
                       direct citations; negatives hard with probability `hard_fraction` (0.3: a paper cited by one
                       of its positives but not by it, SPECTER's citations of citations) else easy (a random paper
                       it does not cite); triplets touching an `exclude`d paper (test queries and their candidates)
                       are not drawn
    cite_queries       per test query: up to `n_pos` (5) of its citations (sampled without replacement when more)
                       and `n_neg` (500, SciDocs: 25 in its original tasks) random papers it does not cite (from
                       `pool` when given: an evaluation set of papers kept out of training)
    cocite_queries     as cite_queries with co-citations as positives: for each paper citing the query, every other
                       paper it cites, most often co-cited first, the threshold lowered until `n_pos` are found, then
                       `n_pos` sampled (the builders' `--max_num_positives`); queries without one are skipped

Shapes: triplets (M, 3) paper ids; queries (ids (Q,), positives list of arrays, candidates list of arrays: the
positives then the negatives).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class RankingQueries:
    queries: np.ndarray  # (Q,) paper ids
    positives: list[np.ndarray]
    candidates: list[np.ndarray]  # each query's positives, then its negatives

    def __len__(self) -> int:
        return len(self.queries)

    def papers(self) -> np.ndarray:
        """Every paper these queries read: the queries and all their candidates."""
        return np.unique(np.concatenate([self.queries, *self.candidates]))


def specter_triplets(cites: Sequence[np.ndarray], queries: np.ndarray, n_papers: int, rng: np.random.Generator,
                     per_query: int = 5, hard_fraction: float = 0.3, exclude: np.ndarray | None = None
                     ) -> np.ndarray:
    """(M, 3) triplets (module docstring)."""
    banned = np.zeros(n_papers, bool)
    if exclude is not None:
        banned[np.asarray(exclude, dtype=np.int64)] = True
    out = []
    for q in queries:
        q = int(q)
        if banned[q]:
            continue
        cited = set(cites[q].tolist())
        pos = [p for p in cites[q].tolist() if not banned[p]]
        if not pos:
            continue
        for _ in range(per_query):
            p = int(rng.choice(pos))
            neg = None
            if rng.random() < hard_fraction:
                hard = [n for n in cites[p].tolist() if n not in cited and n != q and not banned[n]]
                if hard:
                    neg = int(rng.choice(hard))
            for _ in range(100):
                if neg is not None:
                    break
                n = int(rng.integers(n_papers))
                if n != q and n not in cited and not banned[n]:
                    neg = n
            if neg is not None:
                out.append((q, p, neg))
    return np.asarray(out, dtype=np.int64).reshape(-1, 3)


def _negatives(q: int, not_neg: set[int], n_papers: int, n_neg: int, rng: np.random.Generator,
               pool: np.ndarray | None = None) -> np.ndarray:
    base = np.arange(n_papers) if pool is None else pool
    allowed = np.setdiff1d(base, np.fromiter(not_neg | {q}, dtype=np.int64))
    return rng.choice(allowed, min(n_neg, len(allowed)), replace=False)


def cite_queries(cites: Sequence[np.ndarray], queries: np.ndarray, n_papers: int, rng: np.random.Generator,
                 n_pos: int = 5, n_neg: int = 500, pool: np.ndarray | None = None) -> RankingQueries:
    qs, pos, cand = [], [], []
    for q in queries:
        q = int(q)
        c = cites[q]
        if not len(c):
            continue
        p = rng.choice(c, n_pos, replace=False) if len(c) > n_pos else c.copy()
        qs.append(q)
        pos.append(np.sort(p))
        cand.append(np.concatenate([pos[-1], _negatives(q, set(c.tolist()), n_papers, n_neg, rng, pool)]))
    return RankingQueries(np.asarray(qs, dtype=np.int64), pos, cand)


def cocite_queries(cites: Sequence[np.ndarray], queries: np.ndarray, n_papers: int, rng: np.random.Generator,
                   n_pos: int = 5, n_neg: int = 500, pool: np.ndarray | None = None) -> RankingQueries:
    citers: list[list[int]] = [[] for _ in range(n_papers)]
    for a, c in enumerate(cites):
        for b in c.tolist():
            citers[b].append(a)
    qs, pos, cand = [], [], []
    for q in queries:
        q = int(q)
        counts = Counter(b for a in citers[q] for b in cites[a].tolist() if b != q)
        if not counts:
            continue
        top = max(counts.values())
        for threshold in range(top, 0, -1):
            found = sorted(b for b, n in counts.items() if n >= threshold)
            if len(found) >= n_pos:
                break
        found = np.asarray(found, dtype=np.int64)
        p = np.sort(rng.choice(found, n_pos, replace=False)) if len(found) > n_pos else found
        qs.append(q)
        pos.append(p)
        cand.append(np.concatenate([p, _negatives(q, set(counts), n_papers, n_neg, rng, pool)]))
    return RankingQueries(np.asarray(qs, dtype=np.int64), pos, cand)
