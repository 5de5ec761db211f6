"""Planetoid training needs the graph, and its model selection never sees test labels (thesis Y §3.3.3).

The graph-only graph: the stochastic block model of spec §5.1 with rho = 0 (every node's words drawn uniformly,
so the features say nothing about the label) and strong homophily. Only the context loss can carry labels to
unlabeled nodes there, so Planetoid-T / -G without context steps stay near chance (0.25)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from genfeat.data.graph_synthetic import make_sbm_bow
from genfeat.models.planetoid import Planetoid, PlanetoidConfig, PlanetoidTrainConfig, SamplerConfig
from genfeat.models.planetoid.train import make_sampler
from genfeat.paradigms.planetoid import run_method, train_planetoid
from genfeat.recipes import planetoid as P

FAST = PlanetoidTrainConfig(warmup_steps=600, rounds=300, eval_every=25)


@pytest.fixture(scope="module")
def graph_only():
    return make_sbm_bow(seed=0, n=600, deg=6, h=0.9, rho=0.0, per_class=10, num_val=100, num_test=300)


def run(data, method, train=FAST, seed=0):
    cfg = P.PlanetoidRunConfig(method=method, train=train, seed=seed)
    return run_method(cfg, data)


def test_features_alone_are_at_chance_on_the_graph_only_graph(graph_only):
    res = run(graph_only, "feat_lr")
    assert res["test_acc"] < 0.4  # the control: nothing to learn from the features


@pytest.mark.parametrize("method", ["planetoid_t", "planetoid_g"])
def test_planetoid_learns_from_the_graph_alone(graph_only, method):
    res = run(graph_only, method)
    assert res["test_acc"] > 0.6, res["test_acc"]
    no_context = dataclasses.replace(FAST, warmup_steps=0, t2=0.0)
    assert run(graph_only, method, no_context)["test_acc"] < 0.45  # the same method without context steps


def test_inductive_context_steps_train_the_context_branch(graph_only, tmp_path):
    """Planetoid-I's embedding of a node is computed from its features; the context loss is what trains that
    branch, and its loss must fall."""
    data = graph_only
    model = Planetoid(dataclasses.replace(PlanetoidConfig(), variant="I"), data.num_nodes, data.num_features,
                        data.num_classes)
    before = [p.detach().clone() for p in model.context_parameters()]
    sampler = make_sampler(data, SamplerConfig(), "I", seed=0)
    from genfeat.losses.graph_context import context_loss
    from genfeat.nn.sparse_linear import SparseRows

    x = SparseRows(data.features)

    def held_out_ctx_loss():
        g = make_sampler(data, SamplerConfig(), "I", seed=123)
        i, c, gamma, _ = g.sample(2000)
        with torch.no_grad():
            return context_loss(model.context_embed(i, x), model.context(c), gamma, reduction="mean").item()

    start = held_out_ctx_loss()
    train_planetoid(model, data, sampler, FAST, tmp_path, seed=0)
    assert all(not torch.equal(a, b) for a, b in zip(before, model.context_parameters(), strict=True))
    assert held_out_ctx_loss() < start - 0.05


@pytest.mark.parametrize("method", ["planetoid_t", "planetoid_i"])
def test_model_selection_never_sees_test_labels(method):
    """Scrambling the test labels must not change which round is kept, nor its validation accuracy."""
    data = make_sbm_bow(seed=1, n=600, per_class=10, num_val=100, num_test=300)
    short = dataclasses.replace(FAST, warmup_steps=200, rounds=150, eval_every=10)
    res = run(data, method, short)
    scrambled = dataclasses.replace(data, labels=data.labels.copy())
    rng = np.random.default_rng(0)
    scrambled.labels[data.test_idx] = rng.permutation(data.labels[data.test_idx])[::-1].copy()
    assert not np.array_equal(scrambled.labels, data.labels)
    res2 = run(scrambled, method, short)
    assert res2["best_round"] == res["best_round"] and res2["valid_acc"] == res["valid_acc"]
    assert [h["valid_acc"] for h in res2["history"]] == [h["valid_acc"] for h in res["history"]]


def test_context_budget_scales_with_the_graph_and_warns_when_thin(capsys):
    from genfeat.models.planetoid.train import context_budget

    default = PlanetoidTrainConfig()
    assert context_budget(default, 2149) == (2000, 3000)  # the kernel-docs graph: the thesis's budget
    assert context_budget(default, 57000) == (38000, 57000)  # x19
    assert capsys.readouterr().err == ""
    assert context_budget(PlanetoidTrainConfig(warmup_steps=10, rounds=20), 57000) == (10, 20)
    assert "triples per node" in capsys.readouterr().err


def test_inductive_held_out_nodes_never_enter_a_triple(graph_only):
    """Planetoid-I: the test nodes (and with sampler.unseen=valid+test the validation nodes too) are never a walk
    node, a context or a negative; T sees every node."""
    from genfeat.errors import ConfigError

    data = graph_only
    for unseen, held in (("test", data.test_idx), ("valid+test", np.union1d(data.test_idx, data.val_idx))):
        sampler = make_sampler(data, SamplerConfig(unseen=unseen), "I", seed=0)
        seen = set()
        for _ in range(200):
            i, c, _, _ = sampler.sample(50)
            seen |= set(i.tolist()) | set(c.tolist())
        assert not seen & set(held.tolist()) and len(seen) > 0
    assert set(make_sampler(data, SamplerConfig(unseen="valid+test"), "T", seed=0).context_nodes.tolist()) \
        == set(range(data.num_nodes))
    with pytest.raises(ConfigError, match="unseen"):
        SamplerConfig(unseen="valid")
