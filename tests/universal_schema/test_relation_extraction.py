"""Table 3.5's protocol on held-out heads (`tasks.relation_extraction`): candidates, thresholds tuned on valid,
micro P / R / F1, and the max ensemble (spec §11.11)."""

import numpy as np
import pytest

from genfeat.data.universal_schema import PATTERN, RELATION, SchemaMatrix
from genfeat.errors import DataError
from genfeat.tasks.relation_extraction import RelationExtraction


def _matrix():
    """Patterns p0..p3, relations r0 (row 4) and r1 (row 5); pairs 0-1 train, 2-4 valid, 5-7 test."""
    vocab = ["<pad>", "<eos>", "<unk>", "a", "b", "c", "d", "r0", "r1"]
    rows = [(3,), (4,), (5,), (6,), (7,), (8,)]
    types = np.array([PATTERN] * 4 + [RELATION] * 2)
    text = [(0, 0), (1, 1), (0, 2), (1, 3), (2, 4), (0, 5), (1, 6), (2, 7), (3, 7)]
    kb = [(4, 0), (5, 1)]
    held = np.array([(4, 2), (5, 3), (4, 5), (5, 6), (5, 7)])
    return SchemaMatrix("m", vocab, rows, types, ["a", "b", "c", "d", "r0", "r1"], [f"h{j}\tt{j}" for j in range(8)],
                        np.array(sorted(text + kb)), pair_split=np.array([0, 0, 1, 1, 1, 2, 2, 2], np.int8),
                        held_out=held)


def test_candidates_scores_thresholds_and_f1():
    task = RelationExtraction(_matrix())
    assert task.stats() == {"valid_candidates": 3, "valid_gold": 2, "test_candidates": 3, "test_gold": 3}
    sim = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5], [0.1, 0.95], [1, 1], [1, 1]])  # rows x (r0, r1)
    s = task.scores(sim, "test")
    np.testing.assert_array_equal(s, [[0.9, 0.1], [0.2, 0.8], [0.5, 0.95]])  # pair 7: the best of p2 and p3
    valid = task.scores(sim, "valid")  # pairs 2 (p0), 3 (p1), 4 (p2); gold r0: pair 2, r1: pair 3
    theta = task.thresholds(valid, task.gold["valid"])
    np.testing.assert_array_equal(theta, [0.9, 0.8])
    m = task.evaluate(sim)
    assert (m["valid_p"], m["valid_r"], m["valid_f1"]) == (1.0, 1.0, 1.0)
    # test: r0 >= 0.9 extracts pair 5 (gold); r1 >= 0.8 extracts pairs 6 (gold) and 7 (gold) -> 3 / 3
    assert (m["test_p"], m["test_r"]) == (1.0, 1.0)
    sim2 = sim.copy()
    sim2[3, 1] = 0.7  # pair 7's best r1 score drops below the threshold: a miss
    m2 = task.evaluate(sim2)
    assert m2["test_p"] == 1.0 and m2["test_r"] == pytest.approx(2 / 3)
    assert m2["test_f1"] == pytest.approx(0.8)


def test_ties_share_a_threshold_and_a_relation_without_valid_gold_extracts_nothing():
    scores = np.array([[0.5, 0.3], [0.5, 0.2], [0.1, 0.1]])
    gold = np.array([[True, False], [False, False], [False, False]])
    theta = RelationExtraction.thresholds(scores, gold)
    assert theta[0] == 0.5 and np.isinf(theta[1])  # both 0.5s go in together (F1 2/3)
    assert RelationExtraction.prf(scores, gold, theta) == pytest.approx({"p": 0.5, "r": 1.0, "f1": 2 / 3})
    # a tie whose first member alone would look best: 0.5 lets all three in (F1 2/3), so 0.9 (F1 2/3, first) wins
    scores, gold = np.array([[0.9], [0.5], [0.5], [0.5]]), np.array([[True], [True], [False], [False]])
    assert RelationExtraction.thresholds(scores, gold)[0] == 0.9


def test_ensemble_is_the_elementwise_max():
    task = RelationExtraction(_matrix())
    a = np.random.default_rng(0).random((6, 2))
    b = np.random.default_rng(1).random((6, 2))
    b[0] = -np.inf  # a pattern the second scorer cannot score (USchema on an unseen pattern)
    ens = task.ensemble(a, b)
    assert ens == task.evaluate_scores(np.maximum(task.scores(a, "valid"), task.scores(b, "valid")),
                                       np.maximum(task.scores(a, "test"), task.scores(b, "test")))
    assert ens == task.ensemble(b, a)
    assert task.ensemble(a, np.full((6, 2), -np.inf)) == task.evaluate(a)  # -inf: the other score alone


def test_a_held_out_pairs_kb_cell_may_not_train():
    m = _matrix()
    with pytest.raises(DataError, match="KB cell among the training cells"):
        SchemaMatrix(m.name, m.vocab, m.rows, m.row_types, m.row_names, m.pair_names,
                     np.concatenate([m.cells, [[4, 5]]]), pair_split=m.pair_split, held_out=m.held_out)


def test_a_matrix_without_held_out_pairs_is_refused():
    m = _matrix()
    m.pair_split = None
    with pytest.raises(ValueError, match="held-out"):
        RelationExtraction(m)
