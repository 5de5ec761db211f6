"""Seeding: one call that seeds every random number generator a run draws from (Python's, NumPy's global one and
torch's, CPU and every GPU)."""

from __future__ import annotations

import random

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    """Also imports the metrics libraries first: importing scikit-learn imports rich, which draws from Python's
    stream (`rich.style`), so a process that imported it after seeding (a run's first evaluation) and one that
    resumed from a checkpoint taken after that draw would go on with different streams."""
    import sklearn.metrics  # noqa: F401

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # seeds the CUDA generators too
