"""Complement-GAN semi-supervised image classification (thesis Y §3.1) and its density model.

    genfeat data fetch mnist
    genfeat run gan_ssl --preset mnist_100                         # FM (feature matching), 100 labels
    genfeat run gan_ssl --preset mnist_100 --train.method supervised   # the same discriminator, labels only
    genfeat run pixelcnn --preset mnist --out runs/pixelcnn-mnist    # the frozen density model for LD
    genfeat run gan_ssl --preset mnist_100_ld --density.run runs/pixelcnn-mnist   # FM + LD
    genfeat run gan_ssl --preset mnist_100 --train.lambda_pt 0.8 --train.lambda_ent 0.1   # FM + PT + Ent
    genfeat data fetch fashion-mnist
    genfeat run gan_ssl --preset fashion_mnist_1000                # 100 labels per class
    genfeat run gan_ssl --preset svhn_1000 --data.root DIR         # FM + PT + Ent; DIR holds {train,test}_32x32.mat
    genfeat run gan_ssl --preset cifar10_4000 --data.root DIR      # FM + VI; DIR holds the python batches

Framework (specs/framework.md §4.3): `Alternating(D: L_D, G: L_G)` per mini-batch. Data: MNIST's 50k training
images (all of them unlabeled, the labeled subset class-balanced with `train.seed`), its 10k validation images
for checkpoint selection, the 10k test images for the reported error count; Fashion-MNIST: 55k / 5k / 10k
(the last 5k training images held out for validation); SVHN (`train_32x32.mat`, `test_32x32.mat`; no "extra")
68,257 / 5k / 26,032 and CIFAR-10 (`data_batch_1..5`, `test_batch`) 45k / 5k / 10k, read from `data.root` (neither
can be fetched offline). MNIST-shaped images: pixels in [0, 1] for the MLPs (the MNIST pickle stores k/256; they
are rescaled to k/255 so the density model sees its 256-level grid; the density model reads 2x - 1); 32x32
colour images: [-1, 1] for the conv networks of `models/gan_ssl/conv32.py`, as the reference.
Outputs: the run record of `train/record.py` (summary.json: the validation-selected discriminator's valid / test
errors, Assumption-1 ratios, the max log-p of generated samples under the density model when one is given,
seconds per epoch; report.md; model.safetensors with `discriminator.*`, `generator.*`, `encoder.*`; checkpoints)
and `samples.png`.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from genfeat.data.batches import EpochBatches
from genfeat.data.images import COLOUR32, image_splits
from genfeat.errors import ConfigError
from genfeat.losses.gan_ssl import uniform_noise
from genfeat.models.gan_ssl.inference import PERCENTILE_IMAGES, load_density
from genfeat.models.gan_ssl.networks import GanNetConfig, build_networks
from genfeat.models.gan_ssl.pixelcnn import PixelCNN
from genfeat.models.gan_ssl.train import GanSSLConfig, assumption_ratios
from genfeat.paradigms import fit_task
from genfeat.paradigms.complement_gan import fit_gan_ssl
from genfeat.tasks.density_estimation import DensityEstimation
from genfeat.tasks.image_classification import SemiSupervisedImageClassification
from genfeat.train import distributed as D
from genfeat.train.logging import progress
from genfeat.train.loop import TrainConfig
from genfeat.train.optim import adam
from genfeat.train.record import record_fit, write_record
from genfeat.train.seed import seed_everything

DATASETS = ("mnist", "fashion_mnist", "svhn", "cifar10")


@dataclass(frozen=True)
class ImageDataConfig:
    dataset: str = "mnist"  # mnist | fashion_mnist | svhn | cifar10
    root: str = ""  # svhn / cifar10: the directory holding the standard files (they cannot be fetched offline)
    limit_train: int = 0  # > 0: use only the first N training images (tests, quick looks)

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise ConfigError(f"data.dataset must be one of {', '.join(DATASETS)}, got {self.dataset!r}")
        if self.root and self.dataset not in COLOUR32:
            raise ConfigError(f"data.root is for svhn and cifar10; {self.dataset} is read from the data home "
                              f"(`genfeat data fetch {self.dataset.replace('_', '-')}`)")


@dataclass(frozen=True)
class DensityConfig:
    run: str = ""  # a `genfeat run pixelcnn` directory; needed when train.lambda_ld > 0


@dataclass(frozen=True)
class GanSSLRunConfig:
    seed: int = 0
    data: ImageDataConfig = field(default_factory=ImageDataConfig)
    model: GanNetConfig = field(default_factory=GanNetConfig)
    train: GanSSLConfig = field(default_factory=GanSSLConfig)
    density: DensityConfig = field(default_factory=DensityConfig)


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


# ----------------------------------------------------------------------------------------- presets
def mnist_100() -> GanSSLRunConfig:
    """MNIST, 10 labels per class, feature matching; reference optimiser settings (§3.2), 20 epochs on CPU (the
    reference trains 2,000)."""
    return GanSSLRunConfig(train=GanSSLConfig(epochs=20))


def mnist_100_ld() -> GanSSLRunConfig:
    """FM + LD (the thesis's best MNIST setting): hinge LD as the reference (weight 1e-4 on 30 fresh samples with
    probability 0.1 per iteration; the reference starts after iteration 9,000 of 2,000 epochs, here after 1,000)."""
    return GanSSLRunConfig(train=GanSSLConfig(epochs=20, lambda_ld=1e-4, ld_start=1000, ld_prob=0.1))


def fashion_mnist_1000() -> GanSSLRunConfig:
    """Fashion-MNIST, 100 labels per class, feature matching (a harder second image set, stand-in for SVHN)."""
    return GanSSLRunConfig(data=ImageDataConfig(dataset="fashion_mnist"),
                           train=GanSSLConfig(epochs=20, labeled_per_class=100))


def svhn_1000() -> GanSSLRunConfig:
    """SVHN, 100 labels per class, FM + PT + Ent (the thesis's best SVHN setting, Table 3.1: 4.25% error); the
    reference's optimiser, L1 feature matching and 1e-4 learning-rate floor (spec §3.2), 20 epochs (it trains 900)."""
    return GanSSLRunConfig(data=ImageDataConfig(dataset="svhn"), train=GanSSLConfig(
        epochs=20, labeled_per_class=100, batch_labeled=64, batch_unlabeled=64, lr_d=1e-3, betas_d=(0.5, 0.999),
        lr_g=1e-3, betas_g=(0.0, 0.999), lr_floor=0.1, fm_distance="l1_mean", lambda_pt=0.8, lambda_ent=0.1))


def cifar10_4000() -> GanSSLRunConfig:
    """CIFAR-10, 400 labels per class, FM + VI (the thesis's best CIFAR-10 setting, Table 3.1: 14.41% error); the
    reference's optimiser and L1 feature matching (spec §3.2), 20 epochs (it trains 1,200)."""
    return GanSSLRunConfig(data=ImageDataConfig(dataset="cifar10"), train=GanSSLConfig(
        epochs=20, labeled_per_class=400, lr_d=6e-4, betas_d=(0.5, 0.999), lr_g=3e-4, betas_g=(0.0, 0.999),
        fm_distance="l1_mean", lambda_vi=0.01))


def tiny() -> GanSSLRunConfig:
    """Seconds, for tests."""
    return GanSSLRunConfig(data=ImageDataConfig(limit_train=300),
                           model=GanNetConfig(d_z=8, disc_sizes=(32, 16), gen_hidden=32),
                           train=GanSSLConfig(epochs=1, labeled_per_class=2, batch_labeled=20, batch_unlabeled=50,
                                              init_samples=100))


PRESETS = {"mnist_100": mnist_100, "mnist_100_ld": mnist_100_ld, "fashion_mnist_1000": fashion_mnist_1000,
           "svhn_1000": svhn_1000, "cifar10_4000": cifar10_4000, "tiny": tiny}


def pixelcnn_mnist() -> PixelCNNRunConfig:
    """PixelCNN density model of MNIST's training images (the LD term's p(x)), 3 epochs on CPU."""
    return PixelCNNRunConfig()


def pixelcnn_fashion() -> PixelCNNRunConfig:
    """The same density model on Fashion-MNIST."""
    return PixelCNNRunConfig(data=ImageDataConfig(dataset="fashion_mnist"))


def pixelcnn_tiny() -> PixelCNNRunConfig:
    """Seconds; for tests."""
    return PixelCNNRunConfig(data=ImageDataConfig(limit_train=200), filters=8, n_blocks=1, n_mix=2,
                             train=PixelCNNTrainConfig(epochs=1, batch_size=50))


PIXELCNN_PRESETS = {"mnist": pixelcnn_mnist, "fashion_mnist": pixelcnn_fashion, "tiny": pixelcnn_tiny}


# ----------------------------------------------------------------------------------------- samples
def _save_grid(images: torch.Tensor, path: Path, nrow: int = 10) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = (len(images) // nrow) * nrow
    _, C, H, W = images.shape  # pixels in [0, 1]
    grid = images[:n].reshape(-1, nrow, C, H, W).permute(0, 3, 1, 4, 2).reshape(-1, nrow * W, C).clamp(0, 1).numpy()
    if C == 1:
        plt.imsave(path, grid[..., 0], cmap="gray", vmin=0, vmax=1)
    else:
        plt.imsave(path, grid)


# ----------------------------------------------------------------------------------------- runs
def run(cfg: GanSSLRunConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    if cfg.train.lambda_ld and cfg.data.dataset in COLOUR32:
        raise ConfigError("train.lambda_ld: the LD density model is the MNIST-shaped PixelCNN; SVHN / CIFAR-10 runs "
                          "use PT, Ent or VI (the thesis's best settings: svhn_1000, cifar10_4000)")
    info = D.setup(cfg.train.device)
    seed_everything(cfg.seed)
    data = image_splits(cfg.data.dataset, cfg.data.root, cfg.data.limit_train)
    (xt, yt), (xv, yv), (xs, ys) = data["train"], data["valid"], data["test"]
    disc, gen, enc = build_networks(cfg.model, cfg.data.dataset, generator=cfg.train.method == "gan",
                                    encoder=bool(cfg.train.lambda_vi))
    density = load_density(cfg.density.run).to(info.device) if cfg.density.run else None
    if cfg.train.lambda_ld and density is None:
        raise ConfigError("train.lambda_ld > 0 needs density.run (a `genfeat run pixelcnn` directory)")

    def log_density(x01: torch.Tensor) -> torch.Tensor:
        return density.log_prob(2 * x01 - 1)

    train = dataclasses.replace(cfg.train, seed=cfg.seed)
    print(f"gan_ssl {train.method} on {cfg.data.dataset}: {len(xt):,} training images "
          f"({10 * train.labeled_per_class} labeled), " + (f"{train.epochs} epochs" if train.max_steps is None else
                                                            f"{train.max_steps} iterations"))
    t0 = time.perf_counter()
    task = SemiSupervisedImageClassification({"valid": {"x": xv, "y": yv}, "test": {"x": xs, "y": ys}})
    res = fit_gan_ssl(train, disc, gen, xt, yt, task, run_dir, encoder=enc,
                      log_density=log_density if density is not None else None, resume_from=resume_from)
    for m in (disc, gen, enc, density):  # the report's samples and ratios on the CPU
        if m is not None:
            m.cpu()
    details: dict[str, Any] = {"method": train.method, "dataset": cfg.data.dataset,
                               "labels": 10 * train.labeled_per_class,
                               "epochs": round(res.steps / (len(xt) // train.batch_unlabeled), 2),
                               "best_epoch": res.best["epoch"], "epoch_s": round(res.train_s / len(res.history), 2)}
    notes = [f"Test errors of {len(ys):,} images with the validation-selected discriminator (epoch "
             f"{res.best['epoch']} of {details['epochs']}); {details['epoch_s']} s of training per epoch."]
    if gen is not None:
        with torch.no_grad():
            samples = gen(uniform_noise(1000, gen.d_z, generator=torch.Generator().manual_seed(cfg.seed)))
        details |= assumption_ratios(disc, xs, samples)
        notes.append(f"Assumption 1: r_real = {details['r_real']:.3f} (test images with max l > 0), r_gen = "
                     f"{details['r_gen']:.3f} (generated with max l < 0).")
        if density is not None and res.epsilon is not None:
            with torch.no_grad():
                lp = torch.cat([log_density(samples[a: a + 250]) for a in range(0, 1000, 250)])
            details |= {"max_logp_generated": round(float(lp.max()), 1), "epsilon": round(res.epsilon, 1),
                        "share_above_epsilon": round(float((lp > res.epsilon).float().mean()), 4)}
            notes.append(f"Max log-p of 1,000 generated samples under the density model: "
                         f"{details['max_logp_generated']} (ε = {details['epsilon']}; share above ε "
                         f"{details['share_above_epsilon']}).")
        if info.is_main:
            _save_grid(samples[:100] if cfg.data.dataset not in COLOUR32 else (samples[:100] + 1) / 2,
                       run_dir / "samples.png")
        notes.append("![generated samples](samples.png)")
    nets = [disc] + [m for m in (gen, enc) if m is not None]
    summary = write_record(run_dir, f"gan_ssl {train.method} on {cfg.data.dataset} ({details['labels']} labels)",
                           {"valid_errors": res.best["valid_errors"], "test_errors": res.best["test_errors"]},
                           params=sum(p.numel() for m in nets for p in m.parameters()), steps=res.steps,
                           best_step=res.best_step, wall_s=time.perf_counter() - t0, train_s=res.train_s,
                           details=details, notes=notes)
    if info.is_main:
        print(f"test errors {res.best['test_errors']} (valid {res.best['valid_errors']}, epoch "
              f"{res.best['epoch']}) -> {run_dir}")
    return summary


def run_pixelcnn(cfg: PixelCNNRunConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    """Train the density model on the training images (in [-1, 1]) with Adam on bits/dim, checkpointing every
    `train.ckpt_every` steps; report test bits/dim and the training images' log-p percentiles (the LD threshold
    candidates)."""
    info = D.setup(cfg.train.device)
    seed_everything(cfg.seed)
    data = image_splits(cfg.data.dataset, cfg.data.root, cfg.data.limit_train)
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
    model.eval()
    dev = info.device
    with torch.no_grad():
        lp = torch.cat([model.log_prob(xt[a: a + 250].to(dev)).cpu() for a in
                        progress(range(0, min(len(xt), PERCENTILE_IMAGES), 250), "training log-p percentiles")])
    percentiles = {q: round(float(torch.quantile(lp, q / 100)), 1) for q in (2, 10, 20, 50)}
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
