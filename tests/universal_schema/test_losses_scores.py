"""Spec multi-facet-universal-schema.md §11: the exactness tests of Eq. 3.8-3.11 and B.1, and the facet masks."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from genfeat.analysis.facet_coverage import asym, asym_matrix, direction, sim, sim_matrix
from genfeat.losses.universal_schema import (
    autoencoder_regulariser,
    inverse_count_weights,
    logistic_pair_loss,
    mean_facet,
    pair_distance,
    universal_schema_loss,
)
from genfeat.models.universal_schema import MultiFacetSchema, UniversalSchemaConfig


@pytest.fixture(autouse=True)
def _float64():
    """Exact comparisons in float64, for this module's tests only (never at import: collection would change the
    default for the whole session)."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


def _grid_distance(s: np.ndarray, e: np.ndarray) -> tuple[float, float]:
    """min over a grid of η in [0, 1] of ||ẽ - η s||² (ẽ normalised), and the η that reaches it."""
    e = e / np.linalg.norm(e)
    etas = np.linspace(0, 1, 100001)
    d = ((e[None] - etas[:, None] * s[None]) ** 2).sum(1)
    return float(d.min()), float(etas[d.argmin()])


def test_eta_closed_form_minimises_over_a_grid():
    g = np.random.default_rng(0)
    for _ in range(20):
        s, e = g.normal(size=4), g.normal(size=4)
        d = pair_distance(torch.tensor(s)[None, None], torch.tensor(e)[None, None])[0, 0].item()
        grid, _ = _grid_distance(s, e)
        assert d == pytest.approx(grid, abs=1e-8)
        assert d <= grid + 1e-12  # the closed form is the exact minimum
    e = torch.tensor([[[1.0, 0.0]]])
    assert pair_distance(torch.tensor([[[-2.0, 0.5]]]), e).item() == pytest.approx(1.0)  # negative dot: η = 0, D = 1
    tiny = torch.tensor([[[1e-3, 0.0]]])  # tiny norm: η clipped at 1
    assert pair_distance(tiny, e).item() == pytest.approx((1 - 1e-3) ** 2)


def test_eq_3_8_is_the_brute_force_minimum_over_facets_and_eta():
    g = np.random.default_rng(1)
    facets, pairs = g.normal(size=(6, 4, 5)), g.normal(size=(6, 3, 5))
    facets[:3] *= 0.3  # short facets: η clips at 1, where the best cosine is not the best facet
    D = pair_distance(torch.tensor(facets), torch.tensor(pairs)).numpy()
    for b in range(6):
        for j in range(3):
            brute = min(_grid_distance(facets[b, k], pairs[b, j])[0] for k in range(4))
            assert D[b, j] == pytest.approx(brute, abs=1e-8)
    assert (D >= 0).all() and (D <= 1 + 1e-12).all()


def test_max_cos_assignment_differs_only_where_eta_clips():
    """The reference's choice by cosine: the facet with the higher cosine but η clipped at 1 loses under
    min_dist (Algorithm 2)."""
    e = torch.tensor([[[1.0, 0.0]]])
    facets = torch.tensor([[[0.3, 0.0], [0.9, 0.6]]])  # cos 1 but norm 0.3 (η = 1, D = 0.49); cos 0.83, D = 0.31
    assert pair_distance(facets, e, assign="min_dist").item() == pytest.approx(1 - 0.9 ** 2 / 1.17)
    assert pair_distance(facets, e, assign="max_cos").item() == pytest.approx(0.49)
    assert pair_distance(facets, e).item() == pytest.approx(1 - 0.9 ** 2 / 1.17)  # the thesis's by default
    w = torch.ones(1, 1)
    _, parts = universal_schema_loss(facets.repeat(2, 1, 1), None, torch.cat([e, -e]), torch.ones(2, 1, dtype=bool),
                                    w.repeat(2, 1), torch.tensor([1, 0]))
    assert parts["d_pos"] == pytest.approx((1 - 0.9 ** 2 / 1.17 + 1.0) / 2)  # e: min_dist's facet; -e: D = 1


