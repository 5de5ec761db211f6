"""The unsupervised facet scores (spec multi-facet-embedding.md §7, §11 tests 14-18, 20): SC, importance weights,
SIF weights and component removal, WMD, the STSB-Low cut and the greedy summariser."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from genfeat.analysis.facet_scores import (
    importance,
    principal_component,
    remove_component,
    sc_distance,
    sif_weights,
    summarise,
    wmd,
)
from genfeat.tasks.similarity import low_half


def test_sc_self_distance_and_symmetry():
    q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((6, 3)))
    f = q.T  # 3 orthonormal facets
    for lam in (0.2, 0.4, 1.0):
        assert sc_distance(f, f, lam) == pytest.approx(2 * (lam / 2) ** 2, abs=1e-8)  # per column (λ/2)², twice
    g = np.random.default_rng(1).standard_normal((4, 6))
    assert sc_distance(f, g) == pytest.approx(sc_distance(g, f), abs=1e-10)
    assert sc_distance(f, g) > sc_distance(f, f)


def test_importance_weights_eq_3_6():
    e1, e2 = np.eye(3)[0], np.eye(3)[1]
    words = np.stack([e1, e2, -e1, np.zeros(3)])
    facets = np.stack([e1, (e1 + e2) / np.sqrt(2)])
    np.testing.assert_allclose(importance(words, facets), [1 + 1 / np.sqrt(2), 1 / np.sqrt(2), 0, 0], atol=1e-12)
    np.testing.assert_allclose(importance(words, facets, "max"), [1, 1 / np.sqrt(2), 0, 0], atol=1e-12)
    with pytest.raises(ValueError, match="reduce"):
        importance(words, facets, "mean")


def test_sif_weights_and_component_removal():
    np.testing.assert_allclose(sif_weights(np.array([0.0, 1e-4, 1.0])), [1.0, 0.5, 1e-4 / (1 + 1e-4)])
    rng = np.random.default_rng(2)
    ref = rng.standard_normal((20, 5)) + 3.0  # a shared direction dominates
    u = principal_component(ref)
    out = remove_component(rng.standard_normal((7, 5)), u)
    np.testing.assert_allclose(out @ u, np.zeros(7), atol=1e-12)
    assert abs(np.linalg.norm(u) - 1) < 1e-12


def test_wmd_cases():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 5))
    assert wmd(a, a[::-1]) == pytest.approx(0.0, abs=1e-10)
    x, y = rng.standard_normal((1, 5)), rng.standard_normal((1, 5))
    cos = float(x[0] @ y[0] / np.linalg.norm(x) / np.linalg.norm(y))
    assert wmd(x, y) == pytest.approx(1 - cos)
    two = np.stack([np.eye(5)[0], np.eye(5)[1]])
    # all the mass on the first word: the distance is its distance to the other bag's only word
    assert wmd(two, np.eye(5)[:1], mass1=np.array([1.0, 0.0])) == pytest.approx(0.0, abs=1e-12)
    assert wmd(two, np.eye(5)[:1]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="no word vector"):
        wmd(np.zeros((2, 5)), a)


def test_stsb_low_cut():
    assert sorted(low_half([5, 1, 3, 2, 4, 0]).tolist()) == [1, 3, 5]


def test_greedy_summariser_picks_the_covering_sentences():
    groups = np.eye(6)[:3]  # three orthogonal word groups
    doc = np.repeat(groups, 2, axis=0) + 0.01 * np.random.default_rng(4).standard_normal((6, 6))
    reps = [np.eye(6)[3:4], groups[1:2], groups[0:1], np.eye(6)[4:5], groups[2:3]]  # 0 and 3: distractors
    chosen, objective = summarise(doc, np.ones(6), reps, n=3)
    assert sorted(chosen) == [1, 2, 4]
    assert all(b >= a for a, b in pairwise(objective))
    long = [groups[1:2], np.concatenate([groups[0:1], groups[2:3]])]  # one long sentence covers two groups
    assert summarise(doc, np.ones(6), long, n=1)[0] == [1]
    assert summarise(doc, np.ones(6), long, n=1, per_length=[1, 40])[0] == [0]  # W Emb: gain per word


def test_batched_sc_distances_equal_one_pair_at_a_time():
    from genfeat.analysis.facet_scores import sc_distance, sc_distances

    rng = np.random.default_rng(0)
    pairs = [(rng.standard_normal((k1, 6)), rng.standard_normal((k2, 6))) for k1, k2 in ((3, 5), (1, 4), (7, 2),
                                                                                        (4, 4), (2, 9))]
    got = sc_distances(pairs, iters=3000, tol=1e-12, batch=3)
    want = [sc_distance(a, b, iters=3000, tol=1e-12) for a, b in pairs]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
