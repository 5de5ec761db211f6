"""The 2-D case study of complement-GAN SSL (thesis Y §3.1.4; spec complement-gan.md §5.1).

A (K+1)-class discriminator (MLP 2 -> 64 -> 64 = h -> K logits, fake logit fixed at 0) trained with the loss
of §2.7.6 (λ_u = 0.5) against one of four "generators":

    supervised   no unlabeled or generated data (labeled cross-entropy only)
    complement   the explicit complement generator (uniform in a box minus the data's neighbourhood)
    perfect      fresh samples of the data distribution (Proposition 1: no gain expected)
    fm           a learned generator trained by feature matching on h (z ~ U(0,1)^d, MLP, BatchNorm)

Every step uses all labeled points, 128 unlabeled and 128 generated points; Adam (3e-3, β=(0.5, 0.999)) for D,
(1e-3, β=(0, 0.999)) for the FM generator, alternating one D step and one G step (§2.7.7). Diagnostics of
Assumption 1 (Fig. 3.1, named by what they compute): r_real = share of test points with max_k l_k > 0 (A3),
r_gen = share of generated points with max_k l_k < 0 (A2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from genfeat.data.synthetic2d import Toy2D
from genfeat.losses.gan_ssl import discriminator_loss, feature_matching, uniform_noise

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


def train_toy(data: Toy2D, generator: str, sampler: Callable[[int], np.ndarray] | None = None, steps: int = 3000,
              hidden: int = 64, batch: int = 128, lambda_u: float = 0.5, lambda_ent: float = 0.0,
              seed: int = 0) -> ToyResult:
    """Train the discriminator (and the FM generator); `sampler` gives the complement / perfect points."""
    if generator not in GENERATORS:
        raise ValueError(f"generator must be one of {GENERATORS}, got {generator!r}")
    if generator in ("complement", "perfect") and sampler is None:
        raise ValueError(f"generator={generator!r} needs a sampler")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    disc = MLPDiscriminator(data.n_classes, hidden)
    opt_d = torch.optim.Adam(disc.parameters(), lr=3e-3, betas=(0.5, 0.999))
    gen = MLPGenerator(hidden=hidden) if generator == "fm" else None
    opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3, betas=(0.0, 0.999)) if gen is not None else None
    xl, yl = torch.from_numpy(data.x_lab), torch.from_numpy(data.y_lab)
    xu_all = torch.from_numpy(data.x_unl)

    def unlabeled() -> Tensor:
        return xu_all[torch.from_numpy(rng.integers(0, len(xu_all), batch))]

    for _ in range(steps):
        logits_l = disc(xl)
        if generator == "supervised":
            loss = torch.nn.functional.cross_entropy(logits_l, yl)
        else:
            if gen is not None:
                with torch.no_grad():
                    xg = gen(uniform_noise(batch, gen.d_z))
            else:
                xg = torch.from_numpy(sampler(batch))
            loss, _ = discriminator_loss(logits_l, yl, disc(unlabeled()), disc(xg.detach()), lambda_u, lambda_ent)
        opt_d.zero_grad(set_to_none=True)
        loss.backward()
        opt_d.step()
        if gen is not None:  # one FM step; D is differentiated through, not updated
            fg = disc.features(gen(uniform_noise(batch, gen.d_z)))
            with torch.no_grad():
                fu = disc.features(unlabeled())
            g_loss = feature_matching(fg, fu, "l2sq_mean")
            opt_g.zero_grad(set_to_none=True)
            g_loss.backward()
            opt_g.step()
    disc.eval()
    if gen is not None:
        gen.eval()
    return ToyResult(disc, gen, sampler)


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
