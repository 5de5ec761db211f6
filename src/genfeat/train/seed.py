"""Seeding: one call that seeds every random number generator a run draws from (Python's, NumPy's global one and
torch's, CPU and every GPU)."""

from __future__ import annotations

import random

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # seeds the CUDA generators too
