"""Ranking with several relevant candidates (`metrics.multi_positive`): equal to trec_eval (through pytrec_eval) and
scikit-learn on tie-free scores, the spec's toy recall, and the tie rules by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from genfeat.metrics.multi_positive import multi_positive_metrics

pytrec_eval = pytest.importorskip("pytrec_eval")


def _queries(seed: int = 0, b: int = 12, n: int = 40):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(b, n, generator=g, dtype=torch.float64)  # continuous: no ties
    relevant = torch.rand(b, n, generator=g) < torch.linspace(0.02, 0.5, b)[:, None]
    relevant[:, 0] = True  # every query has a positive
    candidates = torch.rand(b, n, generator=g) > 0.1
    candidates[:, 0] = True
    return scores, relevant, candidates


def test_equal_to_trec_eval():
    scores, relevant, cand = _queries()
    qrels = {f"q{i}": {f"d{j}": 1 for j in range(scores.size(1)) if relevant[i, j] and cand[i, j]}
             for i in range(len(scores))}
    run = {f"q{i}": {f"d{j}": float(scores[i, j]) for j in range(scores.size(1)) if cand[i, j]}
           for i in range(len(scores))}
    measures = {"map", "ndcg", "recip_rank", "recall_5", "recall_20", "ndcg_cut_10"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    ours = multi_positive_metrics(scores, relevant, cand, ks=(5, 10, 20))
    for theirs, mine in (("map", "ap"), ("ndcg", "ndcg"), ("recip_rank", "mrr"), ("recall_5", "r@5"),
                         ("recall_20", "r@20"), ("ndcg_cut_10", "ndcg@10")):
        got = ours[mine].numpy()
        want = np.array([ref[f"q{i}"][theirs] for i in range(len(scores))])
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=mine)  # trec_eval prints 4 decimals


def test_equal_to_scikit_learn_with_ties_for_auc():
    from sklearn.metrics import average_precision_score, ndcg_score, roc_auc_score

    scores, relevant, cand = _queries(1)
    ours = multi_positive_metrics(scores, relevant, cand)
    tied = (scores * 2).round() / 2  # many ties: AUC counts each as one half, as roc_auc_score does
    ours_tied = multi_positive_metrics(tied, relevant, cand)
    for i in range(len(scores)):
        c = cand[i]
        y, s, t = relevant[i][c].numpy(), scores[i][c].numpy(), tied[i][c].numpy()
        assert ours["ap"][i].item() == pytest.approx(average_precision_score(y, s), abs=1e-12)
        assert ours["auc"][i].item() == pytest.approx(roc_auc_score(y, s), abs=1e-12)
        assert ours["ndcg"][i].item() == pytest.approx(ndcg_score(y[None], s[None]), abs=1e-12)
        assert ours_tied["auc"][i].item() == pytest.approx(roc_auc_score(y, t), abs=1e-12)


def test_the_spec_toy_recall_both_conventions():
    """Ranking [1, 0, 1, 0, 0, 1] (relevance in rank order), N = 2: plain recall 1/3, capped 1/2."""
    rel = torch.tensor([[1, 0, 1, 0, 0, 1]], dtype=torch.bool)
    scores = torch.tensor([[6.0, 5, 4, 3, 2, 1]])
    m = multi_positive_metrics(scores, rel, ks=(2,))
    assert m["r@2"].item() == pytest.approx(1 / 3) and m["rcap@2"].item() == pytest.approx(1 / 2)
    assert m["ap"].item() == pytest.approx((1 / 1 + 2 / 3 + 3 / 6) / 3)
    assert m["mrr@2"].item() == 1.0


def test_ties_and_queries_without_positives():
    """A constant scorer over 4 candidates, 2 relevant: pessimistic positions 3, 4 (AP (1/3 + 2/4) / 2), optimistic
    1, 2 (AP 1); AUC one half either way. A query without positives is NaN (the task's mean skips it: below)."""
    scores = torch.zeros(2, 4)
    rel = torch.tensor([[1, 1, 0, 0], [0, 0, 0, 0]], dtype=torch.bool)
    pess = multi_positive_metrics(scores, rel, ks=(2,))
    opt = multi_positive_metrics(scores, rel, ks=(2,), ties="optimistic")
    assert pess["ap"][0].item() == pytest.approx((1 / 3 + 2 / 4) / 2) and opt["ap"][0].item() == pytest.approx(1.0)
    assert pess["r@2"][0].item() == 0.0 and opt["r@2"][0].item() == 1.0
    assert pess["auc"][0].item() == opt["auc"][0].item() == 0.5
    assert all(math.isnan(v[1].item()) for v in pess.values())
    assert not any(math.isnan(v[0].item()) for v in pess.values())
    with pytest.raises(ValueError, match="NaN"):
        multi_positive_metrics(torch.tensor([[math.nan, 0.0]]), torch.tensor([[True, False]]))
    with pytest.raises(ValueError, match=r"\(B, n\)"):
        multi_positive_metrics(torch.zeros(2, 3), torch.zeros(2, 4, dtype=torch.bool))


def test_non_candidates_never_rank():
    """Masking a candidate that outscores the positive moves the positive up one place."""
    scores = torch.tensor([[3.0, 2.0, 1.0]])
    rel = torch.tensor([[False, True, False]])
    assert multi_positive_metrics(scores, rel)["mrr"].item() == 0.5
    assert multi_positive_metrics(scores, rel, torch.tensor([[False, True, True]]))["mrr"].item() == 1.0


def test_the_ranking_task_averages_queries_and_honours_exclusions():
    """`tasks.ranking.Ranking` over a fixed score table: its evaluation is the mean of the per-query metrics over
    the queries with a positive; an excluded candidate (the query itself) never ranks; wrong shapes are errors."""
    from torch import nn

    from genfeat.tasks.ranking import Ranking, RankingSplit

    table = torch.tensor([[9.0, 3.0, 2.0, 1.0], [1.0, 2.0, 9.0, 3.0], [0.0, 1.0, 2.0, 3.0]])
    split = RankingSplit(relevant=[np.array([1, 3]), np.array([3]), np.array([], dtype=np.int64)],
                         excluded=[np.array([0]), np.array([2]), np.array([0])])
    task = Ranking({"test": split}, 4, lambda m, s, q: table[q], ks=(1,), batch_size=2)
    got = task.evaluate(nn.Linear(1, 1), "test")
    # query 0 without candidate 0: ranks 1 (id 1), 3 (id 3) -> AP (1 + 2/3) / 2; query 1 without 2: id 3 first
    assert got["test_ap"] == pytest.approx(((1 + 2 / 3) / 2 + 1.0) / 2)
    assert got["test_r@1"] == pytest.approx((0.5 + 1.0) / 2) and got["test_rcap@1"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="candidate ids"):
        Ranking({"test": RankingSplit([np.array([4])])}, 4, lambda m, s, q: table[q])
    bad = Ranking({"test": split}, 4, lambda m, s, q: table[q, :3])
    with pytest.raises(ValueError, match="scorer returned"):
        bad.evaluate(nn.Linear(1, 1), "test")


def test_average_ties_equal_scikit_learn():
    """`ties="average"` (the thesis's citation evaluation): AP, NDCG (full and @k) and AUC equal scikit-learn's on
    scores with many ties, ties among relevant candidates included (a truncated max-facet score is 0 for many)."""
    from sklearn.metrics import average_precision_score, ndcg_score, roc_auc_score

    scores, relevant, cand = _queries(2)
    tied = (scores * 1.5).round().clamp(min=0)  # about half the candidates tie at 0, the rest in a few groups
    ours = multi_positive_metrics(tied, relevant, cand, ks=(3, 10), ties="average")
    assert "mrr" not in ours
    for i in range(len(scores)):
        c = cand[i]
        y, t = relevant[i][c].numpy(), tied[i][c].numpy()
        assert ours["ap"][i].item() == pytest.approx(average_precision_score(y, t), abs=1e-12)
        assert ours["auc"][i].item() == pytest.approx(roc_auc_score(y, t), abs=1e-12)
        assert ours["ndcg"][i].item() == pytest.approx(ndcg_score(y[None], t[None]), abs=1e-12)
        for k in (3, 10):
            assert ours[f"ndcg@{k}"][i].item() == pytest.approx(ndcg_score(y[None], t[None], k=k), abs=1e-12)
    untied = multi_positive_metrics(scores, relevant, cand, ks=(5,), ties="average")  # no ties: the usual rules
    plain = multi_positive_metrics(scores, relevant, cand, ks=(5,))
    for key in ("ap", "ndcg", "auc", "r@5", "ndcg@5"):
        torch.testing.assert_close(untied[key], plain[key])


def test_average_ties_recall_is_the_mean_over_tie_orders():
    """R@k and Rcap@k under `average`: the mean over every order of the tied candidates (enumerated)."""
    import itertools

    s = torch.tensor([[3.0, 1.0, 1.0, 1.0, 0.0, 0.0, 2.0]], dtype=torch.float64)
    y = torch.tensor([[0, 1, 1, 0, 1, 0, 0]], dtype=torch.bool)
    got = multi_positive_metrics(s, y, ks=(2, 3, 4), ties="average")
    for k in (2, 3, 4):
        hits = []
        for perm in itertools.permutations(range(7)):  # a random order inside each group of equal scores
            order = sorted(range(7), key=lambda j: (-float(s[0, j]), perm[j]))
            hits.append(sum(bool(y[0, j]) for j in order[:k]))
        assert got[f"r@{k}"].item() == pytest.approx(np.mean(hits) / 3, abs=1e-12)
        assert got[f"rcap@{k}"].item() == pytest.approx(np.mean(hits) / min(3, k), abs=1e-12)
