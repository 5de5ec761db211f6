"""Softmax-bottleneck theory tools (spec softmax-bottleneck.md §3, §8 R1-R2, §9)."""

from __future__ import annotations

import itertools

import pytest
import torch

from genfeat.analysis import softmax_bottleneck as SB


def parallelogram(seed: int = 0, m: int = 8, D: int = 16):
    g = torch.Generator().manual_seed(seed)
    u, gender = torch.randn(m, D, generator=g, dtype=torch.float64), torch.randn(2, D, generator=g, dtype=torch.float64)
    return u, gender


def test_exact_parallelogram_lp_and_theorem1():
    u, g = parallelogram()
    for i, k in itertools.permutations(range(4), 2):
        corners = torch.stack([u[i] + g[0], u[k] + g[1], u[i] + g[1], u[k] + g[0]])  # diagonal pair first
        t_diag, _ = SB.top_set_margin(corners, [0, 1], require_positive=False)
        assert t_diag <= 1e-9  # w_a + w_b = w_c + w_d: the diagonal can never be strictly on top
        t_edge, h = SB.top_set_margin(corners, [0, 2], require_positive=False)
        assert t_edge > 1e-3  # an edge pair can
        logits = corners @ h
        assert logits[[0, 2]].min() - logits[[1, 3]].max() == pytest.approx(t_edge, abs=1e-7)
        a, residual = SB.dependency_coefficients(corners)
        assert residual < 1e-10
        G, S = SB.theorem1_partition(a, tol=1e-8)
        assert sorted(G) in ([0, 1], [2, 3]) and sorted(G + S) == [0, 1, 2, 3]


def test_dependency_coefficients_and_min_eigenvalue():
    torch.manual_seed(0)
    E = torch.randn(5, 8, dtype=torch.float64)
    a, residual = SB.dependency_coefficients(E)
    assert residual == pytest.approx(float(torch.linalg.svdvals(E).min()), rel=1e-10)
    assert float(torch.linalg.vector_norm(a)) == pytest.approx(1.0)
    s = SB.min_eigenvalue(E)
    assert SB.min_eigenvalue(E, "gram_eig") == pytest.approx(s ** 2, rel=1e-10)
    assert SB.min_eigenvalue(E[torch.randperm(5)]) == pytest.approx(s, rel=1e-10)
    assert SB.min_eigenvalue(3 * E) == pytest.approx(3 * s, rel=1e-10)
    assert SB.min_eigenvalue(3 * E, "gram_eig") == pytest.approx(9 * s ** 2, rel=1e-10)
    wide = torch.randn(6, 4, dtype=torch.float64)  # N > D: rank deficient
    assert SB.min_eigenvalue(wide) == 0.0 and SB.dependency_coefficients(wide)[1] < 1e-10


def test_theorem1_partition_rules():
    G, S = SB.theorem1_partition([1.0, 1.0, -1.0, -1.0])
    assert (G, S) == SB.theorem1_partition([-1.0, -1.0, 1.0, 1.0])  # sign-invariant tie rule
    assert sorted(G) in ([0, 1], [2, 3])
    assert SB.theorem1_partition([2.0, -0.5, -0.5, 0.0]) == ([0], [1, 2, 3])  # larger |sum| side, zeros in S
    with pytest.raises(ValueError, match="one sign"):
        SB.theorem1_partition([1.0, 2.0, 0.0])


def test_theorem2_worked_example_and_cases():
    g = torch.Generator().manual_seed(1)
    queen, man, king = (torch.randn(10, generator=g, dtype=torch.float64) for _ in range(3))
    woman = queen + man - king + 1e-3 * torch.randn(10, generator=g, dtype=torch.float64)
    E = torch.stack([woman, queen, man, king])
    cert = SB.theorem2_certificate(E, pivot=0)
    assert cert["delta"] == pytest.approx(0.5, rel=1e-3)  # 2 / (1 + |1| + |1| + |-1|)
    a = cert["a"]
    a_g = 1 + sum(-v for v in a.values() if v < 0)
    a_s = sum(v for v in a.values() if v > 0)
    assert cert["case"] == (1 if a_g >= a_s else 2)
    assert set(cert["G"]) == ({0, 3} if cert["case"] == 1 else {1, 2})  # {woman, king} vs {queen, man}
    assert cert["eps_norm"] < 1e-2


