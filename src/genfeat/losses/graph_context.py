"""Context loss of Planetoid with negative sampling (thesis Y Eq. 3.12)."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor


def context_loss(emb: Tensor, ctx: Tensor, gamma: Tensor, reduction: str = "sum") -> Tensor:
    """-log sigma(gamma * w_c^T e_i) over a batch of triples.

    emb: (N, d) embeddings e_i; ctx: (N, d) context vectors w_c; gamma: (N,) in {+1, -1}. Uses
    `logsigmoid`, finite for any score. reduction "sum" (the thesis/code learning rates go with a
    sum over the batch), "mean" or "none".
    """
    loss = -F.logsigmoid(gamma * (emb * ctx).sum(-1))
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()
