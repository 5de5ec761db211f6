"""Input embeddings: adaptive input representations (Baevski & Auli 2018) as used by Transformer-XL
on WikiText-103 / One Billion Word (thesis Y §2.1.4; spec §2.7).

The vocabulary (sorted by frequency) is split by `cutoffs` into clusters; cluster c has width
d_embed / div_val^c and a projection to d_proj. With no cutoffs and div_val = 1 this is a plain
embedding (with a projection only when d_embed != d_proj). The output is scaled by sqrt(d_proj),
as in the reference. Parameter names (`emb_layers`, `emb_projs`) follow the reference / HF.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def cluster_bounds(n_token: int, cutoffs: tuple[int, ...]) -> list[int]:
    if list(cutoffs) != sorted(set(cutoffs)) or (cutoffs and not 0 < cutoffs[0] and cutoffs[-1] < n_token):
        raise ValueError(f"cutoffs {cutoffs} must increase strictly within (0, {n_token})")
    return [0, *cutoffs, n_token]


class AdaptiveEmbedding(nn.Module):
    def __init__(self, n_token: int, d_embed: int, d_proj: int, cutoffs: tuple[int, ...] = (), div_val: int = 1):
        super().__init__()
        self.n_token, self.d_embed, self.d_proj, self.div_val = n_token, d_embed, d_proj, div_val
        self.bounds = cluster_bounds(n_token, cutoffs)
        self.scale = d_proj**0.5
        self.emb_layers = nn.ModuleList()
        self.emb_projs = nn.ParameterList()
        if div_val == 1:
            self.emb_layers.append(nn.Embedding(n_token, d_embed))
            if d_proj != d_embed:
                self.emb_projs.append(nn.Parameter(torch.empty(d_proj, d_embed)))
        else:
            for i in range(len(self.bounds) - 1):
                d_i = d_embed // div_val**i
                self.emb_layers.append(nn.Embedding(self.bounds[i + 1] - self.bounds[i], d_i))
                self.emb_projs.append(nn.Parameter(torch.empty(d_proj, d_i)))

    def forward(self, ids: Tensor) -> Tensor:  # (B, L) -> (B, L, d_proj)
        if self.div_val == 1:
            out = self.emb_layers[0](ids)
            if len(self.emb_projs):
                out = F.linear(out, self.emb_projs[0])
            return out * self.scale
        flat = ids.reshape(-1)
        out = torch.zeros(flat.numel(), self.d_proj, dtype=self.emb_projs[0].dtype, device=ids.device)
        for i, (lo, hi) in enumerate(zip(self.bounds[:-1], self.bounds[1:], strict=True)):
            idx = ((flat >= lo) & (flat < hi)).nonzero().squeeze(-1)
            if idx.numel():
                out.index_copy_(0, idx, F.linear(self.emb_layers[i](flat[idx] - lo), self.emb_projs[i]).to(out.dtype))
        return out.view(*ids.shape, self.d_proj) * self.scale
