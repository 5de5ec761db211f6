"""The NNSC E-step and loss (spec multi-facet-embedding.md §4, §11 tests 1-13): box constraints, KKT, SciPy
references (lsq_linear / nnls after completing the square, L-BFGS-B), closed forms, the reference's RMSprop
iterations, k-means assignments, the loss's bounds, permutation invariance, the Danskin gradient and masking."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import optimize

from genfeat.losses.nnsc import nnsc_coefficients, nnsc_loss, reconstruction_error, rotated_negatives

E, K, N = 8, 3, 5


def _problem(seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    F = torch.randn(1, E, K, generator=g, dtype=torch.float64) * scale
    W = torch.nn.functional.normalize(torch.randn(1, E, N, generator=g, dtype=torch.float64), dim=1)
    return F, W


def _objective(F, m, w, lam):
    return float(np.sum((F @ m - w) ** 2) + lam * np.sum(m))


def _exact(F, W, lam):
    return nnsc_coefficients(F, W, lam, "pgd", iters=20000, tol=1e-12)


@pytest.mark.parametrize("scale", [0.01, 1.0, 30.0])
def test_box_and_kkt(scale):
    F, W = _problem(1, scale)
    for lam in (0.0, 0.4, 2.0):
        M = _exact(F, W, lam)
        assert M.min() >= 0 and M.max() <= 1
        g = 2 * (F.transpose(1, 2) @ (F @ M - W)) + lam
        inside = (M > 1e-9) & (M < 1 - 1e-9)
        assert all(float(v) <= 1e-6 for v in g[inside].abs())
        assert all(float(v) >= -1e-6 for v in g[M <= 1e-9]) and all(float(v) <= 1e-6 for v in g[M >= 1 - 1e-9])


def test_matches_bounded_least_squares_after_completing_the_square():
    for seed in range(4):
        F, W = _problem(seed)
        lam = 0.4
        M = _exact(F, W, lam)
        f = F[0].numpy()
        shift = lam / 2 * f @ np.linalg.solve(f.T @ f, np.ones(K))
        for j in range(N):
            w2 = W[0, :, j].numpy() - shift
            ref = optimize.lsq_linear(f, w2, bounds=(0, 1), method="bvls", tol=1e-14).x
            np.testing.assert_allclose(M[0, :, j].numpy(), ref, atol=1e-6)


def test_lambda_zero_is_nnls_or_clipped():
    F, W = _problem(2)
    M = _exact(F, W, 0.0)
    for j in range(N):
        ref, _ = optimize.nnls(F[0].numpy(), W[0, :, j].numpy())
        if ref.max() <= 1:
            np.testing.assert_allclose(M[0, :, j].numpy(), ref, atol=1e-6)
    q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((E, K)))
    Fo = torch.from_numpy(0.3 * q)[None]  # short facets: a word along facet 0 needs a coefficient > 1
    w = torch.from_numpy(q[:, :1])[None]
    m = _exact(Fo, w, 0.0)[0, :, 0].numpy()
    np.testing.assert_allclose(m, optimize.lsq_linear(0.3 * q, q[:, 0], bounds=(0, 1), method="bvls").x, atol=1e-6)
    assert m[0] == pytest.approx(1.0)


def test_orthonormal_closed_form_and_sparsity_threshold():
    q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((E, K)))
    F = torch.from_numpy(q)[None]
    _, W = _problem(3)
    previous = None
    for lam in (0.0, 0.2, 0.6, 1.2):
        M = _exact(F, W, lam)
        torch.testing.assert_close(M, (F.transpose(1, 2) @ W - lam / 2).clamp(0, 1), atol=1e-9, rtol=0)
        nnz = int((M > 0).sum())
        assert previous is None or nnz <= previous
        previous = nnz
    F2, W2 = _problem(4)
    lam = 2 * float((F2.transpose(1, 2) @ W2).max()) + 1e-9
    assert _exact(F2, W2, lam).abs().max() == 0


def test_k1_closed_form_and_lbfgsb_objective():
    F, W = _problem(5)
    c = F[:, :, :1]
    m = _exact(c, W, 0.4)
    want = ((c.transpose(1, 2) @ W - 0.2) / (c * c).sum()).clamp(0, 1)
    torch.testing.assert_close(m, want, atol=1e-9, rtol=0)
    M = _exact(F, W, 0.4)
    f = F[0].numpy()
    for j in range(N):
        w = W[0, :, j].numpy()
        ref = optimize.minimize(lambda x, w=w: _objective(f, x, w, 0.4), np.full(K, 0.5), method="L-BFGS-B",
                                bounds=[(0, 1)] * K, options={"ftol": 1e-15, "gtol": 1e-12})
        assert _objective(f, M[0, :, j].numpy(), w, 0.4) <= ref.fun + 1e-8


def test_rmsprop_parity_mode_is_close_to_the_optimum():
    """Facets of about unit norm, as in training (the iterations oscillate with amplitude ~ lr, so the gap grows
    with the curvature ||F||²)."""
    F, W = _problem(6)
    F = torch.nn.functional.normalize(F, dim=1)
    g = torch.Generator().manual_seed(0)
    M = nnsc_coefficients(F, W, 0.4, "rmsprop", iters=1000, generator=g)
    exact = _exact(F, W, 0.4)
    assert M.min() >= 0 and M.max() <= 1
    f = F[0].numpy()
    for j in range(N):
        w = W[0, :, j].numpy()
        assert _objective(f, M[0, :, j].numpy(), w, 0.4) <= _objective(f, exact[0, :, j].numpy(), w, 0.4) + 1e-2


def test_kmeans_assigns_each_word_to_its_closest_facet():
    F, W = _problem(7)
    M = nnsc_coefficients(F, W, 0.4, "kmeans")
    assert ((M > 0).sum(1) <= 1).all()
    cos = torch.nn.functional.cosine_similarity(F[0][:, :, None], W[0][:, None, :], dim=0)  # (K, N)
    for j in range(N):
        if M[0, :, j].max() > 0:
            assert int(M[0, :, j].argmax()) == int(cos[:, j].argmax())


def test_error_bounds_permutation_and_masking():
    F, W = _problem(8)
    M = _exact(F, W, 0.4)
    err = reconstruction_error(F, M, W)
    assert (err >= 0).all() and float(err.sum()) <= float((W ** 2).sum()) + 1e-9
    perm = torch.tensor([2, 0, 1])
    Mp = _exact(F[:, :, perm], W, 0.4)
    torch.testing.assert_close(Mp, M[:, perm], atol=1e-8, rtol=0)
    torch.testing.assert_close(reconstruction_error(F[:, :, perm], Mp, W), err, atol=1e-9, rtol=0)
    mask = torch.tensor([[True, True, False, True, False]])
    Mm = nnsc_coefficients(F, W, 0.4, "pgd", mask, iters=20000, tol=1e-12)
    assert (Mm[0, :, ~mask[0]] == 0).all() and torch.allclose(Mm[0, :, mask[0]], M[0, :, mask[0]])
    assert (reconstruction_error(F, Mm, W, mask)[0, ~mask[0]] == 0).all()


def test_loss_gradient_is_danskin():
    """The stop-gradient M-step gradient equals 2(FM-W)M^T - 2(FM_r-W_r)M_r^T, and a finite difference of the
    value function φ(F) = min_M ||FM - W||² + λ Σ M (M re-solved at every perturbation)."""
    g = torch.Generator().manual_seed(9)
    F = torch.randn(2, E, K, generator=g, dtype=torch.float64, requires_grad=True)
    W = torch.nn.functional.normalize(torch.randn(2, E, N, generator=g, dtype=torch.float64), dim=1)
    W_neg = torch.nn.functional.normalize(torch.randn(2, E, N, generator=g, dtype=torch.float64), dim=1)
    mask = torch.ones(2, N, dtype=torch.bool)
    lam = 0.4
    loss, parts = nnsc_loss(F, W, mask, W_neg, mask, lam, iters=20000)
    loss.backward()
    M, Mr = _exact(F, W, lam), _exact(F, W_neg, lam)
    Fd = F.detach()
    want = (2 * (Fd @ M - W) @ M.transpose(1, 2) - 2 * (Fd @ Mr - W_neg) @ Mr.transpose(1, 2)) / (2 * N)
    torch.testing.assert_close(F.grad, want, atol=1e-10, rtol=0)

    def phi(Fx, Wx):
        Mx = _exact(Fx, Wx, lam)
        return float(((Fx @ Mx - Wx) ** 2).sum() + lam * Mx.sum())
    eps = 1e-6
    for idx in [(0, 1, 0), (1, 4, 2), (0, 7, 1)]:
        Fp, Fm = Fd.clone(), Fd.clone()
        Fp[idx] += eps
        Fm[idx] -= eps
        b = idx[0]
        fd = ((phi(Fp[b:b + 1], W[b:b + 1]) - phi(Fm[b:b + 1], W[b:b + 1]))
              - (phi(Fp[b:b + 1], W_neg[b:b + 1]) - phi(Fm[b:b + 1], W_neg[b:b + 1]))) / (2 * eps)
        assert fd / (2 * N) == pytest.approx(float(F.grad[idx]), abs=1e-5)
    assert 0 <= parts["zero_columns"] <= 1


def test_rotated_negatives_never_pair_a_sequence_with_itself():
    W = torch.arange(4.0)[:, None, None].expand(4, 2, 3)
    mask = torch.ones(4, 3, dtype=torch.bool)
    for seed in range(10):
        Wn, _ = rotated_negatives(W, mask, torch.Generator().manual_seed(seed))
        assert (Wn[:, 0, 0] != torch.arange(4.0)).all()



def test_grouped_negatives_are_what_each_rank_draws():
    """batch_groups G: every example's negative comes from its own group of B / G rows, never itself, and the
    groups together are what G ranks holding one group each draw from one seed."""
    W = torch.arange(8.0)[:, None, None].expand(8, 2, 3)
    mask = torch.ones(8, 3, dtype=torch.bool)
    for seed in range(10):
        Wn, mn = rotated_negatives(W, mask, torch.Generator().manual_seed(seed), groups=2)
        got = Wn[:, 0, 0]
        assert (got != torch.arange(8.0)).all() and ((got < 4) == (torch.arange(8) < 4)).all()
        ranks = [rotated_negatives(W[r * 4:(r + 1) * 4], mask[r * 4:(r + 1) * 4],
                                   torch.Generator().manual_seed(seed))[0] for r in range(2)]
        assert torch.equal(Wn, torch.cat(ranks)) and mn.all()
    with pytest.raises(ValueError, match="does not split"):
        rotated_negatives(W[:7], mask[:7], groups=2)