def test_top_set_margin_stolen_probability():
    w1, w3 = torch.tensor([1.0, 0.2], dtype=torch.float64), torch.tensor([0.2, 1.0], dtype=torch.float64)
    E = torch.stack([w1, (w1 + w3) / 2, w3])  # w2 on the segment, all in a half-space
    assert SB.top_set_margin(E, [0, 2])[0] <= 1e-9
    assert SB.top_set_margin(E, [0])[0] > 1e-3
    assert SB.top_set_margin(E, [1], require_positive=True)[0] <= 1e-9  # interior point never wins


def test_theorem2_bound_holds_for_many_sets():
    g = torch.Generator().manual_seed(2)
    r = 5.0
    for _ in range(20):
        N, D = int(torch.randint(3, 8, (1,), generator=g)), 16
        rest = torch.randn(N - 1, D, generator=g, dtype=torch.float64)
        a = torch.randn(N - 1, generator=g, dtype=torch.float64)
        a[0] = a[0].abs()  # admissible: not all negative
        eps = torch.randn(D, generator=g, dtype=torch.float64)
        eps = eps / eps.norm() * float(10 ** (-1 - 2 * torch.rand(1, generator=g)))
        E = torch.cat([(a @ rest + eps)[None], rest])
        cert = SB.theorem2_certificate(E, pivot=0)
        h = torch.randn(2000, D, generator=g, dtype=torch.float64)
        h = h / h.norm(dim=-1, keepdim=True) * r
        h.requires_grad_(True)
        opt = torch.optim.Adam([h], lr=0.05)
        for _ in range(60):  # push towards a violation
            opt.zero_grad()
            (-SB.theorem2_violation(E, cert["G"], cert["S"], cert["delta"], cert["eps_norm"], r, h).sum()).backward()
            opt.step()
            with torch.no_grad():
                h.mul_((r / h.norm(dim=-1, keepdim=True)).clamp(max=1.0))
        v = SB.theorem2_violation(E, cert["G"], cert["S"], cert["delta"], cert["eps_norm"], r, h.detach())
        assert float(v.max()) <= 1e-9


def test_sets_and_filters():
    W = torch.randn(50, 6, dtype=torch.float64)
    W[:25] *= 0.1  # the rarer half by norm
    keep = SB.filter_vocabulary(W)
    assert keep.tolist() == list(range(25, 50))
    tokens = [("Ġ" if i % 2 else "") + f"w{i}" for i in range(50)]
    assert SB.filter_vocabulary(W, tokens, word_initial_prefixes=("Ġ",)).tolist() == list(range(25, 50, 2))
    rs = SB.random_sets(keep, 5, num_sets=1000, seed=3)
    assert rs.shape == (1000, 5) and all(len(set(r)) == 5 for r in rs.tolist())
    assert torch.equal(rs, SB.random_sets(keep, 5, num_sets=1000, seed=3))
    assert set(rs.flatten().tolist()) <= set(keep.tolist())
    nb = SB.neighbour_sets(W, keep[:10], keep, N=4)
    cos = (W / W.norm(dim=-1, keepdim=True)) @ (W / W.norm(dim=-1, keepdim=True)).T
    for row in nb.tolist():
        q = row[0]
        sims = {p: float(cos[q, p]) for p in keep.tolist() if p != q}
        assert row[1:] == sorted(sims, key=lambda p: -sims[p])[:3]  # brute force
    quads = [("x", "a", "b", "c", "d"), ("x", "a", "b", "c", "zz"), ("x", "a", "a", "c", "d")]
    ids = {"a": 30, "b": 31, "c": 32, "d": 33}
    assert SB.analogy_sets(quads, ids.get, keep).tolist() == [[30, 31, 32, 33]]
