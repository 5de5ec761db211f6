"""Per-facet magnitude heads (thesis C §3.4.2, Eq. 3.15, Figure 3.8; spec citation-prediction.md §5): each facet
gets one scalar per output kind (authorship ρ, citation τ), a prior on how many columns it interacts with.

    h_k = TM([p_k ; d_k])          k = 1..K: a 2-layer transformer over the K slots (BERT-style post-LN blocks,
                                   dropout 0.3), p_k the facet, d_k the decoder's input slot
    m_k^(o) = MLP_o(h_k)           one 3-layer network per output: Linear(h -> h/2) ReLU Linear(h/2 -> h/2) ReLU
                                   Linear(h/2 -> 1), h = |E| + d_model
    p_k^(o) = m_k^(o) p_k          Eq. 3.15

The magnitudes are unconstrained as in the reference implementation (a negative one flips the facet; Eq. 3.13
clips only the score); `positive=True` passes them through a softplus. The attention heads are the largest
divisor of h not above `n_head`.

Shapes: facets (B, K, |E|), slots (B, K, d) -> magnitudes (B, K, n_out).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.models.bert.config import BertConfig
from genfeat.models.bert.model import BertLayer


class MagnitudeHeads(nn.Module):
    def __init__(self, d_facet: int, d_slot: int, n_out: int = 2, n_layer: int = 2, n_head: int = 4,
                 dropout: float = 0.3, positive: bool = False):
        super().__init__()
        h = d_facet + d_slot
        heads = max(i for i in range(1, n_head + 1) if h % i == 0)
        block = BertConfig(vocab_size=1, d_model=h, n_layer=1, n_head=heads, d_inner=2 * h, max_len=1,
                           dropout=dropout, attn_dropout=dropout)
        self.layers = nn.ModuleList([BertLayer(block) for _ in range(n_layer)])
        self.mlps = nn.ModuleList([nn.Sequential(nn.Linear(h, h // 2), nn.ReLU(), nn.Linear(h // 2, h // 2), nn.ReLU(),
                                                 nn.Linear(h // 2, 1)) for _ in range(n_out)])
        self.positive = positive

    def forward(self, facets: Tensor, slots: Tensor, slot_mask: Tensor | None = None) -> Tensor:
        x = torch.cat([facets, slots], -1)  # (B, K, h)
        keys = None if slot_mask is None else slot_mask[:, None, None, :]
        for layer in self.layers:
            x = layer(x, keys)
        m = torch.cat([mlp(x) for mlp in self.mlps], -1)  # (B, K, n_out)
        return F.softplus(m) if self.positive else m
