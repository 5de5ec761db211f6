"""A small PixelCNN++-family density model for the low-density (LD) term of complement-GAN SSL (thesis Y §3.1.5:
"PixelCNN++ pretrained on the training set and frozen"; spec complement-gan.md §2.7.3, §2.8).

Autoregressive over pixels in raster order, on images in [-1, 1] (one or more channels modelled jointly per
pixel position, no channel autoregression; one channel for MNIST / Fashion-MNIST):

    u  stream  sees the rows above the current pixel      (down-shifted 2x3 convolutions)
    ul stream  sees the rows above and the pixels to the left in the current row (down-right-shifted 2x2
               convolutions, with the u stream as auxiliary input)
    gated residual blocks (concat-ELU, a·σ(b)) as PixelCNN++, `n_blocks` per stream, one resolution
    output: a mixture of `n_mix` discretised logistics per pixel (and channel), 256 bins on [-1, 1]

`log_prob(x)` returns log p(x) in nats per image (the sum over pixels), differentiable w.r.t. x, so the
generator can be pushed away from high-density regions; `bits_per_dim` for reporting.
Deviations from PixelCNN++: one resolution (no down/up-sampling stages), no weight normalisation or dropout,
and channels are independent given the context (the thesis uses it on grayscale MNIST for LD).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def concat_elu(x: Tensor) -> Tensor:
    return F.elu(torch.cat([x, -x], 1))


class DownShiftedConv(nn.Module):
    """Output (i, j) sees input rows i - kh + 1 .. i, columns j - (kw - 1)/2 .. j + (kw - 1)/2."""

    def __init__(self, c_in: int, c_out: int, kernel: tuple[int, int] = (2, 3)):
        super().__init__()
        self.kh, self.kw = kernel
        self.conv = nn.Conv2d(c_in, c_out, kernel)

    def forward(self, x: Tensor) -> Tensor:
        return self.conv(F.pad(x, ((self.kw - 1) // 2, (self.kw - 1) // 2, self.kh - 1, 0)))


class DownRightShiftedConv(nn.Module):
    """Output (i, j) sees input rows i - kh + 1 .. i, columns j - kw + 1 .. j."""

    def __init__(self, c_in: int, c_out: int, kernel: tuple[int, int] = (2, 2)):
        super().__init__()
        self.kh, self.kw = kernel
        self.conv = nn.Conv2d(c_in, c_out, kernel)

    def forward(self, x: Tensor) -> Tensor:
        return self.conv(F.pad(x, (self.kw - 1, 0, self.kh - 1, 0)))


def down_shift(x: Tensor) -> Tensor:
    return F.pad(x, (0, 0, 1, 0))[:, :, :-1]


def right_shift(x: Tensor) -> Tensor:
    return F.pad(x, (1, 0))[:, :, :, :-1]


class GatedResnet(nn.Module):
    def __init__(self, c: int, conv: type, aux: bool = False):
        super().__init__()
        self.conv1 = conv(2 * c, c)
        self.aux = nn.Conv2d(2 * c, c, 1) if aux else None
        self.conv2 = conv(2 * c, 2 * c)

    def forward(self, x: Tensor, a: Tensor | None = None) -> Tensor:
        h = self.conv1(concat_elu(x))
        if self.aux is not None:
            h = h + self.aux(concat_elu(a))
        g, b = self.conv2(concat_elu(h)).chunk(2, 1)
        return x + g * torch.sigmoid(b)


def discretized_logistic_mixture_logp(x: Tensor, params: Tensor, n_mix: int) -> Tensor:
    """log P(x) per pixel and channel for x in [-1, 1] on the 256-level grid; params (B, C·3·n_mix, H, W)."""
    B, C, H, W = x.shape
    p = params.view(B, C, 3, n_mix, H, W)
    logit, mean, log_s = p[:, :, 0], p[:, :, 1], p[:, :, 2].clamp_min(-7.0)
    xc = x[:, :, None] - mean
    inv_s = torch.exp(-log_s)
    plus, minus = inv_s * (xc + 1.0 / 255), inv_s * (xc - 1.0 / 255)
    log_cdf_plus = plus - F.softplus(plus)  # log σ(plus), for the lowest bin
    log_one_minus_cdf_min = -F.softplus(minus)  # log (1 - σ(minus)), for the highest bin
    cdf_delta = torch.sigmoid(plus) - torch.sigmoid(minus)
    mid = inv_s * xc
    log_pdf_mid = mid - log_s - 2.0 * F.softplus(mid)  # density at the bin centre (tiny bins' fallback)
    xx = x[:, :, None].expand_as(xc)
    inner = torch.where(cdf_delta > 1e-5, torch.log(cdf_delta.clamp_min(1e-12)), log_pdf_mid - math.log(127.5))
    logp = torch.where(xx < -0.999, log_cdf_plus, torch.where(xx > 0.999, log_one_minus_cdf_min, inner))
    return torch.logsumexp(logp + torch.log_softmax(logit, 2), 2)  # (B, C, H, W)


class PixelCNN(nn.Module):
    def __init__(self, channels: int = 1, filters: int = 32, n_blocks: int = 4, n_mix: int = 5):
        super().__init__()
        self.channels, self.n_mix = channels, n_mix
        c_in = channels + 1  # + a constant-ones channel, so padding is distinguishable from black pixels
        self.u0 = DownShiftedConv(c_in, filters, (2, 3))
        self.ul0_up = DownShiftedConv(c_in, filters, (1, 3))
        self.ul0_left = DownRightShiftedConv(c_in, filters, (2, 1))
        self.u_blocks = nn.ModuleList([GatedResnet(filters, DownShiftedConv) for _ in range(n_blocks)])
        self.ul_blocks = nn.ModuleList([GatedResnet(filters, DownRightShiftedConv, aux=True)
                                        for _ in range(n_blocks)])
        self.out = nn.Conv2d(filters, channels * 3 * n_mix, 1)

    def forward(self, x: Tensor) -> Tensor:
        """Mixture parameters (B, C·3·n_mix, H, W) for images x in [-1, 1]; position (i, j) sees only the
        pixels before it in raster order."""
        x = torch.cat([x, torch.ones_like(x[:, :1])], 1)
        u = down_shift(self.u0(x))
        ul = down_shift(self.ul0_up(x)) + right_shift(self.ul0_left(x))
        for bu, bul in zip(self.u_blocks, self.ul_blocks, strict=True):
            u = bu(u)
            ul = bul(ul, u)
        return self.out(F.elu(ul))

    def log_prob(self, x: Tensor) -> Tensor:
        """log p(x) in nats per image, (B,)."""
        return discretized_logistic_mixture_logp(x, self(x), self.n_mix).flatten(1).sum(1)

    def bits_per_dim(self, x: Tensor) -> Tensor:
        return -self.log_prob(x).mean() / (x[0].numel() * math.log(2))
