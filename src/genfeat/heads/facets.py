"""The facet building blocks of the multi-facet heads (thesis C §2.3-2.4; spec multi-facet-softmax.md §7).

A facet is a linear map of the query state q into the output-embedding space, initialised so that a new head
starts as the softmax it replaces (`identity_facet`: [I | 0], or scale·I for the facets that must start
negligible). The query q is the last hidden state h^M, or Eq. 2.3's multi-input state (`MultiInput`):

    q = h^M ⊕ GELU_tanh(L^h(⊕_{m<H} ⊕_{i<W} h^{M-m}_{t-i})),   W × H = 3 × 3

positions before the sequence start are zeros; the concatenation runs per layer from the top,
[h_t, h_{t-1}, h_{t-2}]. h^M is the backbone's final output (`BackboneOutput.hidden`, after a final LayerNorm
where the backbone has one), h^{M-1}, h^{M-2} the outputs of the blocks below (`all_hidden[-2]`,
`all_hidden[-3]`). Shapes: h (B, T, d) -> q (B, T, 2d).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.nn.outputs import BackboneOutput


def identity_facet(d_in: int, d_out: int, scale: float = 1.0, noise: float = 0.0) -> nn.Linear:
    """Linear d_in -> d_out with weight [scale·I | noise·(U-0.5)] and zero bias (spec §7)."""
    layer = nn.Linear(d_in, d_out)
    with torch.no_grad():
        layer.weight.zero_()
        layer.weight[:, :d_out].copy_(torch.eye(d_out) * scale)
        if noise and d_in > d_out:
            layer.weight[:, d_out:].uniform_(-0.5 * noise, 0.5 * noise)
        layer.bias.zero_()
    return layer



class MultiInput(nn.Module):
    """q_{c_t} of Eq. 2.3 from the top `depth` layers at the last `window` positions."""

    def __init__(self, d_model: int, window: int = 3, depth: int = 3):
        super().__init__()
        self.window, self.depth = window, depth
        self.proj = nn.Linear(window * depth * d_model, d_model)  # L^h

    def layers(self, out: BackboneOutput) -> list[Tensor]:
        """[h^M, h^{M-1}, ..., h^{M-depth+1}], each (B, T, d)."""
        if self.depth == 1:
            return [out.hidden]
        if out.all_hidden is None or len(out.all_hidden) < self.depth:
            raise ValueError(f"multi-input needs the top {self.depth} layers; call the backbone with "
                             "output_all_hidden=True (CausalLM does this for a head whose needs.all_hidden is set)")
        return [out.hidden, *[out.all_hidden[-1 - m] for m in range(1, self.depth)]]

    def forward(self, out: BackboneOutput) -> Tensor:
        blocks = []
        for h in self.layers(out):
            for i in range(self.window):  # h_{t-i}, zeros before the start
                blocks.append(F.pad(h, (0, 0, i, 0))[:, : h.size(1)] if i else h)
        return torch.cat([out.hidden, F.gelu(self.proj(torch.cat(blocks, -1)), approximate="tanh")], -1)
