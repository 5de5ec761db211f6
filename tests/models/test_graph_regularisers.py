"""The baselines' graph terms (`losses.graph_regularisers`) against the formulas of thesis Y §3.3.4 written out
edge by edge, and the SBM graphs of `data.graphs` (spec planetoid.md §5.1)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from genfeat.data.graph_synthetic import SBM_A, SBMConfig, make_sbm_bow
from genfeat.data.graphs import GraphDataConfig, load_graph
from genfeat.errors import ConfigError
from genfeat.losses.graph_regularisers import embedding_penalty, manifold_penalty


def test_manifold_penalty_is_the_mean_squared_distance_of_neighbours_distributions():
    torch.manual_seed(0)
    z, edges = torch.randn(6, 4), torch.tensor([[0, 1, 2, 5], [1, 0, 4, 3]])
    p = torch.softmax(z, -1).numpy()
    by_hand = np.mean([((p[i] - p[j]) ** 2).sum() for i, j in edges.T.tolist()])
    assert manifold_penalty(z, edges).item() == pytest.approx(by_hand, rel=1e-6)


def test_embedding_penalty_pulls_neighbours_and_pushes_random_pairs_to_the_margin():
    torch.manual_seed(0)
    h, edges = torch.randn(8, 3), torch.tensor([[0, 1, 2], [3, 4, 5]])
    a, b = torch.tensor([0, 6, 7, 1]), torch.tensor([6, 7, 2, 1])
    x = h.numpy()
    pull = np.mean([((x[i] - x[j]) ** 2).sum() for i, j in edges.T.tolist()])
    pairs = zip(a.tolist(), b.tolist(), strict=True)
    push = np.mean([max(0.0, 2.5 - np.linalg.norm(x[i] - x[j])) ** 2 for i, j in pairs])
    assert embedding_penalty(h, edges, a, b, margin=2.5).item() == pytest.approx(pull + push, rel=1e-6)
    same = torch.tensor([[0], [0]])  # a self-pair pulls nothing; a pair beyond the margin pushes nothing
    assert embedding_penalty(torch.tensor([[0.0], [5.0]]), same, torch.tensor([0]), torch.tensor([1]), 1.0) == 0


def test_sbm_graphs_by_name_and_by_parameters():
    a = load_graph(GraphDataConfig(name="sbm_a", seed=3))
    ref = make_sbm_bow(3, deg=4, h=0.7, rho=0.3)  # spec §5.1 config A
    assert (a.adj != ref.adj).nnz == 0 and (a.features != ref.features).nnz == 0
    assert np.array_equal(a.train_idx, ref.train_idx) and np.array_equal(a.test_idx, ref.test_idx)
    sbm = dataclasses.replace(SBM_A, n=400, per_class=5, num_val=40, num_test=100)
    g = load_graph(GraphDataConfig(name="sbm", seed=3, sbm=sbm))
    assert g.num_nodes == 400 and len(g.train_idx) == 20 and len(g.val_idx) == 40 and len(g.test_idx) == 100


@pytest.mark.parametrize("bad", [{"h": 1.5}, {"classes": 1}, {"n": 100, "per_class": 20}, {"rho": -0.1}])
def test_sbm_parameters_that_cannot_make_a_graph_are_refused(bad):
    with pytest.raises(ConfigError, match="data.sbm"):
        SBMConfig(**bad)
