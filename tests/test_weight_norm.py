"""Weight-normalised layers (spec complement-gan.md §5.3 test 11)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from genfeat.nn.weight_norm import GaussianNoise, WNConv2d, WNConvTranspose2d, WNLinear, init_all


@pytest.mark.parametrize("make,x", [
    (lambda: WNLinear(6, 4), torch.randn(64, 6)),
    (lambda: WNConv2d(3, 5, 3, padding=1), torch.randn(16, 3, 8, 8)),
    (lambda: WNConvTranspose2d(3, 5, 5, stride=2, padding=2, output_padding=1), torch.randn(16, 3, 4, 4)),
])
def test_scale_invariance_and_data_dependent_init(make, x):
    torch.manual_seed(0)
    layer = make()
    y = layer(x)
    with torch.no_grad():
        layer.v.mul_(3.7)
    torch.testing.assert_close(layer(x), y, atol=1e-5, rtol=1e-5)
    layer.init_stdv = 0.1
    out = layer.data_init(x)
    reduce = [d for d in range(out.dim()) if d != 1]
    torch.testing.assert_close(out.mean(reduce), torch.zeros(out.size(1)), atol=1e-4, rtol=0)
    torch.testing.assert_close(out.std(reduce, unbiased=False), torch.full((out.size(1),), 0.1), atol=1e-4, rtol=0)


@pytest.mark.parametrize("make,out_dim", [(lambda: WNLinear(6, 4, train_scale=True), 0),
                                          (lambda: WNConv2d(3, 5, 3, train_scale=True), 0),
                                          (lambda: WNConvTranspose2d(3, 5, 5, stride=2, train_scale=True), 1)])
def test_weight_is_g_v_over_the_norm_of_each_output_unit(make, out_dim):
    """W = g · v / ‖v‖ with the norm over every axis but the output units' (axis 1 of a transposed convolution's
    weight), and the gradients of v and g are those of that formula."""
    torch.manual_seed(0)
    layer = make()
    with torch.no_grad():
        layer.g.uniform_(0.5, 2.0)
    v, g = layer.v.detach().clone().requires_grad_(), layer.g.detach().clone().requires_grad_()
    units = v.movedim(out_dim, 0)
    norm = units.flatten(1).norm(dim=1)  # one norm per output unit
    expected = (units * (g / norm).view(-1, *[1] * (v.dim() - 1))).movedim(0, out_dim)
    w = layer.weight()
    torch.testing.assert_close(w, expected, atol=1e-6, rtol=1e-5)
    probe = torch.randn_like(w)
    (w * probe).sum().backward()
    (expected * probe).sum().backward()
    torch.testing.assert_close(layer.v.grad, v.grad, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(layer.g.grad, g.grad, atol=1e-6, rtol=1e-5)


def test_train_scale_and_init_all():
    torch.manual_seed(0)
    fixed, trained = WNLinear(4, 3), WNLinear(4, 3, train_scale=True)
    assert "g" not in dict(fixed.named_parameters()) and "g" in dict(trained.named_parameters())
    model = nn.Sequential(WNLinear(5, 8), nn.ReLU(), WNLinear(8, 2, init_stdv=0.5))
    x = torch.randn(200, 5)
    init_all(model, x)
    assert all(bool(m.initialized) for m in model if isinstance(m, WNLinear))
    out = model(x)
    torch.testing.assert_close(out.std(0, unbiased=False), torch.full((2,), 0.5), atol=1e-4, rtol=0)


def test_gaussian_noise_only_in_training():
    n, x = GaussianNoise(0.3), torch.zeros(1000)
    assert 0.25 < n(x).std() < 0.35
    assert torch.equal(n.eval()(x), x)
