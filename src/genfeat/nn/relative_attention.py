"""Transformer-XL relative multi-head attention (thesis Y §2.1.3, "Relative Positional Encodings").

    A_ij = (q_i + u)·k_j  +  (q_i + v)·W_{k,R} R_{i-j}          (terms (a)+(c) and (b)+(d))
    score = A / sqrt(d_h), causal mask (+ same_length), softmax over keys, dropout, · v, W_o

Queries come from the current segment only; keys/values from [SG(memory); segment]. The (b)+(d)
term is computed once per distance and re-indexed with the pad-reshape `rel_shift` (thesis Eq. for
B, spec §2.5), taken as a strided view -- no Python loop, no O(L·K) projections, no copy; the shift and the
mask are one pass (`rel_shift_masked`). The scores add the content term to that bias in one `baddbmm`
(`attend_with_bias`; SDPA off the CPU).

Layouts are batch first: h (B, L, d), memory (B, M', d), R (K, d) with rows ordered by distance
K-1, ..., 0 (the order the shift requires), scores (B, H, L, K).

Parameter names follow the authors' code / HF TransfoXL (`qkv_net`, `r_net`, `o_net`, `layer_norm`,
`r_w_bias` = u, `r_r_bias` = v) so checkpoints map one to one.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.nn.dropout import Dropout, dropout


def sinusoid_table(pos: Tensor, d: int) -> Tensor:
    """R_δ = [sin(δ ω_0..ω_{d/2-1}) | cos(δ ω_0..)] with ω_k = 10000^{-2k/d}, concatenated halves as
    the reference and HF (not interleaved). pos (K,) float -> (K, d)."""
    dtype = pos.dtype if pos.is_floating_point() else torch.get_default_dtype()
    inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2, device=pos.device, dtype=dtype) / d))  # (d/2,)
    angles = pos.to(dtype)[:, None] * inv_freq[None, :]  # (K, d/2)
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


def relative_positions(klen: int, clamp_len: int = -1, device: torch.device | None = None) -> Tensor:
    """Distances [K-1, ..., 0], clamped at clamp_len when clamp_len > 0 (as the reference and HF)."""
    pos = torch.arange(klen - 1, -1, -1.0, device=device)
    return pos.clamp_(max=clamp_len) if clamp_len > 0 else pos


def rel_shift(x: Tensor) -> Tensor:
    """x (..., L, K) with column k <-> distance K-1-k  ->  out[..., i, j] = x[..., i, j + L - 1 - i].

    Exact for every unmasked entry j <= K - L + i; the other entries hold junk and must be masked
    after the shift (spec §2.5). The spec's pad-one-column / re-view (K+1, L) / drop-the-first-row trick
    amounts to reading row i from flat offset L - 1 + i (K - 1) of each (L, K) block, so it is taken here as
    one strided view, no copy (rows overlap by one element: read it, do not write to it).
    """
    *lead, L, K = x.shape
    x = x.contiguous()
    return x.as_strided((*lead, L, K), (*x.stride()[:-2], K - 1, 1), x.storage_offset() + L - 1)


class _RelShiftMasked(torch.autograd.Function):
    """`rel_shift` then `masked_fill(mask, -inf)` in one pass, with the inverse shift as its backward."""

    @staticmethod
    def forward(ctx, x: Tensor, mask: Tensor) -> Tensor:
        ctx.save_for_backward(mask)
        return torch.where(mask, float("-inf"), rel_shift(x))

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:
        # d out[i, j] / d x[i, j + L - 1 - i] = 1 off the mask. Write the masked gradient at flat offset L - 1 of
        # a zeroed (L K + L - 1) buffer per block and read row i from offset i (K + 1): entry x[i, k] then picks
        # grad[i, k - L + 1 + i]; columns k < L - 1 - i land on masked (future) entries of row i - 1, or on the
        # zero padding for i = 0, so they get 0 as they must, provided the mask covers every future key.
        (mask,) = ctx.saved_tensors
        *lead, L, K = grad.shape
        buf = grad.new_zeros(*lead, L * K + L - 1)
        torch.where(mask, grad.new_zeros(()), grad, out=buf[..., L - 1 :].view(*lead, L, K))
        return buf.as_strided((*lead, L, K), (*buf.stride()[:-1], K + 1, 1), buf.storage_offset()), None


def rel_shift_masked(x: Tensor, mask: Tensor) -> Tensor:
    """`rel_shift(x)` with -inf where `mask` (broadcastable to x, True = forbidden) is set, as a fresh tensor.
    The mask must forbid every future key j > K - L + i (the entries the shift fills with junk)."""
    return _RelShiftMasked.apply(x, mask)


def attend_with_bias(q: Tensor, k: Tensor, v: Tensor, bias: Tensor, scale: float, dropatt: float = 0.0) -> Tensor:
    """softmax(scale q k^T + bias) v with a differentiable additive bias (the relative-position scores, -inf where
    masked). q (B, H, L, dh), k, v (B, H, K, dh), bias (B, H, L, K) or broadcastable (L, K) -> (B, H, L, dh).

    On CPU, `F.scaled_dot_product_attention` runs its math fallback when the mask needs a gradient (the fused CPU
    kernel has none), whose safe softmax adds three passes over the scores; here the scores are one `baddbmm`
    (bias + scale q k^T), then softmax, dropout and one `bmm`. Rows must keep at least one key. Other devices use
    SDPA, whose CUDA memory-efficient kernel differentiates the bias."""
    if q.device.type != "cpu":
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropatt, scale=scale)
    B, H, L, dh = q.shape
    K = k.size(2)
    if bias.dim() == 4:
        bias = bias.expand(B, H, L, K).reshape(B * H, L, K)
    scores = torch.baddbmm(bias, q.reshape(B * H, L, dh), k.reshape(B * H, K, dh).transpose(1, 2), alpha=scale)
    p = dropout(torch.softmax(scores, -1), dropatt)
    return torch.bmm(p, v.reshape(B * H, K, dh)).view(B, H, L, dh)


def bidirectional_positions(qlen: int, klen: int, attn_type: str = "bi", clamp_len: int = -1,
                            device: torch.device | None = None) -> Tensor:
    """XLNet's relative position sequence (spec xlnet.md §2.6): [K, K-1, ..., -L+1] (length K+L, `bi`) or
    [K, ..., 0] (length K+1, `uni`), clamped to [-clamp_len, clamp_len] when clamp_len > 0. Keys may lie to the
    right of the query, so distances of both signs occur."""
    end = -qlen if attn_type == "bi" else -1
    pos = torch.arange(klen, end, -1, device=device).float()
    return pos.clamp_(-clamp_len, clamp_len) if clamp_len > 0 else pos


def rel_shift_bi(x: Tensor, klen: int) -> Tensor:
    """x (..., L, R), column c <-> position sequence entry K - c (`bidirectional_positions`), ->
    out[..., i, j] = x[..., i, j + L - i], i.e. distance (K - L + i) - j, for j < klen.

    Every entry is exact for R = K + L (bi: no junk, both signs of the distance); with R = K + 1 (uni) the
    entries j > K - L + i (future keys) hold junk and must be masked. This is the spec's re-view (R, L), drop the
    first row, re-view (L, R - 1), keep the first klen columns (§2.6), taken as one strided view without a copy:
    flat offset L + i (R - 1) + j of each (L, R) block (rows do not overlap, R - 1 >= klen)."""
    *lead, L, R = x.shape
    x = x.contiguous()
    return x.as_strided((*lead, L, klen), (*x.stride()[:-2], R - 1, 1), x.storage_offset() + L)


def rel_gather(x: Tensor, pos: Tensor, qlen: int, klen: int) -> Tensor:
    """`rel_shift_bi` for query rows that sit at arbitrary positions `pos` (B, P) of the current segment (the
    query stream of the predicted tokens): x (B, H, P, R) -> out[b, h, t, j] = x[b, h, t, j + L - pos[b, t]],
    junk (clamped index) where that exceeds R - 1 (uni: future keys, masked by the caller)."""
    B, H, P, R = x.shape
    idx = torch.arange(klen, device=x.device) + qlen - pos[:, :, None]  # (B, P, K)
    return x.gather(-1, idx.clamp_(max=R - 1)[:, None].expand(B, H, P, klen))


def causal_memory_mask(qlen: int, mlen: int, same_length: bool = False, mem_len: int = 0,
                       device: torch.device | None = None) -> Tensor:
    """Boolean (L, K) mask, True = forbidden: key j > mlen + i (future). With `same_length`
    (PyTorch-reference convention) also j <= i + mlen - mem_len, so every query sees exactly mem_len
    keys once the memory is full."""
    ones = torch.ones(qlen, qlen + mlen, dtype=torch.bool, device=device)
    mask = torch.triu(ones, diagonal=1 + mlen)
    if same_length:
        klen = qlen + mlen
        shift = qlen - (klen - mem_len) if klen > mem_len else qlen
        mask = mask | torch.tril(ones, diagonal=-shift)
    return mask


class RelPartialLearnableMultiHeadAttn(nn.Module):
    """Multi-head relative attention + residual + LayerNorm (post-LN, or pre-LN if asked)."""

    def __init__(self, n_head: int, d_model: int, d_head: int, dropout: float, dropatt: float = 0.0,
                 pre_lnorm: bool = False, relative: bool = True):
        super().__init__()
        self.n_head, self.d_head, self.pre_lnorm = n_head, d_head, pre_lnorm
        self.qkv_net = nn.Linear(d_model, 3 * n_head * d_head, bias=False)
        # W_{k,R}; without it (relative=False) the scores are content-only q·k: the vanilla-Transformer ablation
        self.r_net = nn.Linear(d_model, n_head * d_head, bias=False) if relative else None
        self.o_net = nn.Linear(n_head * d_head, d_model, bias=False)
        self.layer_norm = nn.LayerNorm(d_model)
        self.drop = Dropout(dropout)
        self.dropatt = dropatt
        self.scale = 1.0 / math.sqrt(d_head)

    def scores_bias(self, q: Tensor, r: Tensor, r_r_bias: Tensor, mask: Tensor) -> Tensor:
        """Shifted, scaled (b)+(d) term with the mask folded in: (B, H, L, K) additive bias."""
        r_head = self.r_net(r.to(self.r_net.weight.dtype)).view(r.size(0), self.n_head, self.d_head)  # (K, H, dh)
        q_v = (q + r_r_bias[None, :, None]) * self.scale  # scale the small (B, H, L, dh) side, not the scores
        bd = q_v @ r_head.permute(1, 2, 0)  # (B, H, L, K), column k <-> distance K-1-k
        return rel_shift_masked(bd, mask)

    def forward(self, h: Tensor, r: Tensor | None, r_w_bias: Tensor | None, r_r_bias: Tensor | None, mask: Tensor,
                mem: Tensor | None = None) -> Tensor:
        B, L, _ = h.shape
        H, dh = self.n_head, self.d_head
        cat = h if mem is None or mem.size(1) == 0 else torch.cat([mem, h], dim=1)  # (B, K, d)
        if self.pre_lnorm:
            cat = self.layer_norm(cat)
        K = cat.size(1)
        w = self.qkv_net.weight  # rows [q; k; v], the reference's fused layout
        q = F.linear(cat[:, -L:], w[: H * dh]).view(B, L, H, dh).transpose(1, 2)  # (B, H, L, dh): current segment
        w_k, w_v = F.linear(cat, w[H * dh :]).chunk(2, dim=-1)  # (B, K, H·dh) each: memory + segment
        k = w_k.view(B, K, H, dh).transpose(1, 2)  # (B, H, K, dh)
        v = w_v.view(B, K, H, dh).transpose(1, 2)
        if self.r_net is None:  # content-only scores
            bias = torch.zeros(mask.shape, dtype=q.dtype, device=q.device).masked_fill_(mask, float("-inf"))
        else:
            bias = self.scores_bias(q, r, r_r_bias, mask)  # (B, H, L, K)
            q = q + r_w_bias[None, :, None].to(q.dtype)
        attn = attend_with_bias(q, k, v, bias.to(q.dtype), self.scale, self.dropatt if self.training else 0.0)
        out = self.drop(self.o_net(attn.transpose(1, 2).reshape(B, L, H * dh)))  # (B, L, d)
        return h + out if self.pre_lnorm else self.layer_norm(h + out)
