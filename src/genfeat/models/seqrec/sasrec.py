"""SASRec encoder (Kang & McAuley 2018) as RecBole implements it, the encoder of thesis C §2.5
(spec sequential-recommendation.md §3.1).

    x = Dropout(LayerNorm(E[i_t] + P[t]))                         learned positions, eps 1e-12
    n_layers post-LN blocks: x = LN(x + Drop(W_O · MHA(x)));  x = LN(x + Drop(W_2 GELU(W_1 x)))
    attention: causal AND key-padding (keys holding item 0 are masked), dropout on the weights

Inputs are right-padded item ids (B, L); a query at a padded slot still attends to the real items before
it, so no row is fully masked. Returns `BackboneOutput(hidden = top layer, all_hidden = (embedding
output, block 1, ..., block n))`, the layers Mi reads (H = n_layers). Init: N(0, 0.02) for every Linear
and Embedding weight (the padding row included, as RecBole's `_init_weights`), zero biases, LayerNorm 1/0.
Attention runs on `F.scaled_dot_product_attention`.

Deviations: none (GELU is the exact erf form; dropout after the attention output and after W_2 only, as RecBole).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.nn.dropout import Dropout
from genfeat.nn.outputs import BackboneOutput


class SASRecBlock(nn.Module):
    def __init__(self, d: int, n_heads: int, d_inner: int, dropout: float, attn_dropout: float):
        super().__init__()
        if d % n_heads:
            raise ValueError(f"hidden size {d} is not divisible by n_heads={n_heads}")
        self.n_heads, self.attn_dropout = n_heads, attn_dropout
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.ff1, self.ff2 = nn.Linear(d, d_inner), nn.Linear(d_inner, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)
        self.drop = Dropout(dropout)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        B, L, D = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.n_heads, D // self.n_heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                           dropout_p=self.attn_dropout if self.training else 0.0)
        x = self.ln1(x + self.drop(self.out(a.transpose(1, 2).reshape(B, L, D))))
        return self.ln2(x + self.drop(self.ff2(F.gelu(self.ff1(x)))))  # no dropout after GELU (RecBole)


class SASRecEncoder(nn.Module):
    def __init__(self, n_items: int, max_len: int = 50, d: int = 64, n_layers: int = 2, n_heads: int = 2,
                 d_inner: int = 256, dropout: float = 0.2, attn_dropout: float = 0.2, init_range: float = 0.02):
        super().__init__()
        self.max_len, self.n_layers, self.init_range = max_len, n_layers, init_range
        self.item_embedding = nn.Embedding(n_items + 1, d, padding_idx=0)
        self.position_embedding = nn.Embedding(max_len, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.drop = Dropout(dropout)
        self.blocks = nn.ModuleList([SASRecBlock(d, n_heads, d_inner, dropout, attn_dropout)
                                     for _ in range(n_layers)])
        self.apply(self.init_weights)

    def init_weights(self, m: nn.Module) -> None:
        """RecBole SASRec._init_weights (also applied to the output head's layers, as the reference)."""
        if isinstance(m, (nn.Linear, nn.Embedding)):
            m.weight.data.normal_(0.0, self.init_range)
        elif isinstance(m, nn.LayerNorm):
            m.weight.data.fill_(1.0)
            m.bias.data.zero_()
        if isinstance(m, nn.Linear) and m.bias is not None:
            m.bias.data.zero_()

    def forward(self, item_seq: Tensor) -> BackboneOutput:
        B, L = item_seq.shape
        if L > self.max_len:
            raise ValueError(f"sequence length {L} > max_len {self.max_len}")
        pos = torch.arange(L, device=item_seq.device)
        x = self.drop(self.ln(self.item_embedding(item_seq) + self.position_embedding(pos)))
        causal = torch.ones(L, L, dtype=torch.bool, device=item_seq.device).tril()
        mask = (causal[None] & (item_seq > 0)[:, None, :])[:, None]  # (B, 1, L, L)
        layers = [x]
        for block in self.blocks:
            x = block(x, mask)
            layers.append(x)
        return BackboneOutput(x, all_hidden=tuple(layers))
