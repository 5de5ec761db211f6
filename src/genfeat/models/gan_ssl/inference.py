"""The frozen density model of the low-density term (thesis Y §3.1.5) and what a finished run reports of its
networks.

    load_density(run)                                   a frozen PixelCNN from a `genfeat run pixelcnn` directory
    logp_percentiles(density, x, device)                the log-density percentiles (2, 10, 20, 50) of the first
                                                        PERCENTILE_IMAGES training images: LD's threshold ε is
                                                        chosen among them
    sample_diagnostics(disc, gen, x_test, seed, ...)    1,000 samples of G, their Assumption-1 ratios against the
                                                        test images (`train.assumption_ratios`, Fig. 3.1) and,
                                                        with the density model and ε, their max log-p and the
                                                        share above ε
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor, nn

from genfeat.config import recorded_run
from genfeat.losses.gan_ssl import uniform_noise
from genfeat.models.gan_ssl.pixelcnn import PixelCNN
from genfeat.models.gan_ssl.train import assumption_ratios
from genfeat.train.checkpoint import WEIGHTS, load_model_weights
from genfeat.train.logging import progress

PERCENTILE_IMAGES = 5000  # the density model's summary: log-p percentiles of the first this-many training images


def load_density(run: str | Path) -> PixelCNN:
    """A frozen PixelCNN from a `genfeat run pixelcnn` directory (eval mode, no parameter gradients)."""
    run = Path(run)
    cfg = recorded_run(run, "pixelcnn", (WEIGHTS,),
                       "train one with `genfeat run pixelcnn --preset mnist --out DIR`")["config"]
    model = PixelCNN(1, cfg["filters"], cfg["n_blocks"], cfg["n_mix"])
    load_model_weights(model, run / WEIGHTS)
    return model.eval().requires_grad_(False)


@torch.no_grad()
def logp_percentiles(density: PixelCNN, x: Tensor, device: torch.device | str = "cpu",
                     n_images: int = PERCENTILE_IMAGES, batch: int = 250) -> dict[int, float]:
    """`x`: images in [-1, 1] (the density model's range); percentiles rounded to 0.1 nat."""
    density.eval()
    n = min(len(x), n_images)
    lp = torch.cat([density.log_prob(x[a: min(a + batch, n)].to(device)).cpu() for a in
                    progress(range(0, n, batch), "training log-p percentiles")])
    return {q: round(float(torch.quantile(lp, q / 100)), 1) for q in (2, 10, 20, 50)}


@torch.no_grad()
def sample_diagnostics(disc: nn.Module, gen: nn.Module, x_test: Tensor, seed: int,
                       log_density: Callable[[Tensor], Tensor] | None = None, epsilon: float | None = None,
                       n: int = 1000, batch: int = 250) -> tuple[dict[str, float], Tensor]:
    """(figures, the samples): r_real / r_gen; with `log_density` (of images in G's range) and LD's `epsilon`
    also max_logp_generated, epsilon and share_above_epsilon. The noise is drawn from its own generator, seeded."""
    samples = gen(uniform_noise(n, gen.d_z, generator=torch.Generator().manual_seed(seed)))
    out = assumption_ratios(disc, x_test, samples)
    if log_density is not None and epsilon is not None:
        lp = torch.cat([log_density(samples[a: a + batch]) for a in range(0, n, batch)])
        out |= {"max_logp_generated": round(float(lp.max()), 1), "epsilon": round(epsilon, 1),
                "share_above_epsilon": round(float((lp > epsilon).float().mean()), 4)}
    return out, samples
