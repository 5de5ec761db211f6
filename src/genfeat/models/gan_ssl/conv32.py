"""The 32x32 networks of complement-GAN SSL for SVHN / CIFAR-10 (thesis Y §3.1.5 "small discriminator"; layouts of
the authors' `model.py`, spec complement-gan.md §2.8). Inputs in [-1, 1]; (n1, n2) = (64, 128) for SVHN,
(96, 192) for CIFAR-10.

    D   GaussianNoise(0.05) -> Dropout2d(p_in) -> 3x[WN-Conv3x3(n1)] (the third stride 2) -> Dropout(0.5)
        -> 3x[WN-Conv3x3(n2)] (the third stride 2) -> Dropout(0.5) -> WN-Conv3x3(n2, pad 0) -> 2x WN-Conv1x1(n2)
        -> global average pool = h (n2) -> WN-Linear(n2, K, trained scale, init_stdv 0.1); LReLU(0.2) throughout
    G   z ~ U(0,1)^100 -> Linear(100, 4·4·512, no bias) -> BN -> ReLU -> ConvT5x5 512->256 -> BN -> ReLU
        -> ConvT5x5 256->128 -> BN -> ReLU -> WN-ConvT5x5 128->3 (trained scale, init_stdv 0.1) -> tanh
    E   (VI) Conv5x5 s2 3->128 -> BN -> ReLU -> 128->256 -> 256->512 -> flatten -> WN-Linear(8192, 2·d_z),
        σ = σ_max·sigmoid(·)

G's and E's channel widths are (4w, 2w, w) and (w, 2w, 4w) with `width` w = 128, the reference's; a smaller w is
for quick runs and tests (not a thesis setting).

Dropout is spatial (Dropout2d) for SVHN and element-wise for CIFAR-10 after the strided blocks, as the reference.
"""

from __future__ import annotations

from torch import Tensor, nn

from genfeat.losses.gan_ssl import bounded_log_sigma
from genfeat.nn.weight_norm import GaussianNoise, WNConv2d, WNConvTranspose2d, WNLinear


def _conv(c_in: int, c_out: int, k: int = 3, stride: int = 1, pad: int = 1) -> list[nn.Module]:
    return [WNConv2d(c_in, c_out, k, stride, pad), nn.LeakyReLU(0.2)]


class Conv32Discriminator(nn.Module):
    def __init__(self, n_classes: int = 10, n1: int = 64, n2: int = 128, in_dropout: float = 0.15,
                 spatial_dropout: bool = True, in_channels: int = 3):
        super().__init__()
        drop = nn.Dropout2d if spatial_dropout else nn.Dropout
        self.body = nn.Sequential(
            GaussianNoise(0.05), nn.Dropout2d(in_dropout),
            *_conv(in_channels, n1), *_conv(n1, n1), *_conv(n1, n1, stride=2), drop(0.5),
            *_conv(n1, n2), *_conv(n2, n2), *_conv(n2, n2, stride=2), drop(0.5),
            *_conv(n2, n2, pad=0), *_conv(n2, n2, k=1, pad=0), *_conv(n2, n2, k=1, pad=0),
            nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = WNLinear(n2, n_classes, train_scale=True, init_stdv=0.1)

    def features(self, x: Tensor) -> Tensor:
        return self.body(x)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.body(x))


class Conv32Generator(nn.Module):
    def __init__(self, d_z: int = 100, out_channels: int = 3, width: int = 128):
        super().__init__()
        self.d_z, self.top = d_z, 4 * width
        self.fc = nn.Sequential(nn.Linear(d_z, 4 * 4 * self.top, bias=False), nn.BatchNorm1d(4 * 4 * self.top),
                                nn.ReLU())

        def up(c_in: int, c_out: int) -> list[nn.Module]:
            return [nn.ConvTranspose2d(c_in, c_out, 5, 2, 2, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()]

        self.net = nn.Sequential(*up(4 * width, 2 * width), *up(2 * width, width),
                                 WNConvTranspose2d(width, out_channels, 5, 2, 2, 1, train_scale=True, init_stdv=0.1),
                                 nn.Tanh())

    def forward(self, z: Tensor) -> Tensor:
        return self.net(self.fc(z).view(-1, self.top, 4, 4))  # (B, 4w, 4, 4) -> (B, C, 32, 32)


class Conv32Encoder(nn.Module):
    def __init__(self, d_z: int = 100, in_channels: int = 3, sigma_max: float = 1.0, width: int = 128):
        super().__init__()
        self.d_z, self.sigma_max = d_z, sigma_max

        def down(c_in: int, c_out: int) -> list[nn.Module]:
            return [nn.Conv2d(c_in, c_out, 5, 2, 2, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()]

        self.net = nn.Sequential(*down(in_channels, width), *down(width, 2 * width), *down(2 * width, 4 * width),
                                 nn.Flatten(), WNLinear(4 * width * 4 * 4, 2 * d_z, train_scale=True, init_stdv=0.1))

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        mu, raw = self.net(x).chunk(2, -1)
        return mu, bounded_log_sigma(raw, self.sigma_max)
