"""The complement-GAN semi-supervised method on images (thesis Y §3.1.5; spec complement-gan.md §2.7.7, §3.2-3.3):
its config and its D / G updates as a `train.step.Step`; `paradigms.complement_gan.fit_gan_ssl` trains it.

One training step is one iteration; one pass over the unlabeled images is an epoch:

    D update   L_D = CE(x_l) + λ_u [softplus(-LSE(l(x_u))) + softplus(LSE(l(sg[G(z)])))] + λ_ent H(softmax(l(x_u)))
    G update   L_G = FM(h(G(z)), h(x_u')) + λ_pt PT(h(G(z))) + λ_vi VI(z | G(z)) + λ_ld LD(log p(G(z)))
               with D differentiated through but not updated (held), the VI encoder stepped with G, the density
               model frozen (outside the trained networks; no no_grad: G needs its gradient)

`method="supervised"` trains the same discriminator on the labeled cross-entropy only, for the same number of
iterations. Learning rates follow the reference schedule lr0·max(floor, min(3(1 - e/E), 1)) per epoch (flat for
two thirds, then linear to the floor); Adam β=(0.5, ·) for D and (0, ·) for G. The step's checkpointed state is
LD's random stream and its threshold ε with the log-densities of four probe images (the paradigm reuses ε on a
resume with the same density model).

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from genfeat.config import require_at_least
from genfeat.errors import ConfigError
from genfeat.losses.gan_ssl import (
    FM_DISTANCES,
    LD_FORMS,
    discriminator_loss,
    feature_matching,
    low_density,
    pull_away,
    uniform_noise,
    vi_nll,
)
from genfeat.train import distributed as D
from genfeat.train.optim import adam
from genfeat.train.step import Step, Update


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
