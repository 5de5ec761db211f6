"""Unsupervised graph terms that regularise a node classifier (thesis Y §3.3.4's baselines; spec `planetoid.md`
§4.2), each over a list of node pairs `edges` (2, E):

    manifold_penalty(logits, edges)          mean over edges of ||softmax(z_i) - softmax(z_j)||^2: ManiReg's graph
                                             Laplacian term (Belkin et al. 2006) on the predicted distributions
    embedding_penalty(h, edges, a, b, m)     mean over edges of ||h_i - h_j||^2 (neighbours pulled together) plus
                                             mean over random pairs (a_k, b_k) of max(0, m - ||h_a - h_b||)^2 (pushed
                                             beyond the margin m): SemiEmb's embedding loss (Weston et al. 2008)

Shapes: logits (N, C), h (N, d), edges (2, E), a and b (P,) node ids. Each returns a scalar; the method weighs it.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor


def manifold_penalty(logits: Tensor, edges: Tensor) -> Tensor:
    p = F.softmax(logits, -1)  # (N, C)
    return (p[edges[0]] - p[edges[1]]).pow(2).sum(-1).mean()


def embedding_penalty(h: Tensor, edges: Tensor, a: Tensor, b: Tensor, margin: float) -> Tensor:
    pull = (h[edges[0]] - h[edges[1]]).pow(2).sum(-1).mean()
    push = F.relu(margin - (h[a] - h[b]).norm(dim=-1)).pow(2).mean()
    return pull + push
