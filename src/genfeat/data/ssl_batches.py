"""The batches of semi-supervised training on a few labeled and many unlabeled examples (the complement GAN, thesis
Y §3.1.5): each iteration draws labeled images, a slice of the unlabeled pool for the discriminator and another
for the generator; one pass over the pool is an epoch."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from genfeat.data.batches import rank_share


class SSLBatches:
    """Iteration i of epoch e: `batch_labeled` labeled images (drawn with replacement, or the whole labeled set
    shuffled when it is not larger), slice i of one permutation of the unlabeled images for D and slice i of a
    second one for G. Both permutations are drawn at the start of each epoch. Its state (the generator, the
    epoch's permutations and the position) is checkpointed."""

    def __init__(self, x: Tensor, x_lab: Tensor, y_lab: Tensor, batch_labeled: int, batch_unlabeled: int,
                 rng: np.random.Generator, rank: int = 0, world_size: int = 1):
        self.x, self.x_lab, self.y_lab, self.rng = x, x_lab, y_lab, rng
        self.bl, self.bu = batch_labeled, batch_unlabeled
        self.per_epoch = len(x) // batch_unlabeled
        self.i, self.perms = self.per_epoch, None  # the first batch starts an epoch
        self.lab_share = rank_share(min(batch_labeled, len(y_lab)), rank, world_size)  # rank r's part of each batch
        self.unl_share = rank_share(batch_unlabeled, rank, world_size)

    def __iter__(self):
        return self

    def __next__(self) -> dict[str, Tensor]:
        if self.i == self.per_epoch:
            self.perms = torch.stack([torch.from_numpy(self.rng.permutation(len(self.x))) for _ in range(2)])
            self.i = 0
        sl = slice(self.i * self.bu, (self.i + 1) * self.bu)
        n = len(self.y_lab)
        li = torch.from_numpy(self.rng.integers(0, n, self.bl) if self.bl < n else self.rng.permutation(n))
        self.i += 1
        li, ui, gi = li[self.lab_share], self.perms[0, sl][self.unl_share], self.perms[1, sl][self.unl_share]
        return {"x_lab": self.x_lab[li], "y_lab": self.y_lab[li], "x_unl": self.x[ui], "x_unl_g": self.x[gi]}

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "i": self.i, "perms": self.perms}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.i, self.perms = state["i"], state["perms"]
