"""The frozen density model of the low-density term (thesis Y §3.1.5): load a finished `genfeat run pixelcnn`
directory, and the log-density percentiles of training images that LD's threshold ε is chosen among."""

from __future__ import annotations

from pathlib import Path

from genfeat.config import recorded_run
from genfeat.models.gan_ssl.pixelcnn import PixelCNN
from genfeat.train.checkpoint import WEIGHTS, load_model_weights

PERCENTILE_IMAGES = 5000  # the density model's summary: log-p percentiles of the first this-many training images


def load_density(run: str | Path) -> PixelCNN:
    """A frozen PixelCNN from a `genfeat run pixelcnn` directory (eval mode, no parameter gradients)."""
    run = Path(run)
    cfg = recorded_run(run, "pixelcnn", (WEIGHTS,),
                       "train one with `genfeat run pixelcnn --preset mnist --out DIR`")["config"]
    model = PixelCNN(1, cfg["filters"], cfg["n_blocks"], cfg["n_mix"])
    load_model_weights(model, run / WEIGHTS)
    return model.eval().requires_grad_(False)
