"""Training of complement-GAN semi-supervised classifiers on images (thesis Y §3.1.5; spec complement-gan.md
§2.7.7, §3.2-3.3), as a `train.fit` method.

One training step is one iteration; one pass over the unlabeled images is an epoch:

    D update   L_D = CE(x_l) + λ_u [softplus(-LSE(l(x_u))) + softplus(LSE(l(sg[G(z)])))] + λ_ent H(softmax(l(x_u)))
    G update   L_G = FM(h(G(z)), h(x_u')) + λ_pt PT(h(G(z))) + λ_vi VI(z | G(z)) + λ_ld LD(log p(G(z)))
               with D differentiated through but not updated (held), the VI encoder stepped with G, the density
               model frozen (outside the trained networks; no no_grad: G needs its gradient)

`method="supervised"` trains the same discriminator on the labeled cross-entropy only, for the same number of
iterations. Learning rates follow the reference schedule lr0·max(floor, min(3(1 - e/E), 1)) per epoch (flat for
two thirds, then linear to the floor); Adam β=(0.5, ·) for D and (0, ·) for G. Weight-normalised layers get their
data-dependent init from 500 unlabeled images (D) and a generated batch (G). The checkpoint kept is the one with
the fewest validation errors (not the best test error, as the reference scripts report); the test errors are
counted with it. Checkpoints hold both optimizers, the batch order, LD's random stream and its threshold ε (the
`ld_quantile`-th percentile of the first `EPSILON_IMAGES` training images' log-densities) with the log-densities
of the first four training images, so `--resume` continues bit for bit without the density pass; a resume whose
density model gives those four images other log-densities (another model) computes ε again.

Under torchrun each rank takes its part of every global batch (labeled, unlabeled and noise: every rank draws
the global noise batch and keeps its rows) and the ranks' gradients are averaged before each update (`fit`'s
averaging: D's update runs three forwards and G's holds D, which DDP's reducer does not allow). The batch-mean
and pairwise terms (feature matching, pull-away, the hinge LD's count) are computed on the global batch
(`distributed.global_batch`), the others are means of equal parts, so the ranks together follow one process's
objective. What stays per rank: the instance noise and dropout draws, and the generator's BatchNorm statistics
(per-rank batches, as DDP without SyncBatchNorm, which has no CPU kernel).
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from genfeat.config import require_at_least
from genfeat.data.batches import rank_share
from genfeat.errors import ConfigError
from genfeat.losses.gan_ssl import (
    FM_DISTANCES,
    LD_FORMS,
    density_threshold,
    discriminator_loss,
    feature_matching,
    low_density,
    pull_away,
    uniform_noise,
    vi_nll,
)
from genfeat.nn.weight_norm import init_all
from genfeat.train import checkpoint as C
from genfeat.train import distributed as D
from genfeat.train.logging import progress, read_metrics
from genfeat.train.loop import TrainConfig, fit
from genfeat.train.optim import adam
from genfeat.train.step import Step, Update

EPSILON_IMAGES = 10_000  # LD's ε is a percentile of the log-densities of the first this-many training images


@dataclass(frozen=True)
class GanSSLConfig:
    method: str = "gan"  # gan | supervised
    labeled_per_class: int = 10
    batch_labeled: int = 100
    batch_unlabeled: int = 100
    epochs: int = 20
    max_steps: int | None = None  # the step (iteration) budget; None: epochs x iterations per epoch
    lr_d: float = 3e-3
    betas_d: tuple[float, float] = (0.5, 0.9999)
    lr_g: float = 1e-3
    betas_g: tuple[float, float] = (0.0, 0.9999)
    lr_floor: float = 0.0  # schedule floor as a fraction of lr0 (the reference SVHN run keeps 1e-4 absolute)
    lambda_u: float = 0.5
    fm_distance: str = "l2sq_mean"  # l2sq_sum (Eq. 3.5) | l2sq_mean (MNIST code) | l1_mean (SVHN/CIFAR code)
    lambda_pt: float = 0.0  # pull-away (PT)
    lambda_vi: float = 0.0  # variational entropy (VI), needs an encoder
    lambda_ent: float = 0.0  # conditional entropy (Ent)
    ent_over: str = "k"  # its normalisation: k (softmax over the K classes, the reference) | k+1 (Eq. 3.6 literally)
    lambda_ld: float = 0.0  # low density (LD), needs a density model
    ld_form: str = "hinge"  # hinge (the reference) | indicator (Eq. 3.4)
    ld_quantile: float = 10.0  # ε = this percentile of the training images' log-densities
    ld_start: int = 0  # first iteration with the LD term (reference: 9000)
    ld_prob: float = 1.0  # probability of applying it at an iteration (reference: 0.1)
    ld_samples: int = 30  # fresh generated samples it is computed on
    init_samples: int = 500  # images for the weight-norm data-dependent init
    seed: int = 0  # the labeled subset, initialisation and data order
    device: str = "auto"  # under torchrun: one rank per device, each with its part of every batch
    reschedule: bool = False  # a resume with another budget: accept the decay recomputed over it (TrainConfig's)

    def __post_init__(self) -> None:
        if self.method not in ("gan", "supervised"):
            raise ConfigError(f"gan_ssl method must be gan or supervised, got {self.method!r}")
        if self.ent_over not in ("k", "k+1"):
            raise ConfigError(f"ent_over must be k or k+1, got {self.ent_over!r}")
        if self.epochs < 1 or self.labeled_per_class < 1 or (self.max_steps is not None and self.max_steps < 1):
            raise ConfigError("epochs, max_steps and labeled_per_class must be >= 1")
        # checked here, not where they are first used: LD starts at iteration ld_start, hours into a run
        if self.fm_distance not in FM_DISTANCES:
            raise ConfigError(f"fm_distance must be one of {', '.join(FM_DISTANCES)}, got {self.fm_distance!r}")
        if self.ld_form not in LD_FORMS:
            raise ConfigError(f"ld_form must be one of {', '.join(LD_FORMS)}, got {self.ld_form!r}")
        if not 0 <= self.ld_quantile <= 100:
            raise ConfigError(f"ld_quantile is a percentile in [0, 100], got {self.ld_quantile}")
        if not 0 <= self.ld_prob <= 1:
            raise ConfigError(f"ld_prob is a probability in [0, 1], got {self.ld_prob}")
        require_at_least(self, 1, "batch_labeled", "batch_unlabeled", "ld_samples", "init_samples")
        require_at_least(self, 0, "lambda_u", "lambda_pt", "lambda_vi", "lambda_ent", "lambda_ld", "lr_d", "lr_g",
                         "lr_floor", "ld_start")


@dataclass
class GanSSLResult:
    disc: nn.Module  # the best-validation discriminator (eval mode)
    gen: nn.Module | None
    history: list[dict[str, float]] = field(default_factory=list)  # per epoch: mean losses, valid/test errors
    best: dict[str, float] = field(default_factory=dict)  # epoch, valid_errors, test_errors
    epsilon: float | None = None
    train_s: float = 0.0  # seconds in training steps (evaluations excluded)
    steps: int = 0
    best_step: int | None = None


def _to(batch: dict[str, Tensor], device: torch.device) -> dict[str, Tensor]:
    return {k: v.to(device) for k, v in batch.items()}


@torch.no_grad()
def assumption_ratios(disc: nn.Module, x_real: Tensor, x_gen: Tensor) -> dict[str, float]:
    """r_real = share of real (test) images with max_k l_k > 0 (A3); r_gen = share of generated ones with
    max_k l_k < 0 (A2) (thesis Fig. 3.1, named by what they compute)."""
    was = disc.training
    disc.eval()
    out = {"r_real": float((disc(x_real).amax(-1) > 0).float().mean()),
           "r_gen": float((disc(x_gen).amax(-1) < 0).float().mean())}
    disc.train(was)
    return out


class SSLBatches:
    """Iteration i of epoch e: `batch_labeled` labeled images (drawn with replacement, or the whole labeled set
    shuffled when it is not larger), slice i of one permutation of the unlabeled images for D and slice i of a
    second one for G. Both permutations are drawn at the start of each epoch. Its state (the generator, the
    epoch's permutations and the position) is checkpointed."""

    def __init__(self, x: Tensor, x_lab: Tensor, y_lab: Tensor, batch_labeled: int, batch_unlabeled: int,
                 rng: np.random.Generator, rank: int = 0, world_size: int = 1):
        self.x, self.x_lab, self.y_lab, self.rng = x, x_lab, y_lab, rng
        self.bl, self.bu = batch_labeled, batch_unlabeled
        self.per_epoch = len(x) // batch_unlabeled
        self.i, self.perms = self.per_epoch, None  # the first batch starts an epoch
        self.lab_share = rank_share(min(batch_labeled, len(y_lab)), rank, world_size)  # rank r's part of each batch
        self.unl_share = rank_share(batch_unlabeled, rank, world_size)

    def __iter__(self):
        return self

    def __next__(self) -> dict[str, Tensor]:
        if self.i == self.per_epoch:
            self.perms = torch.stack([torch.from_numpy(self.rng.permutation(len(self.x))) for _ in range(2)])
            self.i = 0
        sl = slice(self.i * self.bu, (self.i + 1) * self.bu)
        n = len(self.y_lab)
        li = torch.from_numpy(self.rng.integers(0, n, self.bl) if self.bl < n else self.rng.permutation(n))
        self.i += 1
        li, ui, gi = li[self.lab_share], self.perms[0, sl][self.unl_share], self.perms[1, sl][self.unl_share]
        return {"x_lab": self.x_lab[li], "y_lab": self.y_lab[li], "x_unl": self.x[ui], "x_unl_g": self.x[gi]}

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "i": self.i, "perms": self.perms}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.i, self.perms = state["i"], state["perms"]


