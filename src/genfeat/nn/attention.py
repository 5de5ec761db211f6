"""Causal multi-head self-attention on `F.scaled_dot_product_attention` (flash / memory-efficient
kernels where the device has them), with an optional key / value cache for generation.

The cache of a layer is one tensor (B, P, 2, H, dh): the keys and values of the P earlier positions. With a
cache, the T new queries (positions P..P+T-1) attend to all P + T keys with query i seeing keys <= P + i (an
explicit mask: SDPA's `is_causal` aligns the triangle to the top-left corner, which is wrong when T < P + T).

`key_mask` (B, P + T), True = a real position, hides padding (left-padded prompts of a batch) as keys, combined
with the causal triangle; a query always sees itself, so a padding query's row is never empty (its output is
not used)."""

from __future__ import annotations

import torch
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

    def forward(self, x: Tensor, cache: Tensor | None = None, key_mask: Tensor | None = None
                ) -> Tensor | tuple[Tensor, Tensor]:
        """x (B, T, D) -> (B, T, D); with `cache` (B, P, 2, H, dh), also the cache extended by the T new
        positions, (B, P + T, 2, H, dh). `key_mask` (B, P + T): see the module docstring."""
        B, T, D = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.n_head, D // self.n_head)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # 3 × (B, H, T, dh)
        drop = self.dropout if self.training else 0.0
        P = 0 if cache is None else cache.size(1)
        if cache is not None:
            new = torch.cat([cache, qkv[:, :, 1:]], 1)  # (B, P + T, 2, H, dh)
            k, v = new.permute(2, 0, 3, 1, 4)  # 2 × (B, H, P + T, dh)
        if cache is None and key_mask is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=drop)  # (B, H, T, dh)
        else:
            keys, queries = torch.arange(P + T, device=x.device), P + torch.arange(T, device=x.device)[:, None]
            mask = keys <= queries  # (T, P + T)
            if key_mask is not None:
                if key_mask.shape != (B, P + T):
                    raise ValueError(f"key_mask {tuple(key_mask.shape)} is not (batch, cached + new) = {(B, P + T)}")
                mask = (mask & key_mask[:, None, None, :]) | (keys == queries)  # (B, 1, T, P + T)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=drop)
        y = self.resid_drop(self.proj(y.transpose(1, 2).reshape(B, T, D)))
        return y if cache is None else (y, new)
