"""Unsupervised uses of multi-facet embeddings (thesis C §3.2.2.3-3.2.2.5, Eqs. 3.5-3.7; spec
multi-facet-embedding.md §7): sentence similarity, word importance and extractive summarisation from facets.

    SC (Eq. 3.5)        SC(S1, S2) = Er(F̂1, F̂2) + Er(F̂2, F̂1): each sentence's unit facets rebuild the other's with
                        the NNSC E-step (Eq. 3.1); similarity = -SC. Er is averaged over the target columns.
    topic_recovery      min over a sentence's topics of the best facet cosine with the topic's centre (spec §10.2 C1);
                        facet_spread: the mean pairwise cosine of its facets (C5)
    importance (3.6)    a_i = Σ_k max(0, cos(w_i, c_k)): words near the facets of their own sentence weigh more;
                        zero (OOV) word vectors get 0
    Avg / Prob_avg      cosine of the (weighted) sums of a sentence's word vectors; Prob_avg weighs word w by
                        α / (α + p(w)), α = 1e-4 (SIF's weights); `weights` multiplies in the importance a_i
    SIF                 Prob_avg, then the projection on the first principal component of a reference set's
                        sentence embeddings removed (`principal_component`, `remove_component`)
    WMD / Prob_WMD      word mover's distance (POT's exact EMD) between the two bags of unit word vectors with cosine
                        distance 1 - cos, masses uniform / α / (α + p(w)), times a_i with "Our a", normalised
    summarise (3.7)     greedy: add the sentence whose representatives (its facets) most raise
                        Σ_w weight_w max_{s in R(S)} w·s over the document's word types (weight: count x
                        α / (α + p(w))); `per_length` divides a candidate's gain by its length (W Emb)

Inputs are numpy / torch arrays of word vectors (n, E) and facets (K, E); nothing here trains.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from genfeat.losses.nnsc import nnsc_coefficients, reconstruction_error

ALPHA = 1e-4


def unit(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.divide(x, n, out=np.zeros_like(x, dtype=np.float64), where=n > 0)


def sc_distance(f1: np.ndarray, f2: np.ndarray, lam: float = 0.4, iters: int = 5000, tol: float = 1e-10) -> float:
    """Eq. 3.5 between two facet sets (K1, E), (K2, E) (unit-normalised here), the E-step by FISTA to `tol` (the
    projected gradient) or `iters` iterations; symmetric."""
    a, b = (torch.from_numpy(unit(np.asarray(f, dtype=np.float64))) for f in (f1, f2))

    def er(basis: torch.Tensor, target: torch.Tensor) -> float:
        F, W = basis.T[None], target.T[None]  # (1, E, K), (1, E, N)
        M = nnsc_coefficients(F, W, lam, "pgd", iters=iters, tol=tol)
        return float(reconstruction_error(F, M, W).mean())
    return er(a, b) + er(b, a)


def _padded_sets(sets: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Facet sets (K_i, E) -> (B, E, K) with the facets as columns, zero-padded to the largest K, and the mask
    (B, K) of the real ones."""
    k, e = max(f.shape[0] for f in sets), sets[0].shape[1]
    x = torch.zeros(len(sets), e, k, dtype=torch.float64)
    mask = torch.zeros(len(sets), k, dtype=torch.bool)
    for i, f in enumerate(sets):
        x[i, :, : f.shape[0]] = f.T
        mask[i, : f.shape[0]] = True
    return x, mask


