"""Causal multi-head self-attention on `F.scaled_dot_product_attention` (flash / memory-efficient
kernels where the device has them)."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.nn.dropout import Dropout


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_head: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        if d_model % n_head:
            raise ValueError(f"d_model={d_model} is not divisible by n_head={n_head}")
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.proj = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = dropout
        self.resid_drop = Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, D // self.n_head).permute(2, 0, 3, 1, 4)  # 3×(B,H,T,dh)
        y = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0
        )  # (B, H, T, dh)
        y = y.transpose(1, 2).reshape(B, T, D)
        return self.resid_drop(self.proj(y))
