"""Softmax-bottleneck theory tools and the linear-dependency measurement of output embeddings (thesis C
§2.2.2-2.2.3, Appendix A.3; spec softmax-bottleneck.md §3-4).

Theory (exact, float64):
    dependency_coefficients(E)        unit a minimising ||E^T a|| (= sigma_min(E)): the (near) dependency
    theorem1_partition(a)             Theorem 1's construction: the subset G that no hidden state can rank
                                      on top with positive logits (the side with the larger |coefficient| sum)
    theorem2_certificate(E)           Theorem 2: w_p = Σ a_i w_i + ε, δ = 2 / (1 + Σ|a_i|), partition {G, S}
    theorem2_violation(...)           min_G h·w - (1+δ) max(max_S h·w, r ε), <= 0 for every ||h|| <= r
    top_set_margin(E, G)              LP: the largest t with h·w_g - h·w_s >= t (and h·w_g >= t) over
                                      ||h||_inf <= radius; t* <= 0 means G cannot be placed strictly on top

Dependency measurement (Figure 2.2): `min_eigenvalue` is sigma_min(E) ("singular", default) or
lambda_min(E E^T) ("gram_eig"); the thesis does not say which, the choice is recorded in every output.
`min_eigenvalue_ratio` = mean over sets of a type / mean over random sets of the same size, from a
filtered vocabulary (`filter_vocabulary`: drop the rarer half by embedding norm). Embeddings are used raw.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import torch
from torch import Tensor


def _f64(x) -> Tensor:
    return torch.as_tensor(np.asarray(x) if not isinstance(x, Tensor) else x, dtype=torch.float64)


# ------------------------------------------------------------------------------------------- theory
def dependency_coefficients(E) -> tuple[Tensor, float]:
    """(a, residual): the unit vector a minimising ||E^T a|| (left singular vector of the smallest singular
    value; exact zero when N > D) and that norm."""
    E = _f64(E)
    N, D = E.shape
    if N > D:  # rank deficient: an exact dependency lives in the null space of E^T
        u, s, _ = torch.linalg.svd(E, full_matrices=True)
        a = u[:, -1]
    else:
        u, s, _ = torch.linalg.svd(E, full_matrices=False)
        a = u[:, -1]
    return a, float(torch.linalg.vector_norm(E.T @ a))


def theorem1_partition(a, tol: float = 0.0) -> tuple[list[int], list[int]]:
    """Theorem 1, steps 3-4: (G, S). L = {a_i < 0}, R = {a_i > 0}; G = L if Σ_L |a_i| >= Σ_R a_i else R
    (ties go to the side holding the smallest index, so the result is unchanged under a -> -a).
    |a_i| <= tol count as 0 and go to S. Raises if a has only one sign (half-space premise violated)."""
    a = _f64(a)
    neg = [i for i, v in enumerate(a.tolist()) if v < -tol]
    pos = [i for i, v in enumerate(a.tolist()) if v > tol]
    if not neg or not pos:
        raise ValueError("the coefficients have one sign: the embeddings are not on one side of a hyperplane "
                         "through the origin, Theorem 1 does not apply")
    s_neg, s_pos = float(-a[neg].sum()), float(a[pos].sum())
    if abs(s_neg - s_pos) <= 1e-12 * max(s_neg, s_pos):
        G = neg if min(neg) < min(pos) else pos
    else:
        G = neg if s_neg > s_pos else pos
    return G, [i for i in range(len(a)) if i not in G]


def theorem2_certificate(E, pivot: int | None = None) -> dict:
    """Regress w_pivot on the other rows (least squares): w_pivot = Σ a_i w_i + ε. pivot=None: the row
    with the largest |coefficient| in `dependency_coefficients`. Returns {pivot, a, eps_norm, delta, case,
    G, S} with δ = 2/(1 + Σ|a_i|) and the partition of the proof (case 1: A_G >= A_S)."""
    E = _f64(E)
    N = E.shape[0]
    if pivot is None:
        pivot = int(dependency_coefficients(E)[0].abs().argmax())
    others = [i for i in range(N) if i != pivot]
    sol = torch.linalg.lstsq(E[others].T, E[pivot][:, None]).solution[:, 0]
    eps = E[pivot] - E[others].T @ sol
    coef = dict(zip(others, sol.tolist(), strict=True))
    if all(abs(v) < 1e-15 for v in coef.values()) or all(v < 0 for v in coef.values()):
        raise ValueError("inadmissible coefficients (all zero or all negative): Theorem 2 does not apply")
    left = [i for i in others if coef[i] < 0]
    right = [i for i in others if coef[i] > 0]
    a_g = 1.0 + sum(-coef[i] for i in left)
    a_s = sum(coef[i] for i in right)
    delta = 2.0 / (1.0 + sum(abs(v) for v in coef.values()))
    if a_g >= a_s:
        case, G, S = 1, [pivot, *left], right
    else:
        case, G, S = 2, right, [pivot, *left]
    S = S + [i for i in others if coef[i] == 0]
    return {"pivot": pivot, "a": coef, "eps_norm": float(torch.linalg.vector_norm(eps)), "delta": delta,
            "case": case, "G": sorted(G), "S": sorted(S)}


def theorem2_violation(E, G: list[int], S: list[int], delta: float, eps_bound: float, r: float, h) -> Tensor:
    """min_G h·w - (1+δ)·max(max_S h·w, r·ε) for each h (..., D); Theorem 2 says <= 0 when ||h|| <= r."""
    E, h = _f64(E), _f64(h)
    logits = h @ E.T
    top = logits[..., G].amin(-1)
    rest = torch.clamp(logits[..., S].amax(-1), min=r * eps_bound)
    return top - (1 + delta) * rest


def top_set_margin(E, G: list[int], require_positive: bool = True, radius: float = 1.0) -> tuple[float, Tensor]:
    """max t over h with ||h||_inf <= radius subject to h·w_g - h·w_s >= t (g in G, s not in G) and, if
    `require_positive`, h·w_g >= t. An exact LP (scipy's HiGHS). Returns (t*, h*); t* <= 0 (to solver
    tolerance) means G cannot be put strictly on top with positive logits — Theorem 1's situation."""
    from scipy.optimize import linprog

    E = _f64(E).numpy()
    N, D = E.shape
    S = [i for i in range(N) if i not in G]
    if not G or not S:
        raise ValueError("G must be a non-empty proper subset of the rows")
    rows = [np.concatenate([-(E[g] - E[s]), [1.0]]) for g in G for s in S]  # t - h·(w_g - w_s) <= 0
    if require_positive:
        rows += [np.concatenate([-E[g], [1.0]]) for g in G]
    c = np.zeros(D + 1)
    c[-1] = -1.0  # maximise t
    bounds = [(-radius, radius)] * D + [(None, None)]
    res = linprog(c, A_ub=np.array(rows), b_ub=np.zeros(len(rows)), bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"LP failed: {res.message}")
    return float(res.x[-1]), torch.from_numpy(res.x[:-1])


