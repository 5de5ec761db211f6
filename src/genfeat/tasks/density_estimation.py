"""Density estimation of images (the PixelCNN of the complement GAN's low-density term, thesis Y §3.1.5), as a
task: training minimises bits per dimension, −log₂ p(x) / dims, through the model's forward (so DDP sees it); a
split is scored by its mean bits per dimension. The model's forward returns its mixture parameters and the model
has `n_mix` and `bits_per_dim(x)` (`models.gan_ssl.pixelcnn.PixelCNN`).

Rows per split: `x` images (N, C, H, W) in [-1, 1].
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch
from torch import Tensor, nn

from genfeat.models.gan_ssl.pixelcnn import discretized_logistic_mixture_logp
from genfeat.tasks.base import Task
from genfeat.train import distributed as D
from genfeat.train.logging import progress


def bits_per_dim_loss(model: nn.Module, x: Tensor) -> tuple[Tensor, int]:
    """Mean bits per dimension of a batch through the (maybe DDP-wrapped) model's forward, and its image count."""
    x = x.to(next(model.parameters()).device)
    logp = discretized_logistic_mixture_logp(x, model(x), D.unwrap(model).n_mix).flatten(1).sum(1)
    return -logp.mean() / (x[0].numel() * math.log(2)), len(x)


class DensityEstimation(Task):
    metric = "bits_per_dim"
    mode = "min"
    unit = "images"

    def __init__(self, data: Mapping[str, Tensor], batch: int = 250):
        """`data`: {split: images} for the evaluated splits; `batch`: images per evaluation pass."""
        self.data, self.batch = dict(data), batch
        self.splits = tuple(self.data)

    def loss(self, model: nn.Module, x: Tensor) -> tuple[Tensor, int]:
        return bits_per_dim_loss(model, x)

    @torch.no_grad()
    def predict(self, model: nn.Module, split: str) -> Tensor:
        """Each chunk's mean bits per dimension (B,), the last chunk weighted as the others."""
        net, x = D.unwrap(model), self.data[split]
        dev = next(net.parameters()).device
        return torch.stack([net.bits_per_dim(x[a: a + self.batch].to(dev)).cpu()
                            for a in progress(range(0, len(x), self.batch), f"{split} bits/dim")])

    def score(self, pred: Tensor, split: str) -> dict[str, float]:
        return {"bits_per_dim": float(pred.mean())}
