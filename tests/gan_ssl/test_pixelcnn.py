"""The PixelCNN density model: raster-order causality and a normalised discretised likelihood."""

from __future__ import annotations

import torch

from genfeat.models.gan_ssl.pixelcnn import PixelCNN, discretized_logistic_mixture_logp


def test_parameters_at_a_pixel_depend_only_on_earlier_pixels():
    torch.manual_seed(0)
    model = PixelCNN(channels=1, filters=8, n_blocks=2, n_mix=2)
    H = W = 7
    for i, j in [(0, 0), (3, 4), (6, 6), (2, 0)]:
        x = torch.rand(1, 1, H, W, requires_grad=True) * 2 - 1
        x.retain_grad()
        model(x)[0, :, i, j].sum().backward()
        g = x.grad[0, 0].abs()
        order = torch.arange(H * W).view(H, W)
        later = order >= i * W + j
        assert g[later].sum() == 0, (i, j)
        if i * W + j > 0:
            assert g[~later].sum() > 0


def test_discretised_mixture_sums_to_one_over_the_256_levels():
    torch.manual_seed(0)
    n_mix = 3
    params = torch.randn(1, 3 * n_mix, 1, 1) * torch.tensor([1.0] * n_mix + [0.5] * n_mix + [1.0] * n_mix).view(
        1, -1, 1, 1) - torch.tensor([0.0] * n_mix + [0.0] * n_mix + [2.0] * n_mix).view(1, -1, 1, 1)
    levels = torch.arange(256, dtype=torch.float32) / 255 * 2 - 1
    x = levels.view(256, 1, 1, 1)
    logp = discretized_logistic_mixture_logp(x, params.expand(256, -1, -1, -1), n_mix)
    torch.testing.assert_close(logp.exp().sum(), torch.tensor(1.0), atol=1e-3, rtol=0)


def test_log_prob_is_differentiable_and_trains():
    torch.manual_seed(0)
    model = PixelCNN(filters=8, n_blocks=1, n_mix=2)
    x = (torch.rand(16, 1, 6, 6) > 0.5).float() * 2 - 1  # binary images
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    start = model.bits_per_dim(x).item()
    for _ in range(60):
        loss = model.bits_per_dim(x)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert model.bits_per_dim(x).item() < start - 1.0
    xg = (torch.rand(4, 1, 6, 6) * 2 - 1).requires_grad_()
    model.log_prob(xg).sum().backward()
    assert xg.grad.abs().sum() > 0  # the generator can be pushed by LD
