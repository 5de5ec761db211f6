"""What a finished complement-GAN run reports of its networks (`models/gan_ssl/inference.py`) and the samples'
figure (`analysis/image_grid.py`)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from genfeat.analysis.image_grid import save_image_grid
from genfeat.models.gan_ssl.inference import logp_percentiles, sample_diagnostics


class Shift(nn.Module):
    """G: z ~ U(0, 1)^2 -> z - 0.5, so about a quarter of the samples have both coordinates < 0."""

    d_z = 2

    def forward(self, z):
        return z - 0.5


class Logits(nn.Module):
    """D: the image's two pixels are its two logits."""

    def forward(self, x):
        return x.reshape(len(x), -1)


def test_sample_diagnostics_reads_the_seeded_samples():
    x_test = torch.tensor([[1.0, -1.0], [-2.0, -1.0], [0.5, 0.2], [-0.1, -0.3]])  # max l > 0: rows 0 and 2
    fig, samples = sample_diagnostics(Logits(), Shift(), x_test, seed=3, n=1000)
    z = torch.rand(1000, 2, generator=torch.Generator().manual_seed(3))
    assert torch.equal(samples, z - 0.5) and set(fig) == {"r_real", "r_gen"}  # no density model: no log-p
    assert fig["r_real"] == 0.5 and fig["r_gen"] == float(((z - 0.5).amax(-1) < 0).float().mean())
    fig, _ = sample_diagnostics(Logits(), Shift(), x_test, seed=3, log_density=lambda x: x.sum(-1), epsilon=0.25,
                                n=1000)
    lp = (z - 0.5).sum(-1)
    assert fig["max_logp_generated"] == round(float(lp.max()), 1) and fig["epsilon"] == 0.2
    assert fig["share_above_epsilon"] == round(float((lp > 0.25).float().mean()), 4)
    assert sample_diagnostics(Logits(), Shift(), x_test, seed=3, log_density=lambda x: x.sum(-1))[0].keys() == {
        "r_real", "r_gen"}  # no epsilon (LD never ran): no share to report


def test_logp_percentiles_of_the_first_images():
    class Density(nn.Module):
        def log_prob(self, x):
            return x.flatten(1).sum(1)

    x = torch.arange(1000.0).reshape(1000, 1, 1, 1)
    got = logp_percentiles(Density(), x, n_images=600, batch=64)
    assert got == {q: round(float(np.percentile(np.arange(600.0), q)), 1) for q in (2, 10, 20, 50)}


def test_image_grid_places_rows_of_nrow(tmp_path):
    import matplotlib.image

    images = torch.zeros(25, 1, 4, 3)
    images[11] = 1.0  # second row, second column
    save_image_grid(images, tmp_path / "g.png", nrow=10)
    png = matplotlib.image.imread(tmp_path / "g.png")
    assert png.shape[:2] == (8, 30)  # 2 full rows of 10; the last 5 dropped
    lit = np.argwhere(png[..., 0] > 0.5)
    assert lit.min(0).tolist() == [4, 3] and lit.max(0).tolist() == [7, 5]
    colour = torch.rand(10, 3, 2, 2)
    save_image_grid(colour, tmp_path / "c.png")
    assert np.allclose(matplotlib.image.imread(tmp_path / "c.png")[:2, 2:4, :3],
                       colour[1].permute(1, 2, 0).numpy(), atol=1 / 255)
