"""A synthetic citation-like graph (spec `planetoid.md` §5.1): a stochastic block model with a class-
banded binary bag of words, for fast tests of graph SSL methods."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genfeat.data.planetoid import GraphData, symmetrize
from genfeat.errors import ConfigError


@dataclass(frozen=True)
class SBMConfig:
    """`make_sbm_bow`'s parameters (its docstring says what each does)."""

    n: int = 1000
    classes: int = 4
    deg: float = 4.0
    h: float = 0.7
    vocab: int = 300
    n_words: int = 20
    rho: float = 0.3
    per_class: int = 20
    num_val: int = 100
    num_test: int = 300

    def __post_init__(self) -> None:
        if self.classes < 2 or self.n < 2 * self.classes or self.vocab < self.classes or self.n_words < 1:
            raise ConfigError(f"data.sbm: need classes >= 2, n >= 2 * classes, vocab >= classes and n_words >= 1, "
                              f"got {self}")
        if not (0 <= self.h <= 1 and 0 <= self.rho <= 1 and self.deg >= 0):
            raise ConfigError(f"data.sbm: h and rho must be in [0, 1] and deg >= 0, got {self}")
        size = self.n // self.classes
        if self.per_class < 1 or self.per_class * self.classes + self.num_val + self.num_test > size * self.classes:
            raise ConfigError(f"data.sbm: {self.per_class} labels a class + {self.num_val} validation + "
                              f"{self.num_test} test nodes do not fit in {size * self.classes} nodes")


SBM_A = SBMConfig(deg=4, h=0.7, rho=0.3)  # spec §5.1 config A, feature-rich
SBM_B = SBMConfig(deg=5, h=0.8, rho=0.25)  # config B, graph-rich


def make_sbm_bow(seed: int = 0, n: int = 1000, classes: int = 4, deg: float = 4.0, h: float = 0.7, vocab: int = 300,
                 n_words: int = 20, rho: float = 0.3, per_class: int = 20, num_val: int = 100,
                 num_test: int = 300) -> GraphData:
    """N/C nodes per class; edge i<j with probability deg*h/(N/C-1) within a class and
    deg*(1-h)/(N-N/C) across (expected degree ~deg, edge homophily ~h). Class c owns the word band
    [cV/C, (c+1)V/C); each node sets Binomial(n_words, rho) words from its band and the rest uniformly.
    Config A (feature-rich): deg=4, h=0.7, rho=0.3. Config B (graph-rich): deg=5, h=0.8, rho=0.25.
    Split: `per_class` labeled per class, then `num_val` validation (the spec uses none; model
    selection needs some) and `num_test` test nodes; the rest unlabeled."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.repeat(np.arange(classes), n // classes)).astype(np.int64)
    n = len(labels)
    size = n // classes
    p_in, p_out = deg * h / (size - 1), deg * (1 - h) / (n - size)
    iu, ju = np.triu_indices(n, 1)
    p = np.where(labels[iu] == labels[ju], p_in, p_out)
    keep = rng.random(len(p)) < p
    adj = symmetrize(sp.csr_matrix((np.ones(keep.sum(), np.float32), (iu[keep], ju[keep])), shape=(n, n)))
    band = vocab // classes
    k = rng.binomial(n_words, rho, n)
    own = labels[:, None] * band + rng.integers(0, band, (n, n_words))
    anywhere = rng.integers(0, vocab, (n, n_words))
    words = np.where(np.arange(n_words)[None, :] < k[:, None], own, anywhere)
    feats = sp.csr_matrix((np.ones(words.size, np.float32), (np.repeat(np.arange(n), n_words), words.ravel())),
                          shape=(n, vocab))
    feats.data[:] = 1.0  # binary (the constructor summed repeated words)
    train = np.sort(np.concatenate([rng.choice(np.flatnonzero(labels == c), per_class, replace=False)
                                    for c in range(classes)]))
    rest = rng.permutation(np.setdiff1d(np.arange(n), train))
    val, test = np.sort(rest[:num_val]), np.sort(rest[num_val:num_val + num_test])
    g = GraphData(f"sbm{seed}", feats, labels, adj, train, val, test)
    g.validate()
    return g