# ----------------------------------------------------------------------------- dependency measurement
def min_eigenvalue(E, kind: str = "singular") -> float:
    return float(batched_min_eigenvalue(_f64(E), torch.arange(len(E))[None], kind)[0])


def batched_min_eigenvalue(W, sets: Tensor, kind: str = "singular", chunk: int = 4096) -> Tensor:
    """sigma_min (or lambda_min of the Gram matrix) of W[set] for each row of `sets` (M, N); float64."""
    if kind not in ("singular", "gram_eig"):
        raise ValueError(f"kind must be 'singular' or 'gram_eig', got {kind!r}")
    W = _f64(W)
    out = []
    for i in range(0, len(sets), chunk):
        E = W[sets[i:i + chunk]]  # (m, N, D)
        if kind == "singular":
            s = torch.linalg.svdvals(E)
            if E.shape[1] > E.shape[2]:  # N > D: rank deficient
                s = torch.cat([s, s.new_zeros(len(s), E.shape[1] - E.shape[2])], -1)
            out.append(s[:, -1])
        else:
            out.append(torch.linalg.eigvalsh(E @ E.transpose(1, 2))[:, 0].clamp_min(0))
    return torch.cat(out)


def filter_vocabulary(W, tokens: list[str] | None = None, keep_fraction: float = 0.5, rarity: str = "small_norm",
                      word_initial_prefixes: tuple[str, ...] | None = None) -> Tensor:
    """Ids kept for set building: rank the full vocabulary by output-embedding norm and keep the
    `keep_fraction` judged frequent (rarity "small_norm": small norms are rare), then, if given, keep only
    tokens starting with one of `word_initial_prefixes` (BPE word-initial pieces)."""
    W = _f64(W)
    norms = torch.linalg.vector_norm(W, dim=-1)
    order = torch.argsort(norms, descending=(rarity == "small_norm"), stable=True)
    keep = order[: int(round(keep_fraction * len(W)))]
    if tokens is not None and word_initial_prefixes:
        keep = keep[[tokens[i].startswith(word_initial_prefixes) for i in keep.tolist()]]
    return torch.sort(keep).values


