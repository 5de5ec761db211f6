"""Full-ranking metrics: hand-computed values (spec §12 test 2), ties, history masking, torchmetrics parity,
the geometric mean of Table 2.7 (test 3)."""

from __future__ import annotations

import math

import pytest
import torch

from genfeat.metrics.ranking import full_ranking_metrics, geometric_mean, history_mass, target_ranks


def _scores_with_rank(rank: int, n: int = 30, target: int = 5) -> torch.Tensor:
    """Distinct scores where `target` has the given rank among items 1..n-1 and item 0 scores highest."""
    others = [i for i in range(1, n) if i != target]
    s = torch.zeros(n)
    order = others[: rank - 1] + [target] + others[rank - 1:]
    for r, item in enumerate(order):
        s[item] = 100.0 - r
    s[0] = 1000.0  # padding never ranks
    return s


def test_hand_computed_hit_and_ndcg():
    scores = torch.stack([_scores_with_rank(r) for r in (1, 3, 10, 11)])
    target = torch.full((4,), 5)
    ranks = target_ranks(scores, target)
    assert ranks.tolist() == [1, 3, 10, 11]
    per = [full_ranking_metrics(scores[i: i + 1], target[i: i + 1]) for i in range(4)]
    assert [p["hit@10"] for p in per] == [1, 1, 1, 0]
    for p, want in zip(per, [1.0, 0.5, 1 / math.log2(11), 0.0], strict=True):
        assert p["ndcg@10"] == pytest.approx(want)
    assert per[1]["mrr@10"] == pytest.approx(1 / 3)
    mean = full_ranking_metrics(scores, target)
    assert mean["hit@10"] == pytest.approx(0.75)


def test_history_items_are_candidates_unless_masked():
    s = _scores_with_rank(4)[None]  # items ranked above the target: three non-target items
    above = [i for i in range(1, 30) if s[0, i] > s[0, 5]]
    hist = torch.tensor([above[:2] + [5]])  # two of them (and the target itself) in the history
    assert target_ranks(s, torch.tensor([5]), history=hist).item() == 4
    assert target_ranks(s, torch.tensor([5]), history=hist, mask_history=True).item() == 2
    with pytest.raises(ValueError, match="history"):
        target_ranks(s, torch.tensor([5]), mask_history=True)


def test_ties_pessimistic_by_default():
    s = torch.zeros(1, 8)
    s[0, 3] = s[0, 4] = s[0, 6] = 1.0
    assert target_ranks(s, torch.tensor([4])).item() == 3
    assert target_ranks(s, torch.tensor([4]), ties="optimistic").item() == 1
    flat = torch.zeros(2, 50)  # a constant scorer hits nothing
    assert full_ranking_metrics(flat, torch.tensor([3, 7]))["hit@10"] == 0.0


def test_matches_torchmetrics_retrieval_metrics():
    tm = pytest.importorskip("torchmetrics.retrieval")
    torch.manual_seed(0)
    B, n = 64, 200
    scores = torch.randn(B, n)
    target = torch.randint(1, n, (B,))
    ours = full_ranking_metrics(scores, target, ks=(5, 10))
    preds = scores[:, 1:].reshape(-1)  # item 0 excluded
    rel = torch.zeros(B, n, dtype=torch.bool)
    rel[torch.arange(B), target] = True
    rel = rel[:, 1:].reshape(-1)
    idx = torch.arange(B).repeat_interleave(n - 1)
    for k in (5, 10):
        assert ours[f"hit@{k}"] == pytest.approx(float(tm.RetrievalHitRate(top_k=k)(preds, rel, indexes=idx)))
        assert ours[f"ndcg@{k}"] == pytest.approx(float(tm.RetrievalNormalizedDCG(top_k=k)(preds, rel, indexes=idx)),
                                                  abs=1e-6)
        assert ours[f"mrr@{k}"] == pytest.approx(float(tm.RetrievalMRR(top_k=k)(preds, rel, indexes=idx)), abs=1e-6)


def test_geometric_mean_table_2_7():
    assert geometric_mean([29.65, 3.64, 21.81, 50.94]) == pytest.approx(18.61, abs=0.005)
    assert geometric_mean([16.46, 2.01, 16.86, 37.97]) == pytest.approx(12.06, abs=0.005)
    with pytest.raises(ValueError):
        geometric_mean([1.0, 0.0])


def test_history_mass():
    logp = torch.log_softmax(torch.tensor([[0.0, 1.0, 2.0, 3.0]]), -1)
    hist = torch.tensor([[2, 2, 0]])
    assert history_mass(logp, hist).item() == pytest.approx(logp.exp()[0, 2].item())


def test_float64_scores_keep_their_precision():
    s = torch.full((1, 6), 0.1, dtype=torch.float64)
    s[0, 2] += 1e-12  # equal in float32
    assert target_ranks(s, torch.tensor([2])).item() == 1


def test_metric_sanity_on_the_synthetic_world():
    """Spec §11: the true distribution (ties broken at random) beats a random scorer by far; a random scorer's
    Hit@10 is about 10 / 300."""
    import numpy as np

    from genfeat.data.seqrec_synthetic import make_world

    data, truth = make_world("A", n_users=400, seed=0)
    target = torch.from_numpy(data.valid.target)
    rng = np.random.default_rng(0)
    oracle = full_ranking_metrics(torch.from_numpy(truth * (1 + 1e-6 * rng.random(truth.shape))), target)
    rand = full_ranking_metrics(torch.rand(len(target), truth.shape[1], dtype=torch.float64), target)
    assert abs(rand["hit@10"] - 10 / 300) < 0.03
    assert oracle["hit@10"] > 0.7 and oracle["ndcg@10"] > 5 * rand["ndcg@10"]
