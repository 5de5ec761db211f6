"""The complement GAN's adversarial paradigm (thesis Y §3.1.5; spec complement-gan.md §2.7.7, §3.2-3.3): a
discriminator over K real classes and a generator (with a VI encoder, a frozen density model for LD), trained with
the alternating D / G updates of `models.gan_ssl.train.ComplementGAN` as one `fit_task` phase on a
`SemiSupervisedImageClassification` task.

    fit_gan_ssl(cfg, disc, gen, x_train, y_train, task, run_dir, encoder=, log_density=, resume_from=)
    train_toy(data, generator, sampler, steps, ...)   the 2-D case study (thesis Y §3.1.4), and evaluate_toy

Data: a class-balanced labeled subset of (x_train, y_train) drawn with `cfg.seed`, all of x_train as unlabeled
images (`data.ssl_batches.SSLBatches`); one step is one iteration, one pass over the unlabeled images an epoch, and
the task's validation errors are counted after every epoch. Weight-normalised layers get their data-dependent
init from `cfg.init_samples` unlabeled images (D and E) and a generated batch (G). The weights kept are those with
the fewest validation errors (not the best test error, as the reference scripts report); the test errors are
counted with them. LD's threshold ε is the `ld_quantile`-th percentile of the log-densities of the first
`EPSILON_IMAGES` training images; the checkpoint keeps it with the log-densities of four probe images, so a resume
with the same density model skips that pass (`_saved_epsilon`). Under torchrun, each rank takes its share of every
global batch (`ComplementGAN`'s docstring says what stays per rank).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from genfeat.data.few_labels import per_class_subset
from genfeat.data.ssl_batches import SSLBatches
from genfeat.data.synthetic2d import Toy2D, ToyBatches
from genfeat.errors import ConfigError
from genfeat.losses.gan_ssl import density_threshold, uniform_noise
from genfeat.models.gan_ssl.toy2d import GENERATORS, MLPDiscriminator, MLPGenerator
from genfeat.models.gan_ssl.train import ComplementGAN, GanSSLConfig
from genfeat.nn.weight_norm import init_all
from genfeat.paradigms.one_phase import fit_task
from genfeat.tasks.image_classification import SemiSupervisedImageClassification
from genfeat.train import checkpoint as C
from genfeat.train import distributed as D
from genfeat.train.logging import progress, read_metrics
from genfeat.train.loop import TrainConfig, fit

EPSILON_IMAGES = 10_000  # LD's ε is a percentile of the log-densities of the first this-many training images


class GanNets(nn.ModuleDict):
    """The run's networks under one module (one checkpoint: `discriminator.*`, `generator.*`, `encoder.*`); called,
    it is the discriminator, which is what the task scores."""

    def forward(self, x: Tensor) -> Tensor:
        return self["discriminator"](x)


@dataclass
class GanSSLResult:
    disc: nn.Module  # the best-validation discriminator (eval mode)
    gen: nn.Module | None
    history: list[dict[str, float]] = field(default_factory=list)  # per epoch: mean losses, validation errors
    best: dict[str, float] = field(default_factory=dict)  # epoch, valid_errors, test_errors
    epsilon: float | None = None
    train_s: float = 0.0  # seconds in training steps (evaluations excluded)
    steps: int = 0
    best_step: int | None = None


def _saved_epsilon(ckpt: str | Path | None, ld_quantile: float, density_probe: list[float], rank: int) -> float | None:
    """The LD threshold ε that checkpoint `ckpt` of this run saved with its method state, if it was taken at the
    same quantile with the same density model (the same log-densities of the probe images, to 1e-5 relative): a
    resumed run then skips the density pass over `EPSILON_IMAGES` training images (minutes of PixelCNN on a CPU). None
    (compute it) without a checkpoint, when the checkpoint holds none, or when the quantile or model differ."""
    if ckpt is None:
        return None
    saved = C.load_trainer_state(ckpt)["method"][rank]
    same_model = saved.get("density_probe") is not None and np.allclose(saved["density_probe"], density_probe,
                                                                         rtol=1e-5, atol=0.0)
    return saved.get("epsilon") if same_model and saved.get("ld_quantile") == ld_quantile else None


def fit_gan_ssl(cfg: GanSSLConfig, disc: nn.Module, gen: nn.Module | None, x_train: Tensor, y_train: Tensor,
                task: SemiSupervisedImageClassification, run_dir: str | Path,
                encoder: nn.Module | None = None, log_density: Callable[[Tensor], Tensor] | None = None,
                resume_from: str | Path | None = None) -> GanSSLResult:
    """Train on a class-balanced labeled subset of (x_train, y_train) and all of x_train as unlabeled data, with
    checkpoints, metrics.jsonl and the best weights (model.safetensors: `discriminator.*`, `generator.*`,
    `encoder.*`) in `run_dir`; `resume_from` continues a checkpoint of the same run. `task`: the labeled
    validation and test images; the weights are selected on the discriminator's validation errors over its K
    real classes, and its test errors are counted with them."""
    if cfg.method == "gan" and gen is None:
        raise ConfigError("method=gan needs a generator")
    if cfg.lambda_vi and encoder is None:
        raise ConfigError("lambda_vi > 0 needs an encoder")
    if cfg.lambda_ld and log_density is None:
        raise ConfigError("lambda_ld > 0 needs a density model")
    info = D.setup(cfg.device)
    if cfg.lambda_ld and cfg.ld_samples % info.world_size:
        raise ConfigError(f"train.ld_samples={cfg.ld_samples} does not split over {info.world_size} ranks")
    dev = info.device
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    lab = torch.from_numpy(per_class_subset(y_train.numpy(), cfg.labeled_per_class, cfg.seed,
                                            "train.labeled_per_class"))
    n_unl = len(x_train)
    iters = n_unl // cfg.batch_unlabeled
    if iters < 1:
        raise ConfigError(f"{n_unl} training images is fewer than one unlabeled batch ({cfg.batch_unlabeled})")

    nets = GanNets({"discriminator": disc}).to(dev)
    init_all(disc, x_train[torch.from_numpy(rng.choice(n_unl, cfg.init_samples, replace=False))].to(dev))
    epsilon = probe = None
    if cfg.method == "gan":
        nets["generator"] = gen.to(dev)
        init_all(gen, uniform_noise(cfg.init_samples, gen.d_z).to(dev))
        if encoder is not None:
            nets["encoder"] = encoder.to(dev)
            init_all(encoder, x_train[:cfg.init_samples].to(dev))
        if log_density is not None:
            with torch.no_grad():  # what identifies the density model in a checkpoint
                probe = log_density(x_train[:4].to(dev)).cpu().tolist()
            epsilon = _saved_epsilon(resume_from, cfg.ld_quantile, probe, info.rank)
            budget = cfg.max_steps if cfg.max_steps is not None else cfg.epochs * iters
            if budget <= cfg.ld_start:  # ε would never be read: skip minutes of density over the training images
                print(f"genfeat: warning: the run's {budget:,} steps end before train.ld_start {cfg.ld_start:,}: "
                      "the low-density term never applies (ε is not computed)", file=sys.stderr)
            elif epsilon is None:
                with torch.no_grad():
                    lp = torch.cat([log_density(x_train[a: a + 500].to(dev)).cpu() for a in
                                    progress(range(0, min(n_unl, EPSILON_IMAGES), 500),
                                             "density of the training images (LD ε)")])
                epsilon = float(density_threshold(lp, cfg.ld_quantile))
    method = ComplementGAN(cfg, nets, iters, log_density, epsilon, probe)
    batches = SSLBatches(x_train, x_train[lab], y_train[lab], cfg.batch_labeled, cfg.batch_unlabeled, rng,
                         info.rank, info.world_size)

    budget = cfg.max_steps if cfg.max_steps is not None else cfg.epochs * iters
    loop = TrainConfig(max_steps=budget, clip_norm=0.0, precision="fp32", log_every=iters, eval_every=iters,
                       keep_last=2, reschedule=cfg.reschedule)
    res, scores = fit_task(nets, task, batches, loop, run_dir, method=method, resume_from=resume_from,
                           desc=f"gan_ssl {cfg.method}")  # the best-validation networks, loaded back
    nets.eval()
    by_step: dict[int, dict[str, float]] = {}
    for row in read_metrics(run_dir):
        by_step.setdefault(row["step"], {"epoch": row["step"] // iters}).update(row)
    history = [by_step[s] for s in sorted(by_step) if "valid_errors" in by_step[s]]
    best = {"epoch": res.best_eval["step"] // iters, "valid_errors": int(scores["valid_errors"]),
            "test_errors": int(scores["test_errors"])}  # the selected step is kept across resumes
    return GanSSLResult(disc, gen, history, best, epsilon, res.train_time, res.step, res.best_step)


# ----------------------------------------------------------------------------------------- the 2-D case study
@dataclass
class ToyResult:
    disc: MLPDiscriminator
    gen: MLPGenerator | None
    sampler: Callable[[int], np.ndarray] | None


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
