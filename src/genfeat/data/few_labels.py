"""Which training examples keep their labels in a few-label run: drawn once per run seed, sorted, so every model
of a comparison sees the same subset for the same seed.

    per_class_subset(labels, per_class, seed)   `per_class` of each class (thesis Y §3.1's balanced labelled sets;
                                                XLNet's BBC News 20 × 5), one default_rng(seed) over the classes
                                                in order; 0: every example
    random_subset(n_train, n_labels, seed)      `n_labels` of all examples, classes as they fall (thesis C §5's
                                                Multi-CLS label budgets); 0 or n_train: every example

More than there is is a ConfigError naming `option`, the setting that asked for it, never a quiet "all of them".
"""

from __future__ import annotations

import numpy as np

from genfeat.errors import ConfigError


def per_class_subset(labels: np.ndarray, per_class: int, seed: int, option: str = "labels_per_class") -> np.ndarray:
    if per_class == 0:
        return np.arange(len(labels))
    classes, counts = np.unique(labels, return_counts=True)
    if counts.min() < per_class:
        raise ConfigError(f"{option} {per_class} is more than class {classes[counts.argmin()]}'s {counts.min()} "
                          "training examples")
    rng = np.random.default_rng(seed)
    return np.sort(np.concatenate([rng.choice(np.flatnonzero(labels == c), per_class, replace=False)
                                   for c in classes]))


def random_subset(n_train: int, n_labels: int, seed: int, option: str = "labels") -> np.ndarray:
    if n_labels > n_train:
        raise ConfigError(f"{option} {n_labels:,} is more than the {n_train:,} training examples: give at most "
                          f"{n_train:,} (0: all of them)")
    if n_labels == 0 or n_labels == n_train:
        return np.arange(n_train)
    return np.sort(np.random.default_rng([seed, 1_000_003]).choice(n_train, n_labels, replace=False))