def test_gradient_reaches_the_chosen_facet_and_the_pair_through_its_normalisation():
    g = torch.Generator().manual_seed(2)
    facets = torch.randn(1, 3, 4, generator=g, requires_grad=True)
    e = torch.randn(1, 1, 4, generator=g, requires_grad=True)
    D = pair_distance(facets, e)
    D.sum().backward()
    et = F.normalize(e.detach(), dim=-1)[0, 0]
    s = facets.detach()[0]
    eta = ((s @ et) / (s * s).sum(1)).clamp(0, 1)
    k = int(((et[None] - eta[:, None] * s) ** 2).sum(1).argmin())
    assert [bool(facets.grad[0, i].abs().sum() > 0) for i in range(3)] == [i == k for i in range(3)]
    # η constant: dD/ds_k = -2 η (ẽ - η s_k); dD/dẽ = 2 (ẽ - η s_k), then through ẽ = e / |e|
    r = et - eta[k] * s[k]
    torch.testing.assert_close(facets.grad[0, k], -2 * eta[k] * r)
    n = e.detach().norm()
    proj = (torch.eye(4) - torch.outer(et, et)) @ (2 * r) / n
    torch.testing.assert_close(e.grad[0, 0], proj)


def test_pair_weights_are_inverse_counts_with_mean_one():
    counts = torch.tensor([[1, 2, 4, 0], [8, 1, 1, 2]])
    mask = torch.tensor([[True, True, True, False], [True, True, True, True]])
    w = inverse_count_weights(counts, mask)
    assert w.dtype == torch.float64 and float(w[mask].mean()) == pytest.approx(1.0, abs=1e-12)
    assert w[0, 3] == 0
    inv = 1.0 / counts[mask].double()
    torch.testing.assert_close(w[mask], inv / inv.mean())


def _loss_by_hand(facets, mask, pairs, pmask, w, neg):
    D = pair_distance(facets, pairs, mask)  # (B, N)
    Dn = pair_distance(facets, pairs[neg], mask)
    m, mn = pmask.double(), pmask[neg].double()
    pos = (w * D * m).sum(1) / m.sum(1)
    negs = (w[neg] * Dn * mn).sum(1) / mn.sum(1)
    return (pos - negs).mean()


def test_eq_3_9_adds_positives_and_subtracts_negatives_with_their_pairs_weights():
    g = torch.Generator().manual_seed(3)
    facets, pairs = torch.randn(4, 3, 5, generator=g), torch.randn(4, 2, 5, generator=g)
    pmask = torch.tensor([[True, True], [True, False], [True, True], [True, True]])
    w = inverse_count_weights(torch.tensor([[1, 3], [2, 0], [5, 1], [1, 1]]), pmask)
    neg = torch.tensor([2, 3, 0, 1])
    loss, parts = universal_schema_loss(facets, None, pairs, pmask, w, negatives=neg)
    assert loss.item() == pytest.approx(_loss_by_hand(facets, None, pairs, pmask, w, neg).item(), abs=1e-12)
    assert parts["d_pos"] - parts["d_neg"] == pytest.approx(loss.item(), abs=1e-12)
    # the sign: moving a facet onto its positive pair lowers the loss, onto its negative raises it
    onto_pos, onto_neg = facets.clone(), facets.clone()
    onto_pos[0, 0] = F.normalize(pairs[0, 0], dim=0)
    onto_neg[0, 0] = F.normalize(pairs[2, 0], dim=0)
    lp = universal_schema_loss(onto_pos, None, pairs, pmask, w, negatives=neg)[0]
    ln = universal_schema_loss(onto_neg, None, pairs, pmask, w, negatives=neg)[0]
    assert lp < loss < ln


def test_masked_facets_never_win_and_get_no_gradient():
    """11 decoder slots; a pattern uses the first 5, a KB relation all 11 (spec §11.9)."""
    cfg = UniversalSchemaConfig(vocab_size=12, d_model=16, d_target=6, n_head=2, d_inner=32, n_enc=1, n_dec=1,
                                dropout=0.0)
    model = MultiFacetSchema(cfg, n_pairs=4)
    mask = model.net.row_slot_mask(torch.tensor([0, 1]))
    assert mask.sum(1).tolist() == [5, 11] and mask[0, :5].all() and not mask[0, 5:].any()
    facets = torch.randn(2, 11, 6, requires_grad=True)
    e = torch.randn(2, 1, 6)
    with torch.no_grad():  # a masked slot of row 0 would fit its pair exactly
        facets[0, 7] = F.normalize(e[0, 0], dim=0)
    D = pair_distance(facets, e, mask)
    assert D[0, 0] > 1e-3  # slot 7 did not win: a masked facet is zero
    D.sum().backward()
    assert facets.grad[0, 5:].abs().sum() == 0
    out = model({"input_ids": torch.tensor([[0, 3, 4, 1], [0, 0, 5, 1]]), "row_types": torch.tensor([0, 1]),
                 "pair_ids": torch.zeros(2, 1, dtype=torch.long)})
    assert (out.facets[0, 5:] == 0).all() and (out.facets[1].abs().sum(1) > 0).all()


