"""Algorithm 2 (context sampling) against exact answers (spec planetoid.md §5.3, tests 1-6)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import binomtest, chisquare

from genfeat.errors import ConfigError
from genfeat.models.planetoid.sampler import ContextSampler, SamplerConfig


def _graph(edges, n, weights=None, directed=False):
    w = np.ones(len(edges)) if weights is None else np.asarray(weights, float)
    u, v = np.array(edges).T
    a = sp.csr_matrix((w, (u, v)), shape=(n, n))
    return a if directed else a + a.T


def _sampler(adj, labels=None, labeled=None, **cfg):
    n = adj.shape[0]
    labels = np.zeros(n, np.int64) if labels is None else labels
    labeled = np.arange(0) if labeled is None else labeled
    return ContextSampler(adj, labels, labeled, SamplerConfig(**cfg), seed=0)


def test_walks_follow_edges_have_q_nodes_and_skip_isolated_starts():
    rng = np.random.default_rng(0)
    edges = [tuple(e) for e in rng.integers(0, 40, (80, 2)) if e[0] != e[1]]
    adj = _graph(edges, 45)  # nodes 40..44 isolated
    s = _sampler(adj, q=7)
    walks = s.random_walks(5000).numpy()
    assert walks.shape == (5000, 7) and (walks >= 0).all()
    dense = adj.toarray()
    assert (dense[walks[:, :-1], walks[:, 1:]] > 0).all()
    deg = dense.sum(1)
    assert (deg[walks[:, 0]] > 0).all()
    starts = np.bincount(walks[:, 0], minlength=45)[deg > 0]
    assert chisquare(starts).pvalue > 1e-3  # uniform over nodes that can start a walk


def test_transition_law_matches_edge_weights():
    """From two hubs: node 0 (its CSR row first) and node 4 (its row after those of nodes 0-3, so a wrong offset
    into the cumulative weights shows)."""
    adj = _graph([(0, 1), (0, 2), (0, 3), (4, 5), (4, 6), (4, 7)], 8, weights=[1, 2, 7, 6, 3, 1])
    walks = _sampler(adj, q=11).random_walks(40000).numpy()
    for hub, law in ((0, [0.1, 0.2, 0.7]), (4, [0.6, 0.3, 0.1])):
        after = walks[:, 1:][walks[:, :-1] == hub]
        counts = np.bincount(after, minlength=hub + 4)[hub + 1:hub + 4]
        assert counts.sum() > 50000 and counts.sum() == len(after)
        assert chisquare(counts, counts.sum() * np.array(law)).pvalue > 1e-3


@pytest.mark.parametrize("self_pairs,inclusive", [(False, False), (True, False), (False, True)])
def test_window_rule_on_a_directed_cycle(self_pairs, inclusive):
    n, q, d = 25, 10, 3  # directed cycle: the walk is S_t = S_1 + t - 1 (mod n)
    adj = _graph([(i, (i + 1) % n) for i in range(n)], n, directed=True)
    s = _sampler(adj, q=q, d=d, include_self_pairs=self_pairs, window_inclusive=inclusive)
    i, c = s.graph_pairs(20000)
    off = (c - i).numpy() % n
    off = np.where(off > n // 2, off - n, off)
    allowed = {k for k in range(-(q - 1), q) if (abs(k) <= d if inclusive else abs(k) < d) and (k != 0 or self_pairs)}
    assert set(np.unique(off).tolist()) == allowed  # within the window, and every admissible offset occurs


def test_dead_ends_of_directed_graphs_are_redrawn():
    adj = _graph([(0, 1), (1, 2), (3, 4), (4, 5), (5, 6), (6, 7), (7, 3)], 8, directed=True)
    s = _sampler(adj, q=4, d=2)
    i, c = s.graph_pairs(3000)
    assert ((c - i).abs() <= 4).all()
    walks = s.random_walks(2000).numpy()
    short = walks[:, 0] <= 1
    assert (walks[short, -1] == -1).all()  # 0 -> 1 -> 2 stops at 2


def test_negatives_are_uniform_and_independent_of_the_node():
    rng = np.random.default_rng(1)
    adj = _graph([tuple(e) for e in rng.integers(0, 30, (90, 2)) if e[0] != e[1]], 30)
    s = _sampler(adj, r1=0.0, r2=1.0)
    i, c, gamma, graph = s.sample(60000)
    assert (gamma == -1).all() and graph.all()
    counts = np.bincount(c.numpy(), minlength=30)
    assert chisquare(counts).pvalue > 1e-3
    table = np.histogram2d(i.numpy() % 3, c.numpy() % 3, bins=3)[0]
    from scipy.stats import chi2_contingency

    assert chi2_contingency(table).pvalue > 1e-3


def test_mixing_rates_r1_r2():
    adj = _graph([(k, k + 1) for k in range(19)], 20)
    labels = np.arange(20) % 3
    s = _sampler(adj, labels, np.arange(12), r1=5 / 6, r2=0.3)
    _, _, gamma, graph = s.sample(100000)
    pos = int((gamma == 1).sum())
    assert binomtest(pos, 100000, 5 / 6).pvalue > 1e-3
    assert binomtest(int(graph.sum()), 100000, 0.3).pvalue > 1e-3


@pytest.mark.parametrize("mode", ["pairs", "anchor"])
def test_label_context_pairs(mode):
    adj = _graph([(0, 1)], 30)
    labels = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 0] * 3)
    labeled = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    s = _sampler(adj, labels, labeled, r2=0.0, label_pairs=mode)
    i, c, gamma, graph = s.sample(40000)
    i, c, gamma = i.numpy(), c.numpy(), gamma.numpy()
    assert not graph.any()
    assert np.isin(i, labeled).all() and np.isin(c, labeled).all()
    assert (labels[i][gamma == 1] == labels[c][gamma == 1]).all() and (i[gamma == 1] != c[gamma == 1]).all()
    assert (labels[i][gamma == -1] != labels[c][gamma == -1]).all()
    pos_i, pos_c = i[gamma == 1], c[gamma == 1]
    pair_counts = np.bincount(pos_i * 31 + pos_c)
    pair_counts = pair_counts[pair_counts > 0]
    if mode == "pairs":  # uniform over every ordered same-label pair of distinct nodes
        y = labels[labeled]
        assert len(pair_counts) == sum(int((y == k).sum()) * (int((y == k).sum()) - 1) for k in range(3))
        assert chisquare(pair_counts).pvalue > 1e-3
    else:  # anchors uniform over labeled nodes that have a partner
        assert chisquare(np.bincount(pos_i)[labeled]).pvalue > 1e-3


def test_configuration_errors():
    with pytest.raises(ConfigError):
        SamplerConfig(r1=1.5)
    with pytest.raises(ConfigError):
        SamplerConfig(label_pairs="other")
    s = _sampler(sp.csr_matrix((5, 5)), r2=1.0)
    with pytest.raises(ConfigError, match="no edges"):
        s.sample(10)
