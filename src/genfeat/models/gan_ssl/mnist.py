"""The MNIST networks of complement-GAN SSL (thesis Y §3.1.5, Table 3.1 "small discriminator"; layouts of the
authors' `mnist_model.py`, spec complement-gan.md §2.8).

    D   GaussianNoise(0.3) -> WN-Linear(784, 1000) -> ReLU -> [GaussianNoise(0.5) -> WN-Linear -> ReLU] for
        1000->500, 500->250, 250->250, 250->250 -> GaussianNoise(0.5) -> WN-Linear(250, K, trained scale)
        h = the last 250-d ReLU output (feature matching / pull-away read it); K logits, the fake logit is 0
    G   z ~ U(0,1)^100 -> Linear(100, 500, no bias) -> BN -> Softplus -> Linear(500, 500, no bias) -> BN -> Softplus
        -> WN-Linear(500, 784, trained scale) -> Sigmoid      (pixels in [0, 1], like the data)
    E   (VI) x -> Linear 784->500 -> BN -> ReLU -> 500->500 -> BN -> ReLU -> WN-Linear(500, 2·d_z) -> (μ, log σ),
        σ = σ_max·sigmoid(·) (the thesis's bounded variance; the authors' code leaves it unbounded)

Weight-normalised layers use v ~ N(0, 0.1²) (MNIST linear) and the data-dependent init (`init_all`).
Deviations: the encoder is an MLP of this file's choosing (the authors' MNIST trainer has no VI variant).
"""

from __future__ import annotations

from torch import Tensor, nn

from genfeat.losses.gan_ssl import bounded_log_sigma
from genfeat.nn.weight_norm import GaussianNoise, WNLinear


class MNISTDiscriminator(nn.Module):
    def __init__(self, n_classes: int = 10, d_in: int = 784, sizes: tuple[int, ...] = (1000, 500, 250, 250, 250),
                 input_noise: float = 0.3, hidden_noise: float = 0.5):
        super().__init__()
        layers: list[nn.Module] = []
        prev = d_in
        for i, n in enumerate(sizes):
            layers += [GaussianNoise(input_noise if i == 0 else hidden_noise), WNLinear(prev, n, init_scale=0.1),
                       nn.ReLU()]
            prev = n
        self.body = nn.Sequential(*layers)
        self.head = nn.Sequential(GaussianNoise(hidden_noise), WNLinear(prev, n_classes, train_scale=True,
                                                                        init_scale=0.1))

    def features(self, x: Tensor) -> Tensor:
        return self.body(x.flatten(1))

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.features(x))


class MNISTGenerator(nn.Module):
    def __init__(self, d_z: int = 100, hidden: int = 500, d_out: int = 784, image_shape=(1, 28, 28)):
        super().__init__()
        self.d_z, self.image_shape = d_z, image_shape
        self.net = nn.Sequential(nn.Linear(d_z, hidden, bias=False), nn.BatchNorm1d(hidden), nn.Softplus(),
                                 nn.Linear(hidden, hidden, bias=False), nn.BatchNorm1d(hidden), nn.Softplus(),
                                 WNLinear(hidden, d_out, train_scale=True, init_scale=0.1), nn.Sigmoid())

    def forward(self, z: Tensor) -> Tensor:
        return self.net(z).view(-1, *self.image_shape)


class MNISTEncoder(nn.Module):
    """q(z | x) = N(μ(x), diag σ(x)²) with 0 < σ < σ_max, for the VI entropy term."""

    def __init__(self, d_z: int = 100, d_in: int = 784, hidden: int = 500, sigma_max: float = 1.0):
        super().__init__()
        self.d_z, self.sigma_max = d_z, sigma_max
        self.net = nn.Sequential(nn.Linear(d_in, hidden, bias=False), nn.BatchNorm1d(hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden, bias=False), nn.BatchNorm1d(hidden), nn.ReLU(),
                                 WNLinear(hidden, 2 * d_z, train_scale=True, init_scale=0.1, init_stdv=0.1))

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        mu, raw = self.net(x.flatten(1)).chunk(2, -1)
        return mu, bounded_log_sigma(raw, self.sigma_max)
