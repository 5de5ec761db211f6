"""Endless shuffled mini-batches over in-memory rows, with a checkpointable position.

`EpochBatches(arrays, batch_size, rng)`: each epoch draws one permutation of the rows from `rng` (a numpy
Generator, consumed in order: the same seed gives the same batches) and yields `len // batch_size` full batches
of it; the remainder, a different set of rows each epoch, waits for the next. `state_dict()` holds the
generator's state, the epoch's permutation and the position, so a run resumed from a checkpoint sees exactly
the batches it would have seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor


class EpochBatches:
    def __init__(self, arrays: Tensor | Sequence[Tensor], batch_size: int, rng: np.random.Generator):
        self.single = isinstance(arrays, Tensor)
        self.arrays = (arrays,) if self.single else tuple(arrays)
        self.n, self.batch_size, self.rng = len(self.arrays[0]), batch_size, rng
        if any(len(a) != self.n for a in self.arrays):
            raise ValueError(f"arrays of different lengths: {[len(a) for a in self.arrays]}")
        self.per_epoch = self.n // batch_size
        if self.per_epoch < 1:
            raise ValueError(f"{self.n} rows make no batch of {batch_size}")
        self.pos, self.perm = self.per_epoch, torch.arange(0)  # the first batch starts an epoch

    def __iter__(self) -> EpochBatches:
        return self

    def __next__(self) -> Tensor | tuple[Tensor, ...]:
        if self.pos == self.per_epoch:
            self.perm, self.pos = torch.from_numpy(self.rng.permutation(self.n)), 0
        idx = self.perm[self.pos * self.batch_size: (self.pos + 1) * self.batch_size]
        self.pos += 1
        out = tuple(a[idx] for a in self.arrays)
        return out[0] if self.single else out

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "pos": self.pos, "perm": self.perm}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.pos, self.perm = state["pos"], state["perm"]
