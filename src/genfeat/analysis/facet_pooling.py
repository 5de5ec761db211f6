"""Diagnostics of Multi-CLS BERT's fine-tuning pooler (thesis C §5.2, Eq. 5.4): how large and how spread the pooled
vector is under the mean-subtracted aggregation and under the plain sum, and how alike the K facet states are
(`benchmarks/multi_cls_pooling.py` measures them on trained runs)."""

from __future__ import annotations

import torch

from genfeat.models.multi_cls.model import FacetPooler


@torch.no_grad()
def pooled_stats(h: torch.Tensor, weight: torch.Tensor) -> dict[str, float]:
    """h (B, K, D) facet states, weight (K, D, D) the W_k -> sizes and spreads of both pooled vectors, each from the
    fine-tuning pooler itself (`FacetPooler`, biases 0 as at the start of fine-tuning)."""
    pooled = {}
    for agg in ("reparam", "sum"):
        pooler = FacetPooler(h.size(1), h.size(2), agg, bias=False)
        pooler.init_from_heads(weight)
        pooled[agg] = pooler(h)  # (B, D)
    reparam, summed = pooled["reparam"], pooled["sum"]

    def spread(c: torch.Tensor) -> float:
        return float((c - c.mean(0)).norm(dim=-1).mean() / c.norm(dim=-1).mean().clamp_min(1e-12))

    u = torch.nn.functional.normalize(h, dim=-1)
    sim = u @ u.transpose(1, 2)  # (B, K, K)
    k = h.size(1)
    off = sim[:, ~torch.eye(k, dtype=torch.bool)].mean() if k > 1 else torch.tensor(1.0)
    return {"norm_reparam": float(reparam.norm(dim=-1).mean()), "norm_sum": float(summed.norm(dim=-1).mean()),
            "spread_reparam": spread(reparam), "spread_sum": spread(summed), "facet_cosine": float(off)}
