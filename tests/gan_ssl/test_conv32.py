"""The 32x32 networks: shapes, feature layer, data-dependent init, the encoder's variance bound."""

from __future__ import annotations

import torch

from genfeat.losses.gan_ssl import uniform_noise
from genfeat.models.gan_ssl.conv32 import Conv32Discriminator, Conv32Encoder, Conv32Generator
from genfeat.nn.weight_norm import init_all


def test_conv32_networks():
    torch.manual_seed(0)
    d, g, e = Conv32Discriminator(n1=8, n2=16), Conv32Generator(d_z=10), Conv32Encoder(d_z=10, sigma_max=0.5)
    x = torch.rand(6, 3, 32, 32) * 2 - 1
    init_all(d, x)
    init_all(g, uniform_noise(6, 10))
    init_all(e, x)
    assert d.features(x).shape == (6, 16) and d(x).shape == (6, 10)
    xg = g(uniform_noise(6, 10))
    assert xg.shape == (6, 3, 32, 32) and xg.abs().max() <= 1
    mu, log_sigma = e(xg)
    assert mu.shape == (6, 10) and (log_sigma.exp() < 0.5).all()
    from genfeat.nn.weight_norm import _WeightNorm

    assert all(bool(m.initialized) for net in (d, g, e) for m in net.modules() if isinstance(m, _WeightNorm))


def test_generator_and_encoder_widths():
    """The default widths are the reference's (G 512-256-128 channels, E 128-256-512); `width` scales both."""
    def channels(net):
        return [m.num_features for m in net.modules() if isinstance(m, torch.nn.BatchNorm2d)]  # one per layer

    g, e = Conv32Generator(d_z=10), Conv32Encoder(d_z=10)
    assert g.fc[0].out_features == 4 * 4 * 512 and channels(g) == [256, 128] and channels(e) == [128, 256, 512]
    g, e = Conv32Generator(d_z=10, width=8), Conv32Encoder(d_z=10, width=8)
    assert g.fc[0].out_features == 4 * 4 * 32 and channels(g) == [16, 8] and channels(e) == [8, 16, 32]
    assert g(torch.rand(2, 10)).shape == (2, 3, 32, 32) and e(torch.rand(2, 3, 32, 32) * 2 - 1)[0].shape == (2, 10)
