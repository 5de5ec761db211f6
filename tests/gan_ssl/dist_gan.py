"""`fit_gan_ssl` on random images with every generator term, for the 1-rank vs 2-rank test:
`python -m torch.distributed.run --standalone --nproc_per_node=N tests/gan_ssl/dist_gan.py OUT`. The networks
have no per-rank randomness (no instance noise, no BatchNorm), so N ranks must follow one process exactly."""

from __future__ import annotations

import sys

import torch
from torch import nn

from genfeat.models.gan_ssl.mnist import MNISTDiscriminator
from genfeat.models.gan_ssl.train import GanSSLConfig
from genfeat.nn.weight_norm import WNLinear
from genfeat.paradigms.complement_gan import fit_gan_ssl
from genfeat.tasks.image_classification import SemiSupervisedImageClassification
from genfeat.train import distributed as D


class Generator(nn.Module):
    def __init__(self, d_z: int = 8):
        super().__init__()
        self.d_z = d_z
        self.net = nn.Sequential(nn.Linear(d_z, 32), nn.Softplus(), WNLinear(32, 784, train_scale=True), nn.Sigmoid())

    def forward(self, z):
        return self.net(z).view(-1, 1, 28, 28)


def main(out: str) -> None:
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(240, 1, 28, 28, generator=g)
    y = torch.arange(240) % 10
    torch.manual_seed(0)
    disc = MNISTDiscriminator(10, 784, (24, 16), input_noise=0.0, hidden_noise=0.0)
    cfg = GanSSLConfig(epochs=2, labeled_per_class=2, batch_labeled=20, batch_unlabeled=40, init_samples=60,
                       lambda_pt=0.5, lambda_ent=0.3, lambda_ld=0.1, ld_samples=10, ld_quantile=50.0, device="cpu")
    task = SemiSupervisedImageClassification({"valid": {"x": x[:50], "y": y[:50]},
                                              "test": {"x": x[50:100], "y": y[50:100]}})
    fit_gan_ssl(cfg, disc, Generator(), x, y, task, out,
                log_density=lambda im: -((im - 0.5) ** 2).flatten(1).sum(1))
    D.teardown()  # as `genfeat run` does: the process group goes before the interpreter does


if __name__ == "__main__":
    main(sys.argv[1])
