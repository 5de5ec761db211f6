"""h_t = MLP(mean of the input embeddings of tokens <= t): a causal bag-of-words backbone (spec
multi-facet-softmax.md §11 S2's encoder), so a head's capacity, not the encoder's, decides what a synthetic
next-token distribution can be. Shapes: input_ids (B, T) -> hidden (B, T, d_out). No memory, no cache."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from genfeat.nn.outputs import BackboneOffers, BackboneOutput


class BagBackbone(nn.Module):
    offers = BackboneOffers()

    def __init__(self, vocab_size: int, d_out: int, width: int = 64):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, width)
        self.mlp = nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Linear(width, d_out))

    def forward(self, input_ids: Tensor, output_all_hidden: bool = False) -> BackboneOutput:
        e = self.emb(input_ids).cumsum(1) / torch.arange(1, input_ids.size(1) + 1, device=input_ids.device)[
            None, :, None]  # (B, T, width): the mean of the embeddings so far
        h = self.mlp(e)  # (B, T, d_out)
        return BackboneOutput(h, all_hidden=(h,))
