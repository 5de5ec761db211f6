"""Image loaders on small files written in the real formats: the MNIST pickle, IDX, SVHN .mat, CIFAR-10 batches."""

from __future__ import annotations

import gzip
import os
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from genfeat.data.images import (
    FASHION_DIR,
    MNIST_PKL,
    load_cifar10,
    load_fashion_mnist,
    load_mnist,
    load_svhn_mat,
    read_idx,
)
from genfeat.errors import DataError


def _home() -> Path:
    return Path(os.environ["GENFEAT_DATA"])


def test_mnist_pickle():
    rng = np.random.default_rng(0)
    splits = tuple((rng.random((n, 784), dtype=np.float32), rng.integers(0, 10, n)) for n in (50, 20, 20))
    path = _home() / "mnist" / MNIST_PKL
    path.parent.mkdir(parents=True)
    with gzip.open(path, "wb") as f:
        pickle.dump(splits, f, protocol=2)
    data = load_mnist()
    assert data["train"].x.shape == (50, 1, 28, 28) and len(data["test"]) == 20
    np.testing.assert_array_equal(data["valid"].x.reshape(20, -1), splits[1][0])
    np.testing.assert_array_equal(data["test"].y, splits[2][1])


def test_a_pickle_with_code_is_refused():
    path = _home() / "mnist" / MNIST_PKL
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wb") as f:
        pickle.dump((os.system, ("true",)), f)  # a callable would run on a plain pickle.load
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        load_mnist()


def _write_idx(path: Path, arr: np.ndarray) -> None:
    header = bytes([0, 0, 8, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + arr.astype(np.uint8).tobytes())


def test_idx_and_fashion_mnist():
    rng = np.random.default_rng(0)
    root = _home() / "fashion-mnist" / FASHION_DIR
    root.mkdir(parents=True)
    imgs = {p: rng.integers(0, 256, (n, 28, 28)) for p, n in (("train", 30), ("t10k", 10))}
    for p, x in imgs.items():
        _write_idx(root / f"{p}-images-idx3-ubyte.gz", x)
        _write_idx(root / f"{p}-labels-idx1-ubyte.gz", np.arange(len(x)) % 10)
    data = load_fashion_mnist()
    assert data["train"].x.shape == (30, 1, 28, 28) and data["test"].y.tolist() == list(range(10))
    np.testing.assert_allclose(data["train"].x[:, 0] * 255, imgs["train"], atol=1e-4)
    bad = root / "bad.gz"
    with gzip.open(bad, "wb") as f:
        f.write(b"\x00\x00\x0d\x01" + struct.pack(">I", 3) + b"abc")
    with pytest.raises(DataError, match="IDX"):
        read_idx(bad)


def test_svhn_mat(tmp_path):
    from scipy.io import savemat

    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (32, 32, 3, 5)).astype(np.uint8)
    y = np.array([[10], [1], [2], [10], [9]], dtype=np.uint8)
    savemat(tmp_path / "train_32x32.mat", {"X": x, "y": y})
    s = load_svhn_mat(tmp_path / "train_32x32.mat")
    assert s.x.shape == (5, 3, 32, 32) and s.y.tolist() == [0, 1, 2, 0, 9]
    np.testing.assert_allclose(s.x[2, 1] * 255, x[:, :, 1, 2], atol=1e-4)


def test_cifar10_batches(tmp_path):
    rng = np.random.default_rng(0)
    for name in [*(f"data_batch_{i}" for i in range(1, 6)), "test_batch"]:
        d = {b"batch_label": name.encode(), b"labels": list(rng.integers(0, 10, 4)),
             b"data": rng.integers(0, 256, (4, 3072)).astype(np.uint8), b"filenames": [b"a.png"] * 4}
        with open(tmp_path / name, "wb") as f:
            pickle.dump(d, f, protocol=2)
    data = load_cifar10(tmp_path)
    assert data["train"].x.shape == (20, 3, 32, 32) and len(data["test"]) == 4
    assert 0.0 <= data["train"].x.min() and data["train"].x.max() <= 1.0
    (tmp_path / "test_batch").unlink()
    with pytest.raises(DataError, match="test_batch"):
        load_cifar10(tmp_path)


