"""Softmax output layer: logits = h W^T + b, optionally tied to the input embedding.

Thesis C §2.3.1 (Eq. 2.5, "Softmax"): p(x | c) = softmax(h_c^T w_x). The thesis's extra facet
projection (a d×d linear layer + GELU before the output embedding) is `facet_proj=True`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.heads.base import HeadOutput
from genfeat.nn.outputs import BackboneOutput


class SoftmaxHead(nn.Module):
    def __init__(
        self,
        d_model: int,
        vocab_size: int,
        tied_embedding: nn.Embedding | None = None,
        bias: bool = False,
        facet_proj: bool = False,
    ):
        super().__init__()
        self.proj = nn.Sequential(nn.Linear(d_model, d_model), nn.GELU()) if facet_proj else None
        if tied_embedding is not None:
            if tied_embedding.weight.shape != (vocab_size, d_model):
                raise ValueError(
                    f"tied embedding has shape {tuple(tied_embedding.weight.shape)}, "
                    f"expected ({vocab_size}, {d_model})"
                )
            self.weight = tied_embedding.weight  # shared Parameter
        else:
            self.weight = nn.Parameter(torch.randn(vocab_size, d_model) * 0.02)
        self.bias = nn.Parameter(torch.zeros(vocab_size)) if bias else None

    def forward(self, out: BackboneOutput, input_ids: Tensor | None = None) -> HeadOutput:
        h = out.hidden  # (B, T, d)
        if self.proj is not None:
            h = self.proj(h)
        return HeadOutput(F.linear(h, self.weight, self.bias), is_log_prob=False)  # (B, T, V)

