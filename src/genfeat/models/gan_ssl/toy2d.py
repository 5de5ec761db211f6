"""The 2-D case study of complement-GAN SSL (thesis Y §3.1.4; spec complement-gan.md §5.1).

A (K+1)-class discriminator (MLP 2 -> 64 -> 64 = h -> K logits, fake logit fixed at 0) trained with the loss
of §2.7.6 (λ_u = 0.5) against one of four "generators":

    supervised   no unlabeled or generated data (labeled cross-entropy only)
    complement   the explicit complement generator (uniform in a box minus the data's neighbourhood)
    perfect      fresh samples of the data distribution (Proposition 1: no gain expected)
    fm           a learned generator trained by feature matching on h (z ~ U(0,1)^d, MLP, BatchNorm)

Every step uses all labeled points, 128 unlabeled and 128 generated points; Adam (3e-3, β=(0.5, 0.999)) for D,
(1e-3, β=(0, 0.999)) for the FM generator, alternating one D step and one G step (§2.7.7): the image recipe's
`ComplementGAN` step, trained by `train.fit`. Diagnostics of
Assumption 1 (Fig. 3.1, named by what they compute): r_real = share of test points with max_k l_k > 0 (A3),
r_gen = share of generated points with max_k l_k < 0 (A2).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from genfeat.data.synthetic2d import Toy2D
from genfeat.losses.gan_ssl import uniform_noise
from genfeat.models.gan_ssl.train import ComplementGAN, GanSSLConfig
from genfeat.train.loop import TrainConfig, fit

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


@dataclass
class ToyResult:
    disc: MLPDiscriminator
    gen: MLPGenerator | None
    sampler: Callable[[int], np.ndarray] | None


class ToyBatches:
    """Every step: all labeled points, `batch` unlabeled points for D and, with a learned generator, another
    `batch` for G (drawn with replacement from `rng`), or `batch` fake points from `sampler`."""

    def __init__(self, data: Toy2D, batch: int, rng: np.random.Generator,
                 sampler: Callable[[int], np.ndarray] | None, for_generator: bool):
        self.xl, self.yl, self.xu = (torch.from_numpy(a) for a in (data.x_lab, data.y_lab, data.x_unl))
        self.batch, self.rng, self.sampler, self.for_generator = batch, rng, sampler, for_generator

    def __iter__(self):
        return self

    def __next__(self) -> dict[str, Tensor]:
        b = {"x_lab": self.xl, "y_lab": self.yl}
        if self.sampler is not None:
            b["x_fake"] = torch.from_numpy(self.sampler(self.batch))
        b["x_unl"] = self.xu[torch.from_numpy(self.rng.integers(0, len(self.xu), self.batch))]
        if self.for_generator:
            b["x_unl_g"] = self.xu[torch.from_numpy(self.rng.integers(0, len(self.xu), self.batch))]
        return b


def train_toy(data: Toy2D, generator: str, sampler: Callable[[int], np.ndarray] | None = None, steps: int = 3000,
              hidden: int = 64, batch: int = 128, lambda_u: float = 0.5, lambda_ent: float = 0.0,
              seed: int = 0, run_dir: str | Path | None = None) -> ToyResult:
    """Train the discriminator (and the FM generator) with `train.fit` and the image recipe's `ComplementGAN`
    step; `sampler` gives the complement / perfect points. The run's files go to `run_dir` (None: a temporary
    directory; the sweep of `benchmarks/gan_ssl_2d.py` keeps only the returned networks)."""
    if generator not in GENERATORS:
        raise ValueError(f"generator must be one of {GENERATORS}, got {generator!r}")
    if generator in ("complement", "perfect") and sampler is None:
        raise ValueError(f"generator={generator!r} needs a sampler")
    if run_dir is None:
        with tempfile.TemporaryDirectory() as tmp:
            return train_toy(data, generator, sampler, steps, hidden, batch, lambda_u, lambda_ent, seed, tmp)
    torch.manual_seed(seed)
    nets = nn.ModuleDict({"discriminator": MLPDiscriminator(data.n_classes, hidden)})
    if generator == "fm":
        nets["generator"] = MLPGenerator(hidden=hidden)
    cfg = GanSSLConfig(method="supervised" if generator == "supervised" else "gan", epochs=1, lr_d=3e-3,
                       betas_d=(0.5, 0.999), lr_g=1e-3, betas_g=(0.0, 0.999), lambda_u=lambda_u,
                       lambda_ent=lambda_ent, fm_distance="l2sq_mean", seed=seed)
    method = ComplementGAN(cfg, nets, iters_per_epoch=steps)  # one "epoch": a constant learning rate
    fakes = sampler if generator in ("complement", "perfect") else None
    batches = ToyBatches(data, batch, np.random.default_rng(seed), fakes, "generator" in nets)
    fit(nets, method, batches, TrainConfig(max_steps=steps, clip_norm=0.0, precision="fp32", log_every=100,
                                           eval_every=0), run_dir, desc=f"2-D {generator}", unit="points")
    nets.eval()
    return ToyResult(nets["discriminator"], nets["generator"] if "generator" in nets else None, sampler)


@torch.no_grad()
def generated_points(res: ToyResult, n: int, seed: int = 0) -> np.ndarray | None:
    if res.gen is not None:
        g = torch.Generator().manual_seed(seed)
        return res.gen(uniform_noise(n, res.gen.d_z, generator=g)).numpy()
    return res.sampler(n) if res.sampler is not None else None


@torch.no_grad()
def evaluate_toy(res: ToyResult, data: Toy2D, n_gen: int = 1000) -> dict[str, float]:
    """Test accuracy and the Assumption-1 ratios r_real (A3, test points) and r_gen (A2, generated points)."""
    logits = res.disc(torch.from_numpy(data.x_test))
    out = {"accuracy": float((logits.argmax(-1) == torch.from_numpy(data.y_test)).float().mean()),
           "r_real": float((logits.max(-1).values > 0).float().mean())}
    xg = generated_points(res, n_gen)
    if xg is not None:
        out["r_gen"] = float((res.disc(torch.from_numpy(xg)).max(-1).values < 0).float().mean())
    return out
