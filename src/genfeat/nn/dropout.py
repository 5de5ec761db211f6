"""Dropout with a faster CPU path.

On CPU, `torch.nn.Dropout` draws its mask with `bernoulli_`, which is about three times slower than drawing
uniforms with `torch.rand` and thresholding them (torch 2.13, one thread: 5.8 ms vs 1.8 ms for a 4x128x1024
tensor), and dropout sits on every residual branch of the Transformer backbones. `Dropout` keeps
`nn.Dropout`'s semantics exactly (each element kept independently with probability 1 - p, kept elements
scaled by 1 / (1 - p), identity in eval mode) and its interface (it *is* an `nn.Dropout`), but on CPU it
draws the mask as `rand >= p` and saves it pre-scaled for the backward pass (4 bytes per element instead of
`native_dropout`'s 1). Other devices, `inplace=True` and p in {0, 1} use `F.dropout` unchanged. The random
stream differs from `nn.Dropout`'s, so a seed reproduces genfeat runs, not `nn.Dropout`'s masks.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class _ScaledMaskDropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, p: float) -> Tensor:
        mask = torch.rand(x.shape, device=x.device).ge_(p).mul_(1.0 / (1.0 - p)).to(x.dtype)  # {0, 1/(1-p)}
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:
        (mask,) = ctx.saved_tensors
        return grad * mask, None


def dropout(x: Tensor, p: float, training: bool = True, inplace: bool = False) -> Tensor:
    """`F.dropout` with the fast CPU path described in the module docstring."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or inplace or p == 1.0:
        return F.dropout(x, p, True, inplace)
    return _ScaledMaskDropout.apply(x, p)


class Dropout(nn.Dropout):
    """Drop-in `nn.Dropout` (same constructor, no state) using `dropout` above."""

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training, self.inplace)
