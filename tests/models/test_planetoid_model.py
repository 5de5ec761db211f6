"""Planetoid model, loss, schedule and baselines (spec planetoid.md §5.3, tests 7-10)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from scipy.stats import binomtest

from genfeat.data.graph_synthetic import make_sbm_bow
from genfeat.data.planetoid import GraphData
from genfeat.errors import ConfigError
from genfeat.losses.graph_context import context_loss
from genfeat.models.planetoid import Planetoid, PlanetoidConfig
from genfeat.models.planetoid import baselines as B
from genfeat.models.planetoid.train import AlternatingSchedule
from genfeat.nn.sparse_linear import SparseLinear, SparseRows


def test_context_loss_value_and_stability():
    torch.manual_seed(0)
    e, w = torch.randn(7, 5), torch.randn(7, 5)
    gamma = torch.tensor([1.0, -1, 1, 1, -1, 1, -1])
    by_hand = -torch.log(1 / (1 + torch.exp(-gamma * (e * w).sum(1))))
    torch.testing.assert_close(context_loss(e, w, gamma, "none"), by_hand)
    torch.testing.assert_close(context_loss(e, w, gamma, "mean"), by_hand.mean())
    torch.testing.assert_close(context_loss(e, w, gamma, "sum"), by_hand.sum())
    big = context_loss(torch.full((2, 1), 1e3), torch.ones(2, 1), torch.tensor([-1.0, 1.0]), "none")
    assert torch.isfinite(big).all() and big[0].item() == pytest.approx(1e3) and big[1].item() == 0


def test_sparse_linear_equals_dense():
    x = sp.random(30, 12, density=0.3, format="csr", random_state=0, dtype=np.float32)
    rows, layer = SparseRows(x), SparseLinear(12, 4)
    ids = torch.tensor([3, 0, 29, 3, 17])
    dense = torch.from_numpy(x.toarray())[ids]
    torch.testing.assert_close(layer(rows, ids), dense @ layer.weight + layer.bias)


@pytest.fixture(scope="module")
def graph() -> GraphData:
    return make_sbm_bow(0, n=200, classes=4, per_class=5, num_val=20, num_test=40, vocab=40)


def _model(g, variant, **kw):
    torch.manual_seed(0)
    return Planetoid(PlanetoidConfig(variant=variant, **kw), g.num_nodes, g.num_features, g.num_classes)


def test_transductive_prediction_depends_on_own_embedding_only(graph):
    m = _model(graph, "T")
    x, ids = SparseRows(graph.features), torch.arange(graph.num_nodes)
    before = m(ids, x)[0]
    with torch.no_grad():
        m.embedding.weight[7] += 5.0
    after = m(ids, x)[0]
    changed = (before - after).abs().amax(1) > 0
    assert changed.nonzero().flatten().tolist() == [7]


def test_supervised_step_moves_only_the_batch_embeddings(graph):
    m = _model(graph, "T")
    batch = torch.tensor([1, 5, 9])
    m.supervised_loss(batch, torch.from_numpy(graph.labels)[batch], SparseRows(graph.features)).backward()
    g = m.embedding.weight.grad
    assert (g[batch].abs().sum(1) > 0).all()
    mask = torch.ones(graph.num_nodes, dtype=torch.bool)
    mask[batch] = False
    assert (g[mask] == 0).all()
    assert m.context.weight.grad is None  # the label loss never touches the context vectors


def test_inductive_predictions_are_a_function_of_x(graph):
    m = _model(graph, "I")
    x = SparseRows(graph.features)
    ids = torch.arange(graph.num_nodes)
    logits = m(ids, x)[0]
    perm = torch.randperm(graph.num_nodes, generator=torch.Generator().manual_seed(1))
    xp = SparseRows(graph.features[perm.numpy()])
    torch.testing.assert_close(m(ids, xp)[0], logits[perm])  # relabelling nodes permutes predictions
    new = SparseRows(sp.csr_matrix(np.eye(1, graph.num_features, 3, dtype=np.float32)))  # an unseen node
    assert m(torch.tensor([0]), new)[0].shape == (1, graph.num_classes)
    i, c = torch.tensor([0, 1, 2]), torch.tensor([3, 4, 5])
    context_loss(m.context_embed(i, x), m.context(c), torch.ones(3)).backward()
    assert m.embed_layer.weight.grad.abs().sum() > 0  # the context loss trains the shared W1
    assert m.embed_layer.bias.grad is None  # ... through its own bias
    assert m.context_bias.grad.abs().sum() > 0


def test_every_variant_trains_every_branch(graph):
    ids = torch.from_numpy(graph.train_idx)
    for variant in ("T", "I", "G"):
        m = _model(graph, variant)
        m.supervised_loss(ids, torch.from_numpy(graph.labels)[ids], SparseRows(graph.features)).backward()
        for p in m.supervised_parameters():
            assert p.grad is not None and p.grad.abs().sum() > 0, variant
    with pytest.raises(ConfigError):
        Planetoid(PlanetoidConfig(variant="T"), 10, 0, 3)
    relu = _model(graph, "T", branch_activation="relu", hidden_sizes=(16,))
    assert relu(torch.arange(5), SparseRows(graph.features))[0].shape == (5, graph.num_classes)


def test_alternating_schedule():
    gen = torch.Generator().manual_seed(0)
    assert AlternatingSchedule(2, 3, gen).round() == ["sup", "sup", "ctx", "ctx", "ctx"]
    rounds = [AlternatingSchedule(1, 0.25, gen).round() for _ in range(4000)]
    assert all(r[0] == "sup" and r.count("sup") == 1 for r in rounds)
    assert binomtest(sum(r.count("ctx") for r in rounds), 4000, 0.25).pvalue > 1e-3


def test_label_propagation_is_the_harmonic_solution():
    rng = np.random.default_rng(0)
    n = 40
    a = sp.random(n, n, density=0.15, random_state=1, format="csr")
    a = sp.csr_matrix(a + a.T)
    a.setdiag(0)
    a.eliminate_zeros()
    labels = rng.integers(0, 3, n)
    lab = np.arange(9)
    g = GraphData("toy", sp.csr_matrix((n, 2)), labels, a, lab, np.arange(9, 20), np.arange(20, n))
    pred, info = B.label_propagation(g)
    # the harmonic property, checked independently: every unlabeled node's score is the weighted mean of
    # its neighbours' scores, labeled nodes are clamped
    dense = a.toarray()
    y = np.zeros((n, 3))
    y[lab, labels[lab]] = 1
    unl = np.arange(9, n)
    lap = np.diag(dense.sum(1)) - dense
    f_u = np.linalg.solve(lap[np.ix_(unl, unl)], dense[np.ix_(unl, lab)] @ y[lab])
    expected = np.concatenate([labels[lab], f_u.argmax(1)])
    assert np.array_equal(pred, expected)
    assert info["unreachable_nodes"] == 0


def test_gcn_keeps_the_features_sparse(monkeypatch, tmp_path):
    """A dense (N, F) copy of a large bag-of-words graph does not fit in memory: the GCN baseline never makes one."""
    import scipy.sparse as sp

    from genfeat.data.graph_synthetic import make_sbm_bow
    from genfeat.models.planetoid import baselines as B
    from genfeat.paradigms.planetoid import run_method
    from genfeat.recipes.planetoid import PlanetoidRunConfig

    def refuse(*a, **k):
        raise AssertionError("densified the feature matrix")
    for cls in (sp.csr_matrix, sp.coo_matrix, sp.csr_array, sp.coo_array):
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)
    data = make_sbm_bow(seed=0, n=400, per_class=10, num_val=50, num_test=100)
    cfg = PlanetoidRunConfig(method="gcn", baseline=B.BaselineConfig(epochs=30, eval_every=10))
    assert run_method(cfg, data, tmp_path)["test_acc"] > 0.4


def test_sparse_dropout_matches_dense_dropout_semantics():
    import torch

    from genfeat.models.planetoid.baselines import sparse_dropout

    torch.manual_seed(0)
    dense = torch.rand(200, 50) * (torch.rand(200, 50) < 0.2)
    x = dense.to_sparse().coalesce()
    assert sparse_dropout(x, 0.2, training=False) is x
    y = sparse_dropout(x, 0.2, training=True).to_dense()
    kept = y != 0
    torch.testing.assert_close(y[kept], dense[kept] / 0.8)
    frac = kept.sum().item() / (dense != 0).sum().item()
    assert 0.75 < frac < 0.85  # p is the share dropped, not kept