def random_sets(pool_ids: Tensor, N: int, num_sets: int = 1000, seed: int = 0) -> Tensor:
    """(num_sets, N) distinct ids per row, uniform without replacement from the pool."""
    g = torch.Generator().manual_seed(seed)
    idx = torch.rand(num_sets, len(pool_ids), generator=g).argsort(-1)[:, :N]
    return pool_ids[idx]


def neighbour_sets(W, query_ids: Tensor, pool_ids: Tensor, N: int, metric: str = "cosine",
                   chunk: int = 2048) -> Tensor:
    """(Q, N): each query and its N-1 nearest neighbours within the pool (itself excluded)."""
    W = _f64(W)
    pool = W[pool_ids]
    if metric == "cosine":
        pool = pool / torch.linalg.vector_norm(pool, dim=-1, keepdim=True).clamp_min(1e-30)
    out = []
    for i in range(0, len(query_ids), chunk):
        q_ids = query_ids[i:i + chunk]
        q = W[q_ids]
        if metric == "cosine":
            q = q / torch.linalg.vector_norm(q, dim=-1, keepdim=True).clamp_min(1e-30)
        sim = q @ pool.T if metric in ("cosine", "dot") else -torch.cdist(q, pool)
        sim = sim.masked_fill(pool_ids[None, :] == q_ids[:, None], float("-inf"))
        out.append(torch.cat([q_ids[:, None], pool_ids[sim.topk(N - 1, -1).indices]], 1))
    return torch.cat(out)


def analogy_sets(quadruples: Iterable[tuple[str, str, str, str, str]], token_to_id: Callable[[str], int | None],
                 allowed_ids: Tensor) -> Tensor:
    """(M, 4) ids of the analogy quadruples (category, a, b, c, d) whose four words map to distinct
    allowed single tokens."""
    allowed = set(allowed_ids.tolist())
    rows = []
    for _, *words in quadruples:
        ids = [token_to_id(w) for w in words]
        if all(i is not None and i in allowed for i in ids) and len(set(ids)) == 4:
            rows.append(ids)
    return torch.tensor(rows, dtype=torch.long).reshape(-1, 4)


def min_eigenvalue_ratio(W, sets: Tensor, random: Tensor, kind: str = "singular") -> dict:
    """{eps_S, eps_R, ratio, kind, num_sets}: mean min eigenvalue of the sets over that of random sets."""
    per_set = batched_min_eigenvalue(W, sets, kind)
    per_random = batched_min_eigenvalue(W, random, kind)
    eps_s, eps_r = float(per_set.mean()), float(per_random.mean())
    return {"eps_S": eps_s, "eps_R": eps_r, "ratio": eps_s / eps_r, "kind": kind, "num_sets": len(sets)}
