"""Training of complement-GAN semi-supervised classifiers on images (thesis Y §3.1.5; spec complement-gan.md
§2.7.7, §3.2-3.3).

Per iteration (one pass over the unlabeled batches is an epoch):

    D step   L_D = CE(x_l) + λ_u [softplus(-LSE(l(x_u))) + softplus(LSE(l(sg[G(z)])))] + λ_ent H(softmax(l(x_u)))
    G step   L_G = FM(h(G(z)), h(x_u')) + λ_pt PT(h(G(z))) + λ_vi VI(z | G(z)) + λ_ld LD(log p(G(z)))
             with D differentiated through but not updated (its parameters are frozen for the step), the VI
             encoder stepped with G, the density model frozen (no no_grad: G needs its gradient)

`method="supervised"` trains the same discriminator on the labeled cross-entropy only, for the same number of
iterations. Learning rates follow the reference schedule lr0·max(floor, min(3(1 - e/E), 1)) per epoch (flat for
two thirds, then linear to the floor); Adam β=(0.5, ·) for D and (0, ·) for G. Weight-normalised layers get their
data-dependent init from 500 unlabeled images (D) and a generated batch (G). The checkpoint kept is the one with
the fewest validation errors (not the best test error, as the reference scripts report); the test errors are
counted with it.
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from genfeat.errors import ConfigError
from genfeat.losses.gan_ssl import (
    density_threshold,
    discriminator_loss,
    feature_matching,
    low_density,
    pull_away,
    uniform_noise,
    vi_nll,
)
from genfeat.nn.weight_norm import init_all


@dataclass(frozen=True)
class GanSSLConfig:
    method: str = "gan"  # gan | supervised
    labeled_per_class: int = 10
    batch_labeled: int = 100
    batch_unlabeled: int = 100
    epochs: int = 20
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

    def __post_init__(self) -> None:
        if self.method not in ("gan", "supervised"):
            raise ConfigError(f"gan_ssl method must be gan or supervised, got {self.method!r}")
        if self.ent_over not in ("k", "k+1"):
            raise ConfigError(f"ent_over must be k or k+1, got {self.ent_over!r}")
        if self.epochs < 1 or self.labeled_per_class < 1:
            raise ConfigError("epochs and labeled_per_class must be >= 1")


@dataclass
class GanSSLResult:
    disc: nn.Module  # the best-validation discriminator (eval mode)
    gen: nn.Module | None
    history: list[dict[str, float]] = field(default_factory=list)
    best: dict[str, float] = field(default_factory=dict)
    epsilon: float | None = None


@torch.no_grad()
def count_errors(disc: nn.Module, x: Tensor, y: Tensor, batch: int = 1000) -> int:
    was = disc.training
    disc.eval()
    wrong = sum(int((disc(x[a: a + batch]).argmax(-1) != y[a: a + batch]).sum()) for a in range(0, len(y), batch))
    disc.train(was)
    return wrong


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


def _lr_factor(cfg: GanSSLConfig, epoch: int) -> float:
    return max(cfg.lr_floor, min(3.0 * (1.0 - epoch / cfg.epochs), 1.0))


def fit_gan_ssl(cfg: GanSSLConfig, disc: nn.Module, gen: nn.Module | None, x_train: Tensor, y_train: Tensor,
                x_valid: Tensor, y_valid: Tensor, x_test: Tensor, y_test: Tensor, encoder: nn.Module | None = None,
                log_density: Callable[[Tensor], Tensor] | None = None, log: Callable[[dict], None] | None = None,
                progress: bool = True) -> GanSSLResult:
    """Train on a class-balanced labeled subset of (x_train, y_train) and all of x_train as unlabeled data."""
    if cfg.method == "gan" and gen is None:
        raise ConfigError("method=gan needs a generator")
    if cfg.lambda_vi and encoder is None:
        raise ConfigError("lambda_vi > 0 needs an encoder")
    if cfg.lambda_ld and log_density is None:
        raise ConfigError("lambda_ld > 0 needs a density model")
    from genfeat.data.images import labeled_subset

    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    pyrng = random.Random(cfg.seed)
    lab = torch.from_numpy(labeled_subset(y_train.numpy(), cfg.labeled_per_class, cfg.seed))
    xl_all, yl_all = x_train[lab], y_train[lab]
    n_unl = len(x_train)
    iters = n_unl // cfg.batch_unlabeled

    init_all(disc, x_train[torch.from_numpy(rng.choice(n_unl, cfg.init_samples, replace=False))])
    opt_d = torch.optim.Adam(disc.parameters(), lr=cfg.lr_d, betas=tuple(map(float, cfg.betas_d)))
    g_params: list[nn.Parameter] = []
    epsilon = None
    if cfg.method == "gan":
        init_all(gen, uniform_noise(cfg.init_samples, gen.d_z))
        g_params = list(gen.parameters())
        if encoder is not None:
            init_all(encoder, x_train[:cfg.init_samples])
            g_params += list(encoder.parameters())
        if log_density is not None:
            with torch.no_grad():
                chunks = range(0, min(n_unl, 10_000), 500)
                lp = torch.cat([log_density(x_train[a: a + 500]) for a in
                                tqdm(chunks, desc="density of the training images (LD threshold)", leave=False,
                                     disable=not progress)])
            epsilon = float(density_threshold(lp, cfg.ld_quantile))
    opt_g = torch.optim.Adam(g_params, lr=cfg.lr_g, betas=tuple(map(float, cfg.betas_g))) if g_params else None

    best_state, best = None, {"valid_errors": float("inf")}
    history = []
    it = 0
    bar = tqdm(total=cfg.epochs * iters, desc=f"gan_ssl {cfg.method}", disable=not progress, unit="it",
               dynamic_ncols=True, mininterval=1.0)  # moves per iteration; the postfix shows the epoch's errors
    for epoch in range(cfg.epochs):
        t0 = time.perf_counter()
        f = _lr_factor(cfg, epoch)
        for group in opt_d.param_groups:
            group["lr"] = cfg.lr_d * f
        if opt_g is not None:
            for group in opt_g.param_groups:
                group["lr"] = cfg.lr_g * f
        perm_u = torch.from_numpy(rng.permutation(n_unl))
        perm_u2 = torch.from_numpy(rng.permutation(n_unl))
        sums: dict[str, float] = {}
        for i in range(iters):
            sl = slice(i * cfg.batch_unlabeled, (i + 1) * cfg.batch_unlabeled)
            li = torch.from_numpy(rng.integers(0, len(yl_all), cfg.batch_labeled)) \
                if cfg.batch_labeled < len(yl_all) else torch.from_numpy(rng.permutation(len(yl_all)))
            xl, yl = xl_all[li], yl_all[li]
            # --- D step
            if cfg.method == "supervised":
                loss_d = nn.functional.cross_entropy(disc(xl), yl)
                parts = {"d_sup": loss_d.item()}
            else:
                with torch.no_grad():
                    xg = gen(uniform_noise(cfg.batch_unlabeled, gen.d_z))
                loss_d, parts = discriminator_loss(disc(xl), yl, disc(x_train[perm_u[sl]]), disc(xg),
                                                   cfg.lambda_u, cfg.lambda_ent, cfg.ent_over)
            opt_d.zero_grad(set_to_none=True)
            loss_d.backward()
            opt_d.step()
            # --- G (+ encoder) step: D frozen, differentiated through
            if opt_g is not None:
                disc.requires_grad_(False)
                z = uniform_noise(cfg.batch_unlabeled, gen.d_z)
                xg = gen(z)
                fg = disc.features(xg)
                with torch.no_grad():
                    fu = disc.features(x_train[perm_u2[sl]])
                loss_g = feature_matching(fg, fu, cfg.fm_distance)
                parts["g_fm"] = loss_g.item()
                if cfg.lambda_pt:
                    pt = pull_away(fg)
                    loss_g = loss_g + cfg.lambda_pt * pt
                    parts["g_pt"] = pt.item()
                if cfg.lambda_vi:
                    mu, log_sigma = encoder(xg)
                    vi = vi_nll(z, mu, log_sigma)
                    loss_g = loss_g + cfg.lambda_vi * vi
                    parts["g_vi"] = vi.item()
                if cfg.lambda_ld and it >= cfg.ld_start and pyrng.random() < cfg.ld_prob:
                    lp = log_density(gen(uniform_noise(cfg.ld_samples, gen.d_z)))
                    ld = low_density(lp, epsilon, cfg.ld_form)
                    loss_g = loss_g + cfg.lambda_ld * ld
                    parts["g_ld"] = ld.item()
                opt_g.zero_grad(set_to_none=True)
                loss_g.backward()
                opt_g.step()
                disc.requires_grad_(True)
            for k, v in parts.items():
                sums[k] = sums.get(k, 0.0) + v
            it += 1
            bar.update(1)
        rec = {"epoch": epoch + 1, "epoch_s": round(time.perf_counter() - t0, 2),
               **{k: v / iters for k, v in sums.items()},
               "valid_errors": count_errors(disc, x_valid, y_valid), "test_errors": count_errors(disc, x_test, y_test)}
        if rec["valid_errors"] < best["valid_errors"]:
            best = {"epoch": epoch + 1, "valid_errors": rec["valid_errors"], "test_errors": rec["test_errors"]}
            best_state = copy.deepcopy(disc.state_dict())
        history.append(rec)
        bar.set_postfix(epoch=epoch + 1, valid_err=rec["valid_errors"], test_err=rec["test_errors"])
        if log is not None:
            log(rec)
    bar.close()
    disc.load_state_dict(best_state)
    disc.eval()
    if gen is not None:
        gen.eval()
    return GanSSLResult(disc, gen, history, best, epsilon)