def test_autoencoder_regulariser_pulls_the_mean_facet_to_its_own_words():
    g = torch.Generator().manual_seed(4)
    facets = torch.randn(3, 4, 5, generator=g)
    mask = torch.tensor([[True, True, False, False]] * 3)
    assert torch.equal(mean_facet(facets, mask), facets[:, :2].mean(1))  # the plain mean of the real facets
    H = torch.nn.Linear(7, 5, bias=False)
    sif = torch.randn(3, 7, generator=g)  # fixed word vectors: an input, not a parameter
    targets = H(sif)
    neg = torch.tensor([1, 2, 0])
    omega = autoencoder_regulariser(facets, mask, targets, negatives=neg)
    mu = facets[:, :2].mean(1)[:, None]
    by_hand = (pair_distance(mu, targets[:, None]) - pair_distance(mu, targets[neg][:, None])).mean()
    assert omega.item() == pytest.approx(by_hand.item(), abs=1e-12)
    omega.backward()
    assert H.weight.grad is not None and H.weight.grad.abs().sum() > 0


def test_logistic_loss_is_binary_cross_entropy():
    g = torch.Generator().manual_seed(5)
    rows, pairs, negs = torch.randn(2, 3, generator=g), torch.randn(2, 2, 3, generator=g), torch.randn(2, 2, 3,
                                                                                                          generator=g)
    mask = torch.tensor([[True, True], [True, False]])
    pos = torch.einsum("bd,bnd->bn", rows, pairs)[mask]
    neg = torch.einsum("bd,bnd->bn", rows, negs)[mask]
    ref = F.binary_cross_entropy_with_logits(torch.cat([pos, neg]), torch.cat([torch.ones(3), torch.zeros(3)]),
                                             reduction="sum") / 3
    assert logistic_pair_loss(rows, pairs, mask, negs).item() == pytest.approx(ref.item(), abs=1e-12)


def test_asym_sim_and_direction():
    e1, e2 = torch.eye(3)[0], torch.eye(3)[1]
    A, B = torch.stack([e1, e2])[None], e1[None, None]
    assert asym(A, B).item() == pytest.approx(1.0) and asym(B, A).item() == pytest.approx(0.5)
    assert direction(A, B).item() == pytest.approx(0.5)  # A is the premise
    assert sim(A, B).item() == pytest.approx(0.75) == sim(B, A).item()
    g = torch.Generator().manual_seed(6)
    a, b = torch.randn(5, 1, 4, generator=g), torch.randn(5, 1, 4, generator=g)
    torch.testing.assert_close(asym(a, b), F.cosine_similarity(a[:, 0], b[:, 0]))  # K = 1: the cosine
    torch.testing.assert_close(direction(a, b), torch.zeros(5))
    a, b = torch.randn(5, 3, 4, generator=g), torch.randn(5, 7, 4, generator=g)  # K_i != K_j
    scaled = a * torch.rand(5, 3, 1, generator=g) * 10  # facet norms do not matter
    torch.testing.assert_close(asym(scaled[:, [2, 0, 1]], b[:, torch.randperm(7, generator=g)]), asym(a, b))
    cos = torch.einsum("bkd,bmd->bkm", F.normalize(a, dim=-1), F.normalize(b, dim=-1))
    torch.testing.assert_close(asym(a, b), cos.max(1).values.mean(1))  # mean over b's, max over a's
    torch.testing.assert_close(sim(a, b), 0.5 * (asym(a, b) + asym(b, a)))
    torch.testing.assert_close(sim(a, b), sim(b, a))
    # masks: a padded facet is neither a max nor in the mean
    pad_a, pad_b = torch.cat([a, 5 * b[:, :1]], 1), torch.cat([b, a[:, :2]], 1)
    ma, mb = torch.arange(4) < 3, torch.arange(9) < 7
    torch.testing.assert_close(asym(pad_a, pad_b, ma.expand(5, 4), mb.expand(5, 9)), asym(a, b))
    # the matrix forms score every row against every row
    m = asym_matrix(a, b)
    torch.testing.assert_close(m[2, 4], asym(a[2:3], b[4:5])[0])
    torch.testing.assert_close(sim_matrix(a, b)[1, 3], sim(a[1:2], b[3:4])[0])