class ComplementGAN(Step):
    """The D and G updates of one iteration (module docstring), on `nets` = {discriminator[, generator[,
    encoder]]}: only the D update for method=supervised or without a generator, whose fake points then come with
    each batch (`x_fake`: the 2-D case study's complement and perfect samplers)."""

    def __init__(self, cfg: GanSSLConfig, nets: nn.ModuleDict, iters_per_epoch: int,
                 log_density: Callable[[Tensor], Tensor] | None = None, epsilon: float | None = None,
                 density_probe: list[float] | None = None):
        self.cfg, self.log_density, self.epsilon, self.density_probe = cfg, log_density, epsilon, density_probe
        self.device = next(nets.parameters()).device
        self.rank, self.world = D.current().rank, D.current().world_size
        self.pyrng = random.Random(cfg.seed)  # whether LD applies at an iteration
        self.step = 0
        self.optimizers = {"discriminator": adam(nets["discriminator"].parameters(), decoupled=False, lr=cfg.lr_d,
                                                  betas=tuple(map(float, cfg.betas_d)))}
        schedule = self._lr_factor(iters_per_epoch)
        self.lr_lambdas = {"discriminator": schedule}
        if cfg.method == "supervised":
            self._updates = (Update(self.supervised_loss, "discriminator", name="loss_d"),)
            return
        if "generator" not in nets:
            self._updates = (Update(self.discriminator_loss, "discriminator", name="loss_d"),)
            return
        g_params = list(nets["generator"].parameters()) + (list(nets["encoder"].parameters()) if "encoder" in nets
                                                             else [])
        self.optimizers["generator"] = adam(g_params, decoupled=False, lr=cfg.lr_g,
                                            betas=tuple(map(float, cfg.betas_g)))
        self.lr_lambdas["generator"] = schedule
        self._updates = (Update(self.discriminator_loss, "discriminator", name="loss_d"),
                         Update(self.generator_loss, "generator", data=None, name="loss_g",
                                hold=(nets["discriminator"],)))

    def _lr_factor(self, iters: int) -> Callable[[int], float]:
        cfg = self.cfg
        epochs = cfg.epochs if cfg.max_steps is None else cfg.max_steps / iters  # the schedule spans the budget
        return lambda step: max(cfg.lr_floor, min(3.0 * (1.0 - (step // iters) / epochs), 1.0))

    def updates(self, step: int) -> Sequence[Update]:
        self.step = step
        return self._updates

    def _noise(self, n: int, d_z: int) -> Tensor:
        """z ~ U(0, 1)^d_z for this rank's n rows: every rank draws the global batch and keeps its part."""
        if self.world == 1:
            return uniform_noise(n, d_z, device=self.device)
        return uniform_noise(n * self.world, d_z, device=self.device)[self.rank * n: (self.rank + 1) * n]

    def supervised_loss(self, nets: nn.ModuleDict, b: dict[str, Tensor]):
        b = _to(b, self.device)
        loss = nn.functional.cross_entropy(nets["discriminator"](b["x_lab"]), b["y_lab"])
        return loss, len(b["x_unl"]), {"d_sup": loss.item()}

    def discriminator_loss(self, nets: nn.ModuleDict, b: dict[str, Tensor]):
        b, disc = _to(b, self.device), nets["discriminator"]
        if "x_fake" in b:
            xg = b["x_fake"]
        else:
            with torch.no_grad():
                xg = nets["generator"](self._noise(len(b["x_unl"]), nets["generator"].d_z))
        loss, parts = discriminator_loss(disc(b["x_lab"]), b["y_lab"], disc(b["x_unl"]), disc(xg),
                                         self.cfg.lambda_u, self.cfg.lambda_ent, self.cfg.ent_over)
        return loss, len(b["x_unl"]), parts

    def generator_loss(self, nets: nn.ModuleDict, b: dict[str, Tensor]):
        b, cfg, disc, gen = _to(b, self.device), self.cfg, nets["discriminator"], nets["generator"]
        z = self._noise(len(b["x_unl_g"]), gen.d_z)
        xg = gen(z)
        fg = D.global_batch(disc.features(xg))  # batch means and pairs: over every rank's rows
        with torch.no_grad():
            fu = D.global_batch(disc.features(b["x_unl_g"]))
        loss = feature_matching(fg, fu, cfg.fm_distance)
        parts = {"g_fm": loss.item()}
        if cfg.lambda_pt:
            pt = pull_away(fg)
            loss = loss + cfg.lambda_pt * pt
            parts["g_pt"] = pt.item()
        if cfg.lambda_vi:
            mu, log_sigma = nets["encoder"](xg)
            vi = vi_nll(z, mu, log_sigma)
            loss = loss + cfg.lambda_vi * vi
            parts["g_vi"] = vi.item()
        if cfg.lambda_ld and self.step >= cfg.ld_start and self.pyrng.random() < cfg.ld_prob:
            n = cfg.ld_samples // self.world
            ld = low_density(D.global_batch(self.log_density(gen(self._noise(n, gen.d_z)))), self.epsilon, cfg.ld_form)
            loss = loss + cfg.lambda_ld * ld
            parts["g_ld"] = ld.item()
        return loss, 0, parts

    def state_dict(self) -> dict[str, Any]:
        version, state, gauss = self.pyrng.getstate()
        return {"pyrng": [version, list(state), gauss], "epsilon": self.epsilon, "ld_quantile": self.cfg.ld_quantile,
                "density_probe": self.density_probe}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        version, s, gauss = state["pyrng"]
        self.pyrng.setstate((version, tuple(s), gauss))


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
                errors: Callable[[nn.Module], dict[str, float]], run_dir: str | Path,
                encoder: nn.Module | None = None, log_density: Callable[[Tensor], Tensor] | None = None,
                resume_from: str | Path | None = None) -> GanSSLResult:
    """Train on a class-balanced labeled subset of (x_train, y_train) and all of x_train as unlabeled data, with
    checkpoints, metrics.jsonl and the best weights (model.safetensors: `discriminator.*`, `generator.*`,
    `encoder.*`) in `run_dir`; `resume_from` continues a checkpoint of the same run.

    `errors(disc)`: the discriminator's misclassified images over its K real classes on the evaluated splits,
    {"valid_errors", "test_errors"} (`tasks.image_classification.SemiSupervisedImageClassification.all_errors`);
    the best-validation weights are selected on valid_errors."""
    if cfg.method == "gan" and gen is None:
        raise ConfigError("method=gan needs a generator")
    if cfg.lambda_vi and encoder is None:
        raise ConfigError("lambda_vi > 0 needs an encoder")
    if cfg.lambda_ld and log_density is None:
        raise ConfigError("lambda_ld > 0 needs a density model")
    from genfeat.data.images import labeled_subset

    info = D.setup(cfg.device)
    if cfg.lambda_ld and cfg.ld_samples % info.world_size:
        raise ConfigError(f"train.ld_samples={cfg.ld_samples} does not split over {info.world_size} ranks")
    dev = info.device
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    lab = torch.from_numpy(labeled_subset(y_train.numpy(), cfg.labeled_per_class, cfg.seed))
    n_unl = len(x_train)
    iters = n_unl // cfg.batch_unlabeled
    if iters < 1:
        raise ConfigError(f"{n_unl} training images is fewer than one unlabeled batch ({cfg.batch_unlabeled})")

    nets = nn.ModuleDict({"discriminator": disc}).to(dev)
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

    def evaluate(_: nn.Module) -> dict[str, float]:  # the discriminator's K real classes
        return errors(disc)

    budget = cfg.max_steps if cfg.max_steps is not None else cfg.epochs * iters
    loop = TrainConfig(max_steps=budget, clip_norm=0.0, precision="fp32", log_every=iters, eval_every=iters,
                       keep_last=2, early_stop_metric="valid_errors", early_stop_mode="min", reschedule=cfg.reschedule)
    res = fit(nets, method, batches, loop, run_dir, evaluate=evaluate, resume_from=resume_from,
              desc=f"gan_ssl {cfg.method}", unit="images")  # the unlabeled images of each step
    C.load_model_weights(nets, Path(run_dir) / C.WEIGHTS)  # the best-validation networks
    nets.eval()
    by_step: dict[int, dict[str, float]] = {}
    for row in read_metrics(run_dir):
        by_step.setdefault(row["step"], {"epoch": row["step"] // iters}).update(row)
    history = [by_step[s] for s in sorted(by_step) if "valid_errors" in by_step[s]]
    best = res.best_eval  # kept across resumes
    return GanSSLResult(disc, gen, history, {"epoch": best["step"] // iters, "valid_errors": int(best["valid_errors"]),
                                             "test_errors": int(best["test_errors"])}, epsilon, res.train_time,
                        res.step, res.best_step)
