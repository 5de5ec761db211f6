"""Dropout with a faster CPU path.

On CPU, `torch.nn.Dropout` draws its mask with `bernoulli_`, which is slower than drawing uniforms and
thresholding them, and numpy's PCG64 draws float32 uniforms faster than torch's MT19937; dropout sits on every
residual branch and on the attention weights of the Transformer backbones, so this shows in whole training steps
(docs/results/xlnet_vs_hf.md records the single-thread A/B). `Dropout` keeps `nn.Dropout`'s
semantics exactly (each element kept independently with probability 1 - p, kept elements scaled by
1 / (1 - p), identity in eval mode) and its interface (it *is* an `nn.Dropout`), but on CPU it draws the mask
as `u >= p` with u ~ U[0, 1) from a PCG64 stream seeded by one draw of torch's default generator (so
`torch.manual_seed` reproduces it), and saves the mask pre-scaled for the backward pass (4 bytes per element
instead of `native_dropout`'s 1). Other devices, `inplace=True` and p in {0, 1} use `F.dropout` unchanged.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn


class _ScaledMaskDropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, p: float) -> Tensor:
        seed = int(torch.randint(0, 2**63 - 1, (), dtype=torch.int64))  # torch's generator drives the stream
        u = torch.from_numpy(np.random.default_rng(seed).random(x.numel(), dtype=np.float32)).view(x.shape)
        mask = u.ge_(p).mul_(1.0 / (1.0 - p)).to(x.dtype)  # {0, 1/(1-p)}
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
