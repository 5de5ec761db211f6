"""The PixelCNN density model of training images (thesis Y §3.1.5; spec complement-gan.md §3.3): the frozen p(x)
of the complement GAN's low-density term (`genfeat run gan_ssl --density.run DIR`).

    genfeat data fetch mnist
    genfeat run pixelcnn --preset mnist --out runs/pixelcnn-mnist

    data        `data.images` (MNIST or Fashion-MNIST, MNIST-shaped), pixels rescaled to [-1, 1]
    task        `tasks.density_estimation.DensityEstimation`: bits/dim on the first 2,000 test images
    network     `models.gan_ssl.pixelcnn.PixelCNN` (shifted convolutions, gated residual blocks, a discretised
                logistic mixture)
    paradigm    one phase (`paradigms.fit_task`), Adam on bits/dim, no selection (the final weights), a
                checkpoint every `train.ckpt_every` steps

Summary: test bits/dim, and the training images' log-p percentiles (`models.gan_ssl.inference.logp_percentiles`),
the candidates for LD's threshold ε.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from genfeat.data.batches import EpochBatches
from genfeat.data.images import ImageDataConfig, load_images
from genfeat.errors import ConfigError
from genfeat.models.gan_ssl.inference import PERCENTILE_IMAGES, logp_percentiles
from genfeat.models.gan_ssl.pixelcnn import PixelCNN
from genfeat.paradigms import fit_task
from genfeat.tasks.density_estimation import DensityEstimation
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig
from genfeat.train.optim import adam
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


@dataclass(frozen=True)
class PixelCNNTrainConfig:
    epochs: int = 3
    max_steps: int | None = None  # the step budget; None: epochs x batches per epoch
    batch_size: int = 64
    lr: float = 1e-3
    ckpt_every: int = 200  # steps
    device: str = "auto"  # under torchrun: one rank per device, each with its share of every batch (DDP)

    def __post_init__(self) -> None:
        budget = self.max_steps if self.max_steps is not None else 1
        if min(self.epochs, self.batch_size, self.ckpt_every, budget) < 1:
            raise ConfigError("train.epochs, max_steps, batch_size and ckpt_every must be >= 1")
        if not self.lr > 0:
            raise ConfigError(f"train.lr must be > 0, got {self.lr}")


@dataclass(frozen=True)
class PixelCNNRunConfig:
    seed: int = 0
    data: ImageDataConfig = field(default_factory=ImageDataConfig)
    filters: int = 32
    n_blocks: int = 4
    n_mix: int = 5
    train: PixelCNNTrainConfig = field(default_factory=PixelCNNTrainConfig)


def mnist() -> PixelCNNRunConfig:
    """PixelCNN density model of MNIST's training images (the LD term's p(x)), 3 epochs on CPU."""
    return PixelCNNRunConfig()


def fashion_mnist() -> PixelCNNRunConfig:
    """The same density model on Fashion-MNIST."""
    return PixelCNNRunConfig(data=ImageDataConfig(dataset="fashion_mnist"))


def tiny() -> PixelCNNRunConfig:
    """Seconds; for tests."""
    return PixelCNNRunConfig(data=ImageDataConfig(limit_train=200), filters=8, n_blocks=1, n_mix=2,
                             train=PixelCNNTrainConfig(epochs=1, batch_size=50))


PRESETS = {"mnist": mnist, "fashion_mnist": fashion_mnist, "tiny": tiny}


def run(cfg: PixelCNNRunConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    info = D.setup(cfg.train.device)
    seed_everything(cfg.seed)
    data = load_images(cfg.data)
    xt, xs = data["train"][0] * 2 - 1, data["test"][0][:2000] * 2 - 1
    model = PixelCNN(1, cfg.filters, cfg.n_blocks, cfg.n_mix).to(info.device)
    tc = cfg.train
    opt = adam(model.parameters(), decoupled=False, lr=tc.lr)
    batches = EpochBatches(xt, tc.batch_size, np.random.default_rng(cfg.seed), info.rank, info.world_size)
    t0 = time.perf_counter()
    budget = tc.max_steps if tc.max_steps is not None else tc.epochs * batches.per_epoch
    loop = TrainConfig(max_steps=budget, schedule="constant", warmup_steps=0, clip_norm=0.0, precision="fp32",
                       log_every=50, eval_every=0, ckpt_every=tc.ckpt_every)
    task = DensityEstimation({"test": xs})
    res, scores = fit_task(D.wrap(model, info), task, batches, loop, run_dir, optimizer=opt, resume_from=resume_from,
                           desc="pixelcnn", select=False)  # no evaluation in training: the final weights
    test_bpd = scores["test_bits_per_dim"]
    percentiles = logp_percentiles(model, xt, info.device)
    summary = record_fit(
        run_dir, f"PixelCNN density model of {cfg.data.dataset}", {"test_bits_per_dim": round(test_bpd, 4)},
        fit=res, started=t0, params=sum(p.numel() for p in model.parameters()), last_weights=True,
        details={"epochs": round(res.step / batches.per_epoch, 2), "filters": cfg.filters, "n_blocks": cfg.n_blocks,
                 "train_logp_percentiles": percentiles,
                 "percentile_images": min(len(xt), PERCENTILE_IMAGES)},
        notes=[f"Test bits/dim on the first {len(xs):,} test images, final weights. Log-density percentiles of "
               f"the training images (candidates for the LD threshold ε): {percentiles}."])
    if info.is_main:
        print(f"pixelcnn: test {test_bpd:.4f} bits/dim; training log-p 10th percentile "
              f"{summary['train_logp_percentiles'][10]} -> {run_dir}")
    return summary