def sc_distances(pairs: Sequence[tuple[np.ndarray, np.ndarray]], lam: float = 0.4, iters: int = 5000,
                 tol: float = 1e-10, batch: int = 64) -> np.ndarray:
    """`sc_distance` of many pairs of facet sets (K_i, E), batched: the sets of a batch are zero-padded to the
    largest K (a zero basis column gets coefficient 0: its gradient is λ > 0 and M is clamped at 0) and the padded
    targets are masked out of the mean. (P,) distances; equal to `sc_distance` pair by pair (test)."""
    out = np.zeros(len(pairs))
    for a in range(0, len(pairs), batch):
        chunk = pairs[a: a + batch]
        (x1, m1), (x2, m2) = (_padded_sets([torch.from_numpy(unit(np.asarray(pr[i], dtype=np.float64)))
                                            for pr in chunk]) for i in (0, 1))
        total = torch.zeros(len(chunk), dtype=torch.float64)
        for basis, target, mask in ((x1, x2, m2), (x2, x1, m1)):
            M = nnsc_coefficients(basis, target, lam, "pgd", mask=mask, iters=iters, tol=tol)
            total += reconstruction_error(basis, M, target, mask).sum(1) / mask.sum(1)
        out[a: a + len(chunk)] = total.numpy()
    return out


def topic_recovery(facets: np.ndarray, centres: np.ndarray) -> float:
    """How well a sentence's facets (K, E) cover each of its topics' centres (T, E): min over the topics of the
    best facet cosine (spec §10.2 C1: > 0.8 counts as recovered)."""
    return float((unit(np.asarray(facets, dtype=np.float64)) @ unit(np.asarray(centres, dtype=np.float64)).T)
                 .max(0).min())


def facet_spread(facets: np.ndarray) -> float:
    """The mean cosine over the K (K - 1) / 2 pairs of a sentence's facets (K, E) (spec §10.2 C5: k-means-trained
    facets are expected closer together than NNSC-trained ones)."""
    f = unit(np.asarray(facets, dtype=np.float64))
    k = len(f)
    if k < 2:
        raise ValueError("the spread of facets needs at least 2 of them")
    return float((f @ f.T)[np.triu_indices(k, 1)].mean())


def importance(words: np.ndarray, facets: np.ndarray, reduce: str = "sum") -> np.ndarray:
    """Eq. 3.6: a_i = Σ_k max(0, cos(w_i, c_k)) for word vectors (n, E) and facets (K, E) -> (n,).
    `reduce="max"` (a deviation, not the thesis's): a_i = max(0, max_k cos(w_i, c_k)), so a topic that two facets
    cover does not count twice (docs/results/facets_synthetic.md)."""
    cos = np.maximum(0.0, unit(np.asarray(words, dtype=np.float64)) @ unit(np.asarray(facets, dtype=np.float64)).T)
    if reduce not in ("sum", "max"):
        raise ValueError(f"reduce must be sum or max, got {reduce!r}")
    return cos.sum(1) if reduce == "sum" else cos.max(1)


