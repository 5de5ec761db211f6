"""Permutation-LM masks and target sampling (spec xlnet.md §6.3 test 1, §2.5, §2.9)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from genfeat.data.plm import perm_mask_from_ranks, plm_inputs, sample_ranks, span_targets


def visible(perm_mask: torch.Tensor, content: bool) -> torch.Tensor:
    """What a stream may see: the query mask's complement, plus the diagonal for the content stream."""
    see = ~perm_mask
    return see | torch.eye(perm_mask.size(-1), dtype=torch.bool) if content else see


def test_thesis_example_order_3_2_4_1():
    """Figures 2.8/2.9: order [3, 2, 4, 1] (1-based), every token a target."""
    order = [3, 2, 4, 1]
    rank = torch.tensor([[order.index(p) for p in (1, 2, 3, 4)]])
    pm = perm_mask_from_ranks(rank, torch.ones(1, 4, dtype=torch.bool))[0]
    content = {p + 1: {j + 1 for j in range(4) if visible(pm, True)[p, j]} for p in range(4)}
    query = {p + 1: {j + 1 for j in range(4) if visible(pm, False)[p, j]} for p in range(4)}
    assert content == {1: {1, 2, 3, 4}, 2: {2, 3}, 3: {3}, 4: {2, 3, 4}}
    assert query == {1: {2, 3, 4}, 2: {3}, 3: set(), 4: {2, 3}}


def test_full_order_masks_equal_rank_comparisons():
    g = torch.Generator().manual_seed(0)
    rank = sample_ranks(5, 9, generator=g)
    pm = perm_mask_from_ranks(rank, torch.ones(5, 9, dtype=torch.bool))
    rp, rj = rank[:, :, None], rank[:, None, :]
    assert torch.equal(visible(pm, True), rj <= rp)  # G^h = 1[rank(j) <= rank(p)]
    assert torch.equal(visible(pm, False), rj < rp)  # G^g = 1[rank(j) < rank(p)]


def test_partial_prediction_masks():
    """Reference masks: non-targets see exactly the non-targets (of their part); nobody sees a target of equal or
    higher rank except the content stream's own diagonal; functional tokens take part but are never targets."""
    g = torch.Generator().manual_seed(1)
    B, T = 4, 12
    tokens = torch.randint(5, 30, (B, T), generator=g)
    tokens[:, 5], tokens[:, -1] = 1, 2  # <sep>, <cls>
    out = plm_inputs(tokens, 3, np.random.default_rng(0), g, functional_ids=(1, 2))
    pm, tgt = out["perm_mask"], out["is_target"]
    func = (tokens == 1) | (tokens == 2)
    assert not (tgt & func).any() and torch.equal(tgt.sum(1), torch.full((B,), 3))
    ctx = ~tgt & ~func
    see_q = visible(pm, False)
    for b in range(B):
        for p in ctx[b].nonzero()[:, 0]:
            assert torch.equal(see_q[b, p], ctx[b])  # a context token sees exactly the context
        for p in (tgt[b] | func[b]).nonzero()[:, 0]:
            assert see_q[b, p][ctx[b]].all()  # targets and functional tokens see the whole context
    # the ordered tokens see each other along one strict total order (no cycle, no mutual visibility); a target
    # never sees itself in the query stream, a functional token does
    for b in range(B):
        ordered = (tgt[b] | func[b]).nonzero()[:, 0]
        sub = see_q[b][ordered][:, ordered]
        n = len(ordered)
        off = sub & ~torch.eye(n, dtype=torch.bool)
        assert not (off & off.T).any()
        assert torch.equal(off.sum(1).sort().values, torch.arange(n))  # + no mutual pair: a transitive tournament
        assert torch.equal(sub.diagonal(), func[b][ordered])
    assert out["labels"].shape == (B, 3) and torch.equal(out["labels"], tokens.gather(1, out["target_pos"]))


def test_reuse_part_never_sees_the_rest():
    """Pitfall 8: the cached (reuse) rows may not attend the rest; the rest sees the whole reuse part."""
    g = torch.Generator().manual_seed(2)
    tokens = torch.randint(0, 50, (3, 16), generator=g)
    out = plm_inputs(tokens, 6, np.random.default_rng(1), g, reuse_len=8)
    see = visible(out["perm_mask"], True)
    assert not see[:, :8, 8:].any()
    assert see[:, 8:, :8].all()
    assert torch.equal(out["is_target"][:, :8].sum(1), torch.full((3,), 3))  # quota split by part length


def test_span_targets_count_and_word_alignment():
    rng = np.random.default_rng(0)
    starts = np.zeros(200, bool)
    starts[::3] = True  # three pieces per word
    for _ in range(20):
        m = span_targets(200, 30, rng, is_start=starts)
        assert m.sum() == 30
        begins = np.flatnonzero(m & ~np.r_[False, m[:-1]])
        assert starts[begins].mean() > 0.9  # spans begin at word starts (only top-up singles may not)
    allowed = np.ones(50, bool)
    allowed[::5] = False
    m = span_targets(50, 20, rng, allowed=allowed)
    assert m.sum() == 20 and not (m & ~allowed).any()
    with pytest.raises(ValueError, match="exceeds"):
        span_targets(10, 9, rng, allowed=allowed[:10])


def test_span_lengths_follow_one_over_n():
    rng = np.random.default_rng(3)
    lengths = []
    for _ in range(300):
        m = span_targets(600, 100, rng)
        edges = np.diff(np.r_[0, m.astype(int), 0])
        lengths += list(np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1))
    counts = np.bincount(lengths, minlength=6)[1:6] / len(lengths)
    p = 1 / np.arange(1, 6)
    assert counts[0] > counts[1] > counts[2] > counts[4]  # ∝ 1/n (adjacent spans may merge)
    assert abs(np.mean(lengths) - (p * np.arange(1, 6)).sum() / p.sum()) < 0.5
