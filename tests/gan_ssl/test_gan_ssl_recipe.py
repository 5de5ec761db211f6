"""`genfeat run pixelcnn` and `genfeat run gan_ssl` end to end on an MNIST pickle in the real format."""

from __future__ import annotations

import gzip
import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from genfeat.cli import main
from genfeat.data.images import MNIST_PKL


@pytest.fixture
def mnist_pickle():
    rng = np.random.default_rng(0)

    def split(n):
        y = rng.integers(0, 10, n)
        x = np.clip(rng.random((n, 784)) * 0.3 + y[:, None] / 12, 0, 255 / 256)
        return (np.floor(x * 256) / 256).astype(np.float32), y

    path = Path(os.environ["GENFEAT_DATA"]) / "mnist" / MNIST_PKL
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wb") as f:
        pickle.dump((split(300), split(60), split(60)), f, protocol=2)


def test_pixelcnn_then_gan_ssl_with_ld(mnist_pickle, tmp_path):
    dens = tmp_path / "dens"
    assert main(["run", "pixelcnn", "--preset", "tiny", "--out", str(dens)]) == 0
    s = json.loads((dens / "summary.json").read_text())
    assert s["test_bits_per_dim"] > 0 and s["train_logp_percentiles"]["2"] <= s["train_logp_percentiles"]["50"]
    out = tmp_path / "gan"
    assert main(["run", "gan_ssl", "--preset", "tiny", "--out", str(out), "--density.run", str(dens),
                 "--train.lambda_ld", "1e-4", "--train.ld_samples", "10"]) == 0
    g = json.loads((out / "summary.json").read_text())
    assert 0 <= g["test_errors"] <= 60 and {"r_real", "r_gen", "max_logp_generated", "epsilon"} <= set(g)
    assert (out / "samples.png").exists() and (out / "generator.safetensors").exists()


def test_supervised_baseline_and_missing_density(mnist_pickle, tmp_path):
    assert main(["run", "gan_ssl", "--preset", "tiny", "--train.method", "supervised",
                 "--out", str(tmp_path / "s")]) == 0
    s = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert "r_gen" not in s and s["method"] == "supervised"
    assert main(["run", "gan_ssl", "--preset", "tiny", "--train.lambda_ld", "1e-4", "--out", str(tmp_path / "x")]) != 0
