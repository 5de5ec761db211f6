"""Softmax output layer: P(x | c_t) = softmax_x(f_{c_t}^T w_x + b_x).

Thesis C §2.3 (Figure 2.4a, Eq. 2.1), the GPT-2 baseline of the multi-facet experiments:
f_{c_t,1} = L^f_1(h^M_{c_t}), one extra facet layer (linear with bias) initialised to the identity, so at
step 0 the head equals the plain tied softmax. `facet_proj=False` gives the plain (tied) softmax
f = h^M, the usual LM output layer.

Shapes: hidden (B, T, d) -> scores (B, T, V) logits (is_log_prob=False).
Deviations: none.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.heads.base import HeadNeeds, HeadOutput, output_embedding, select_positions
from genfeat.nn.outputs import BackboneOutput


class SoftmaxHead(nn.Module):
    needs = HeadNeeds(positions=True)

    def __init__(
        self,
        d_model: int,
        vocab_size: int,
        tied_embedding: nn.Embedding | None = None,
        bias: bool = False,
        facet_proj: bool = False,
    ):
        super().__init__()
        self.facet = None
        if facet_proj:
            self.facet = nn.Linear(d_model, d_model)  # L^f_1, identity at init (thesis C §2.4.1.5)
            with torch.no_grad():
                self.facet.weight.copy_(torch.eye(d_model))
                self.facet.bias.zero_()
        self.weight = output_embedding(vocab_size, d_model, tied_embedding)  # tied: the same Parameter
        self.bias = nn.Parameter(torch.zeros(vocab_size)) if bias else None

    def forward(self, out: BackboneOutput, input_ids: Tensor | None = None,
                positions: Tensor | None = None) -> HeadOutput:
        """Logits (B, T, V), or (B, P, V) at `positions` (B, P) only."""
        h = select_positions(out.hidden, positions)  # (B, T, d)
        if self.facet is not None:
            h = self.facet(h)
        return HeadOutput(F.linear(h, self.weight, self.bias), is_log_prob=False)  # (B, T, V)
