"""The 2-D case study of complement-GAN SSL (thesis Y §3.1.4; spec complement-gan.md §5.1).

A (K+1)-class discriminator (MLP 2 -> 64 -> 64 = h -> K logits, fake logit fixed at 0) trained with the loss
of §2.7.6 (λ_u = 0.5) against one of four "generators":

    supervised   no unlabeled or generated data (labeled cross-entropy only)
    complement   the explicit complement generator (uniform in a box minus the data's neighbourhood)
    perfect      fresh samples of the data distribution (Proposition 1: no gain expected)
    fm           a learned generator trained by feature matching on h (z ~ U(0,1)^d, MLP, BatchNorm)

Every step uses all labeled points, 128 unlabeled and 128 generated points; Adam (3e-3, β=(0.5, 0.999)) for D,
(1e-3, β=(0, 0.999)) for the FM generator, alternating one D step and one G step (§2.7.7): the image recipe's
`ComplementGAN` step; `paradigms.complement_gan.train_toy` trains them and `evaluate_toy` measures Assumption 1.
"""

from __future__ import annotations

from torch import Tensor, nn

GENERATORS = ("supervised", "complement", "perfect", "fm")


class MLPDiscriminator(nn.Module):
    def __init__(self, n_classes: int, hidden: int = 64, d_in: int = 2):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.out = nn.Linear(hidden, n_classes)

    def features(self, x: Tensor) -> Tensor:
        return self.body(x)

    def forward(self, x: Tensor) -> Tensor:
        return self.out(self.body(x))


class MLPGenerator(nn.Module):
    """z ~ U(0,1)^d_z -> hidden (BN, Softplus) x 2 -> 2-D point (the MNIST generator's layout, §2.8)."""

    def __init__(self, d_z: int = 8, hidden: int = 64, d_out: int = 2):
        super().__init__()
        self.d_z = d_z
        self.net = nn.Sequential(nn.Linear(d_z, hidden, bias=False), nn.BatchNorm1d(hidden), nn.Softplus(),
                                 nn.Linear(hidden, hidden, bias=False), nn.BatchNorm1d(hidden), nn.Softplus(),
                                 nn.Linear(hidden, d_out))

    def forward(self, z: Tensor) -> Tensor:
        return self.net(z)
