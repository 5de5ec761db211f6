"""Reviewer-paper affinities from a multi-facet paper recommender (thesis C §3.4; OpenReview's "MFR" scores
reviewers against submissions this way, mixed 0.2 : 0.8 with a document-similarity model).

    trained      the run was trained on the reviewers' archives (authorship): Eq. 3.13 between a submission's
                 authorship facets and the reviewer's embedding
    as is        a run trained on other data: the reviewer's archive papers stand in for the embedding,
                 S(sub, r) = max over the reviewer's papers q and their facets of max(0, max_k p^a_sub,k · p_q,l)
    cbow-max     the largest cosine between the submission's and the reviewer's papers' SIF vectors (CBOW Max)
    mixture      λ max-facet + (1 - λ) cbow-max

Shapes: submissions (S, T) ids, archive papers (P, T), paper_reviewer (P,) -> scores (S, R).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from genfeat.losses.max_facet import max_facet_scores
from genfeat.models.citation.cbow import CBOWScorer
from genfeat.models.citation.model import CitationModel


def trained_affinity(model: CitationModel, sub_ids: Tensor, sub_types: Tensor, reviewer_columns: Tensor) -> Tensor:
    """(S, R) Eq. 3.13 against the author embeddings `reviewer_columns` (R,)."""
    sub = model.paper_facets(sub_ids, sub_types).author
    with torch.no_grad():
        return model.scores(sub, "author", reviewer_columns)


def as_is_affinity(model: CitationModel, sub_ids: Tensor, sub_types: Tensor, paper_ids: Tensor, paper_types: Tensor,
                   paper_reviewer: Tensor, n_reviewers: int, chunk: int = 4096) -> Tensor:
    """(S, R) the reviewer's papers' facets standing in for the reviewer's embedding (module docstring)."""
    sub = model.paper_facets(sub_ids, sub_types).author  # (S, K, d)
    arch = model.paper_facets(paper_ids, paper_types).facets  # (P, K, d)
    P, K, d = arch.shape
    flat = arch.reshape(P * K, d)
    owner = paper_reviewer.repeat_interleave(K)  # (P K,)
    out = torch.zeros(sub.size(0), n_reviewers)
    for a in range(0, P * K, chunk):
        s = max_facet_scores(sub, flat[a: a + chunk], model.cfg.truncate)  # (S, c)
        out.scatter_reduce_(1, owner[a: a + chunk][None].expand(sub.size(0), -1), s, "amax")
    return out


def cbow_max_affinity(sub_vectors: np.ndarray, paper_vectors: np.ndarray, paper_reviewer: np.ndarray,
                      n_reviewers: int) -> Tensor:
    """(S, R) CBOW Max between the submissions and each reviewer's papers."""
    vecs = np.concatenate([paper_vectors, sub_vectors])
    pairs = np.stack([np.arange(len(paper_vectors)), paper_reviewer], 1)
    scorer = CBOWScorer(vecs, {"author": pairs}, "max")
    subs = np.arange(len(paper_vectors), len(vecs))
    return scorer("author", subs, np.arange(n_reviewers)).T.float()