def sif_weights(probs: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """α / (α + p(w))."""
    return alpha / (alpha + np.asarray(probs, dtype=np.float64))


def sif_bag_vectors(input_ids: np.ndarray, vectors: np.ndarray, probs: np.ndarray, first_word: int = 4,
                    nu: float = ALPHA) -> np.ndarray:
    """(n, d) Σ_w ν/(ν + p(w)) w over each text's tokens (a paper, a pattern: (n, T) ids) with id >= `first_word`
    (the specials and <unk> count nothing: ids below `first_word` are skipped). Eq. B.2 / B.4's s^aw."""
    if vectors.shape[0] != probs.shape[0]:
        raise ValueError(f"{vectors.shape[0]} word vectors for {probs.shape[0]} word probabilities")
    from scipy.sparse import csr_matrix

    w = sif_weights(probs, nu)  # (V,)
    w[:first_word] = 0.0
    n, t = input_ids.shape
    bags = csr_matrix((w[input_ids.ravel()], (np.repeat(np.arange(n), t), input_ids.ravel())),
                      shape=(n, len(w)))  # (n, V) the weighted bags of words (repeats summed)
    return np.asarray(bags @ np.asarray(vectors, dtype=np.float64))


def weighted_average(words: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Σ_i weight_i w_i (the raw vectors, as the reference's Avg) -> (E,)."""
    w = np.ones(len(words)) if weights is None else np.asarray(weights, dtype=np.float64)
    return (w[:, None] * np.asarray(words, dtype=np.float64)).sum(0)


def principal_component(embeddings: np.ndarray) -> np.ndarray:
    """The first principal component (uncentred, as SIF: the top right singular vector) of sentence embeddings
    (n, E) -> (E,) unit."""
    _, _, vt = np.linalg.svd(np.asarray(embeddings, dtype=np.float64), full_matrices=False)
    return vt[0]


def remove_component(embeddings: np.ndarray, u: np.ndarray) -> np.ndarray:
    """x - (x·u) u for each row (u unit)."""
    x = np.asarray(embeddings, dtype=np.float64)
    return x - np.outer(x @ u, u)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return float(a @ b / (na * nb)) if na > 0 and nb > 0 else 0.0


def wmd(words1: np.ndarray, words2: np.ndarray, mass1: np.ndarray | None = None,
        mass2: np.ndarray | None = None) -> float:
    """Word mover's distance between two bags of word vectors with ground cost 1 - cos, through POT's exact EMD;
    masses are normalised (uniform when None); zero vectors and zero masses are dropped."""
    import ot

    def prep(words, mass):
        x = unit(np.asarray(words, dtype=np.float64))
        m = np.ones(len(x)) if mass is None else np.asarray(mass, dtype=np.float64)
        keep = (np.linalg.norm(x, axis=1) > 0) & (m > 0)
        if not keep.any():
            raise ValueError("a bag with no word vector (or no mass) has no word mover's distance")
        return x[keep], m[keep] / m[keep].sum()
    x1, m1 = prep(words1, mass1)
    x2, m2 = prep(words2, mass2)
    cost = np.clip(1.0 - x1 @ x2.T, 0.0, None)
    return float(ot.emd2(m1, m2, cost))


EMPTY = -1e4  # a word's coverage before any sentence is chosen (below every cosine)


def summarise(doc_words: np.ndarray, doc_weights: np.ndarray, representatives: Sequence[np.ndarray], n: int = 3,
              per_length: Sequence[int] | None = None) -> tuple[list[int], list[float]]:
    """Greedy maximisation of Eq. 3.7: doc_words (V, E) the document's word types, doc_weights (V,), and for each
    sentence its representatives (m_t, E) (facets, a sentence embedding, or its word vectors). Returns the chosen
    sentence indices in order and the objective after each pick. A word not yet covered counts as covered at
    `EMPTY`; a candidate's gain is Σ_w weight_w max(0, s_w - cur_w). `per_length` (the W Emb baseline) divides
    the gain's improvement by the candidate's length, not the part that only lifts uncovered words from `EMPTY`
    (that part is the same for every candidate with representatives and would favour the shortest sentence)."""
    W = unit(np.asarray(doc_words, dtype=np.float64))
    weights = np.asarray(doc_weights, dtype=np.float64)
    sims = [(W @ unit(np.asarray(r, dtype=np.float64)).T).max(1) if len(r) else np.full(len(W), EMPTY)
            for r in representatives]  # (V,) per sentence
    cur = np.full(len(W), EMPTY)
    chosen: list[int] = []
    objective: list[float] = []
    for _ in range(min(n, len(sims))):
        gains = []
        for t, s in enumerate(sims):
            if t in chosen:
                gains.append(-np.inf)
                continue
            g = float((weights * np.maximum(0.0, s - cur)).sum())
            if per_length is not None:
                lift = float((weights * ((cur <= EMPTY) & (s > EMPTY))).sum() * -EMPTY)  # EMPTY -> 0
                g = lift + (g - lift) / per_length[t]
            gains.append(g)
        best = int(np.argmax(gains))
        chosen.append(best)
        cur = np.maximum(cur, sims[best])
        objective.append(float((weights * cur).sum()))
    return chosen, objective
