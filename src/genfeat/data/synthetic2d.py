"""The 2-D data of the complement-GAN case study (thesis Y §3.1.4, Figs. 3.2-3.5; the generators are those the
spec complement-gan.md §5.1 defines, as the thesis gives none).

    two_circles   class 0 on radius 0.5, class 1 on radius 1.0, angle ~ U(0, 2π), noise std 0.05·radius
    four_spins    K = 4 spiral arms: t = sqrt(u), u ~ U(0.05, 1), angle 2πk/4 + 1.5πt, point t(cos, sin) + N(0, 0.03²)

`ComplementSampler` is the explicit ("oracle") complement generator: uniform in the unlabeled data's bounding
box enlarged by `margin`, rejecting points closer than `delta` to any unlabeled point (the low-density gaps
between the class manifolds). `PerfectSampler` draws fresh points of the data distribution (Proposition 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor


@dataclass(frozen=True)
class Toy2D:
    x_unl: np.ndarray  # (N, 2) float32
    y_unl: np.ndarray  # (N,) labels of the unlabeled pool (never used in training; for the labeled draw)
    x_lab: np.ndarray  # (K·per_class, 2)
    y_lab: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    name: str
    n_classes: int


def two_circles(n_per_class: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for k, r in enumerate((0.5, 1.0)):
        a = rng.uniform(0, 2 * np.pi, n_per_class)
        xs.append(np.stack([r * np.cos(a), r * np.sin(a)], 1) + rng.normal(0, 0.05 * r, (n_per_class, 2)))
        ys.append(np.full(n_per_class, k))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys).astype(np.int64)


def four_spins(n_per_class: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for k in range(4):
        t = np.sqrt(rng.uniform(0.05, 1.0, n_per_class))
        a = 2 * np.pi * k / 4 + 1.5 * np.pi * t
        xs.append(t[:, None] * np.stack([np.cos(a), np.sin(a)], 1) + rng.normal(0, 0.03, (n_per_class, 2)))
        ys.append(np.full(n_per_class, k))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys).astype(np.int64)


DATASETS = {"two_circles": (two_circles, 2, 1000), "four_spins": (four_spins, 4, 500)}


def make_toy(name: str, seed: int = 0, labeled_per_class: int = 3) -> Toy2D:
    """Unlabeled pool and test set of the spec's sizes (1000 per class for two circles, 500 for four spins),
    `labeled_per_class` labeled points drawn from the pool."""
    if name not in DATASETS:
        raise ValueError(f"unknown 2-D dataset {name!r}; known: {', '.join(DATASETS)}")
    fn, k, n = DATASETS[name]
    rng = np.random.default_rng(seed)
    x, y = fn(n, rng)
    xt, yt = fn(n, rng)
    lab = np.concatenate([rng.choice(np.flatnonzero(y == c), labeled_per_class, replace=False) for c in range(k)])
    return Toy2D(x, y, x[lab], y[lab], xt, yt, name, k)


class ComplementSampler:
    """Uniform in the enlarged bounding box, minus the delta-neighbourhood of the unlabeled data."""

    def __init__(self, x_unl: np.ndarray, margin: float = 0.3, delta: float = 0.08, seed: int = 0):
        from scipy.spatial import cKDTree

        self.lo, self.hi = x_unl.min(0) - margin, x_unl.max(0) + margin
        self.tree, self.delta = cKDTree(x_unl), delta
        self.rng = np.random.default_rng(seed)

    def accept(self, pts: np.ndarray) -> np.ndarray:
        return self.tree.query(pts, k=1)[0] >= self.delta

    def __call__(self, n: int) -> np.ndarray:
        out: list[np.ndarray] = []
        have = 0
        while have < n:
            pts = self.rng.uniform(self.lo, self.hi, (2 * n, 2))
            pts = pts[self.accept(pts)]
            out.append(pts)
            have += len(pts)
        return np.concatenate(out)[:n].astype(np.float32)


class PerfectSampler:
    """Fresh samples of the data distribution itself, labels dropped (p_G = p)."""

    def __init__(self, name: str, seed: int = 0):
        self.fn, self.k, _ = DATASETS[name]
        self.rng = np.random.default_rng(seed)

    def __call__(self, n: int) -> np.ndarray:
        x, _ = self.fn(-(-n // self.k), self.rng)
        return x[self.rng.permutation(len(x))[:n]]


class ToyBatches:
    """Every step: all labeled points, `batch` unlabeled points for D and, with a learned generator, another
    `batch` for G (drawn with replacement from `rng`), or `batch` fake points from `sampler`."""

    def __init__(self, data: Toy2D, batch: int, rng: np.random.Generator,
                 sampler: Callable[[int], np.ndarray] | None, for_generator: bool):
        self.xl, self.yl, self.xu = (torch.from_numpy(a) for a in (data.x_lab, data.y_lab, data.x_unl))
        self.batch, self.rng, self.sampler, self.for_generator = batch, rng, sampler, for_generator

    def __iter__(self):
        return self

    def __next__(self) -> dict[str, Tensor]:
        b = {"x_lab": self.xl, "y_lab": self.yl}
        if self.sampler is not None:
            b["x_fake"] = torch.from_numpy(self.sampler(self.batch))
        b["x_unl"] = self.xu[torch.from_numpy(self.rng.integers(0, len(self.xu), self.batch))]
        if self.for_generator:
            b["x_unl_g"] = self.xu[torch.from_numpy(self.rng.integers(0, len(self.xu), self.batch))]
        return b
