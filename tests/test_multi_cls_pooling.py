"""benchmarks/multi_cls_pooling: the pooled vectors it measures are the classifier's (Eq. 5.4 and the sum)."""

from __future__ import annotations

import pytest
import torch
from benchmarks.multi_cls_pooling import pooled_stats

from genfeat.models.multi_cls.model import FacetPooler


def test_pooled_stats_match_the_fine_tuning_pooler():
    torch.manual_seed(0)
    h = torch.randn(6, 3, 8)
    pooler = {a: FacetPooler(3, 8, a) for a in ("reparam", "sum")}
    w = torch.randn(3, 8, 8)
    for p in pooler.values():
        p.init_from_heads(w)  # biases 0, as at the start of fine-tuning
    s = pooled_stats(h, w)
    with torch.no_grad():
        assert s["norm_reparam"] == pytest.approx(float(pooler["reparam"](h).norm(dim=-1).mean()), rel=1e-5)
        assert s["norm_sum"] == pytest.approx(float(pooler["sum"](h).norm(dim=-1).mean()), rel=1e-5)
    collapsed = pooled_stats(h[:, :1].expand(6, 3, 8), w)  # Eq. 5.4 of identical facets is exactly zero
    assert collapsed["norm_reparam"] == pytest.approx(0.0, abs=1e-5) and collapsed["facet_cosine"] == pytest.approx(1.0)
