"""Attention over a source sequence and the copy mechanism of pointer-generator decoders (thesis Y §3.2.4,
Eq. 3.7; See et al. 2017, Gu et al. 2016), with the per-example extended vocabulary.

    scores = BilinearAttention(d_query, d_key)(queries, keys, key_mask)  # (B, T', T) logits, -inf at padding
    attn = masked_softmax(scores, key_mask[:, None, :])                  # (B, T', T), exactly 0 at padding

    ext, oov = extend_ids(src_ids, n_vocab, pad_mask)   # src ids >= n_vocab (outside the output vocabulary) ->
                                                        #   n_vocab + j, j = the order of first occurrence of the
                                                        #   row's distinct out-of-vocabulary words; oov (B, n_ext)
                                                        #   their source ids (-1 where a row has fewer)
    p = copy_mixture(p_vocab, attn, ext, gate, n_ext)   # g p_vocab (padded with zeros to n_vocab + n_ext)
                                                        #   + (1 - g) Σ_{i: ext_i = w} attn_i
Extended ids of the output map back to source ids with `from_extended(ext_out, oov, n_vocab)`.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def masked_softmax(scores: Tensor, mask: Tensor, dim: int = -1) -> Tensor:
    """softmax over `dim` with the positions where `mask` is False at exactly 0 (mask broadcasts to scores)."""
    return scores.masked_fill(~mask, float("-inf")).softmax(dim).masked_fill(~mask, 0.0)


class BilinearAttention(nn.Module):
    """score(q, k) = qᵀ W k (Luong's "general" attention)."""

    def __init__(self, d_query: int, d_key: int):
        super().__init__()
        self.w = nn.Linear(d_key, d_query, bias=False)

    def forward(self, queries: Tensor, keys: Tensor, key_mask: Tensor) -> Tensor:
        """queries (B, T', dq), keys (B, T, dk), key_mask (B, T) -> (B, T', T) logits with -inf at padding."""
        scores = queries @ self.w(keys).transpose(1, 2)  # (B, T', T)
        return scores.masked_fill(~key_mask[:, None, :], float("-inf"))


def extend_ids(src_ids: Tensor, n_vocab: int, mask: Tensor) -> tuple[Tensor, Tensor]:
    """src_ids (B, T) in a source vocabulary whose first `n_vocab` ids are the output vocabulary; mask (B, T) True =
    real. Returns (ext (B, T): the output-vocabulary id, or n_vocab + j for the row's j-th distinct
    out-of-vocabulary word, padding -> 0; oov (B, n_ext): those words' source ids, -1 past a row's count)."""
    T = src_ids.size(1)
    oov = mask & (src_ids >= n_vocab)  # (B, T)
    same = (src_ids[:, :, None] == src_ids[:, None, :]) & oov[:, None, :]  # (B, T, T): t' holds t's word
    first = torch.where(oov, same.float().argmax(-1), torch.arange(T, device=src_ids.device))  # first occurrence
    is_first = oov & (first == torch.arange(T, device=src_ids.device))
    rank = is_first.long().cumsum(1) - 1  # (B, T) j of each first occurrence
    ext = torch.where(oov, n_vocab + rank.gather(1, first), torch.where(mask, src_ids, torch.zeros_like(src_ids)))
    n_ext = int(is_first.sum(1).max()) if oov.any() else 0
    table = torch.full((src_ids.size(0), n_ext + 1), -1, dtype=src_ids.dtype, device=src_ids.device)
    table.scatter_(1, torch.where(is_first, rank, torch.full_like(rank, n_ext)), src_ids)  # column n_ext: a bin
    table[:, n_ext] = -1
    return ext, table[:, :n_ext]


def from_extended(ext: Tensor, oov: Tensor, n_vocab: int) -> Tensor:
    """Extended output ids (B, L) or (B,) -> source ids: ids < n_vocab unchanged, n_vocab + j -> oov[b, j]."""
    if ext.dim() == 1:
        return from_extended(ext[:, None], oov, n_vocab)[:, 0]
    if not oov.size(1):
        return ext
    copied = oov.gather(1, (ext - n_vocab).clamp(0, oov.size(1) - 1))
    return torch.where(ext < n_vocab, ext, copied)


def copy_mixture(p_vocab: Tensor, attn: Tensor, ext: Tensor, gate: Tensor, n_ext: int) -> Tensor:
    """Eq. 3.7. p_vocab (B, L, V) a distribution over the output vocabulary; attn (B, L, T) over source positions;
    ext (B, T) the positions' extended ids; gate (B, L, 1) in [0, 1]. Returns (B, L, V + n_ext): a distribution
    over the extended vocabulary, a word repeated m times in the source receiving the sum of its m copy
    probabilities."""
    B, L, V = p_vocab.shape
    copy = p_vocab.new_zeros(B, L, V + n_ext).scatter_add_(2, ext[:, None, :].expand(B, L, -1), attn)
    return gate * nn.functional.pad(p_vocab, (0, n_ext)) + (1 - gate) * copy
