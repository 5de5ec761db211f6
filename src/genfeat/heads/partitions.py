"""Static partitions of the vocabulary (thesis C §2.3, "Multiple partitions", Table 2.1 MP): the first softmax
scores word x with the facet of partition x mod J,

    logits[..., x] = f_{x mod J} · w_x,

computed as J GEMMs on strided views of W that write partition-major logits (`partition_product`), so W is
never gathered, padded or copied, in forward or backward. `partition_position` maps a word to its column of
the partition-major logits; only the full distribution needs them back in word order (the loss reads the
target's column).
"""

from __future__ import annotations

import torch
from torch import Tensor


class _PartitionProduct(torch.autograd.Function):
    """z[:, j·n + r] = f_j · w_{r·J + j} (n = V // J), and z[:, x] = f_{x - J·n} · w_x for the last V - J·n words:
    every product is one GEMM between the strided views W.view(n, J, d)[:, j] and the output's (N, n) column
    block, in forward and in both backward products, so W is never gathered or padded and its gradient is
    written in place."""

    @staticmethod
    def forward(ctx, f: Tensor, weight: Tensor) -> Tensor:
        J, N, d = f.shape
        V = weight.size(0)
        n = V // J
        z = f.new_empty(N, V)
        w, zb = weight[: J * n].view(n, J, d), z[:, : J * n].view(N, J, n)
        for j in range(J):
            torch.mm(f[j], w[:, j].T, out=zb[:, j])
        if V > J * n:  # the incomplete last row of words: word J·n + j uses facet j
            z[:, J * n:] = torch.einsum("jnd,jd->nj", f[: V - J * n], weight[J * n:])
        ctx.save_for_backward(f, weight)
        return z

    @staticmethod
    def backward(ctx, g: Tensor) -> tuple[Tensor, Tensor]:
        f, weight = ctx.saved_tensors
        J, N, d = f.shape
        V = weight.size(0)
        n = V // J
        g = g.contiguous()
        gf, gw = torch.empty_like(f), torch.empty_like(weight)
        w, gwb, gb = weight[: J * n].view(n, J, d), gw[: J * n].view(n, J, d), g[:, : J * n].view(N, J, n)
        for j in range(J):
            torch.mm(gb[:, j], w[:, j], out=gf[j])
            torch.mm(gb[:, j].T, f[j], out=gwb[:, j])
        if V > J * n:
            rem, gt = V - J * n, g[:, J * n:]
            gf[:rem] += gt.T[:, :, None] * weight[J * n:, None, :]
            gw[J * n:] = torch.einsum("nj,jnd->jd", gt, f[:rem])
        return gf, gw


def partition_product(f: Tensor, weight: Tensor) -> Tensor:
    """Logits of J interleaved partitions in partition-major order (see `_PartitionProduct`): f (J, N, d) facets,
    weight (V, d) -> (N, V). Under autocast both run in the autocast dtype, as F.linear would."""
    dev = f.device.type
    if torch.is_autocast_enabled(dev):
        dt = torch.get_autocast_dtype(dev)
        f, weight = f.to(dt), weight.to(dt)
    with torch.autocast(dev, enabled=False):
        return _PartitionProduct.apply(f.contiguous(), weight.contiguous())


def partition_position(x: Tensor, vocab_size: int, J: int) -> Tensor:
    """Where word x sits in the partition-major logits: with n = V // J, word x < J·n at (x mod J)·n + x // J
    (partition x mod J, rank x // J), a word of the incomplete last row (x >= J·n) at x itself."""
    n = vocab_size // J
    return torch.where(x < J * n, (x % J) * n + x // J, x)
