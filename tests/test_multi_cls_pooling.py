"""analysis.facet_pooling: the pooled vectors it measures are the classifier's (Eq. 5.4 and the sum)."""

from __future__ import annotations

import pytest
import torch

from genfeat.analysis.facet_pooling import pooled_stats


def test_pooled_stats_are_eq_5_4_and_the_sum():
    torch.manual_seed(0)
    h, w = torch.randn(6, 3, 8), torch.randn(3, 8, 8)
    s = pooled_stats(h, w)
    # Eq. 5.4 written out: c = Σ_k (W_k - W̄) h_k; the ablation: c = Σ_k W_k h_k (x W^T, as nn.Linear)
    reparam = torch.einsum("bkd,ked->be", h, w - w.mean(0, keepdim=True))
    summed = torch.einsum("bkd,ked->be", h, w)
    assert s["norm_reparam"] == pytest.approx(float(reparam.norm(dim=-1).mean()), rel=1e-5)
    assert s["norm_sum"] == pytest.approx(float(summed.norm(dim=-1).mean()), rel=1e-5)
    collapsed = pooled_stats(h[:, :1].expand(6, 3, 8), w)  # Eq. 5.4 of identical facets is exactly zero
    assert collapsed["norm_reparam"] == pytest.approx(0.0, abs=1e-5) and collapsed["facet_cosine"] == pytest.approx(1.0)
