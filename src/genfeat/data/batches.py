"""Endless shuffled mini-batches over in-memory rows, with a checkpointable position.

`EpochBatches(arrays, batch_size, rng)`: each epoch draws one permutation of the rows from `rng` (a numpy
Generator, consumed in order: the same seed gives the same batches) and yields `len // batch_size` full batches
of it; the remainder, a different set of rows each epoch, is skipped.
`StreamBatches(arrays, batch_size, rng)`: the permutations are concatenated into one stream, so a batch that
runs past an epoch's end continues into the next permutation and no row is skipped (small fine-tuning sets).

Rows are the first dimension of a tensor, a sequence of tensors or a dict of tensors (a batch has the same
form). `state_dict()` holds the generator's state and the position, so a run resumed from a checkpoint sees
exactly the batches it would have seen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor


class EpochBatches:
    """`batch_size` is the global batch; under torchrun each rank keeps its contiguous share (`rank_share`)."""

    def __init__(self, data: Tensor | Sequence[Tensor] | Mapping[str, Tensor], batch_size: int,
                 rng: np.random.Generator, rank: int = 0, world_size: int = 1):
        self.data, self.batch_size, self.rng = data, batch_size, rng
        self.n = _length(data)
        self.per_epoch = self.n // batch_size
        if self.per_epoch < 1:
            raise ValueError(f"{self.n} rows make no batch of {batch_size}")
        self.shard = rank_share(batch_size, rank, world_size)
        self.pos, self.perm = self.per_epoch, torch.arange(0)  # the first batch starts an epoch

    def __iter__(self) -> EpochBatches:
        return self

    def __next__(self):
        if self.pos == self.per_epoch:
            self.perm, self.pos = torch.from_numpy(self.rng.permutation(self.n)), 0
        idx = self.perm[self.pos * self.batch_size: (self.pos + 1) * self.batch_size]
        self.pos += 1
        return _rows(self.data, idx[self.shard])

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "pos": self.pos, "perm": self.perm}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.pos, self.perm = state["pos"], state["perm"]


def rank_share(batch_size: int, rank: int, world_size: int) -> slice:
    """Rank r of W keeps rows r·B/W to (r+1)·B/W of every global batch B: every rank draws the same order, so W
    ranks together see exactly what one process would."""
    if batch_size % world_size:
        raise ValueError(f"the batch of {batch_size} does not split over {world_size} ranks")
    share = batch_size // world_size
    return slice(rank * share, (rank + 1) * share)


def _rows(data: Tensor | Sequence[Tensor] | Mapping[str, Tensor], idx: Tensor):
    if isinstance(data, Tensor):
        return data[idx]
    if isinstance(data, Mapping):
        return {k: v[idx] for k, v in data.items()}
    return tuple(a[idx] for a in data)


def _length(data: Tensor | Sequence[Tensor] | Mapping[str, Tensor]) -> int:
    arrays = [data] if isinstance(data, Tensor) else list(data.values() if isinstance(data, Mapping) else data)
    if len({len(a) for a in arrays}) != 1:
        raise ValueError(f"arrays of different lengths: {[len(a) for a in arrays]}")
    return len(arrays[0])


class StreamBatches:
    """`batch_size` is the global batch; under torchrun each rank keeps its contiguous share (`rank_share`)."""

    def __init__(self, data: Tensor | Sequence[Tensor] | Mapping[str, Tensor], batch_size: int,
                 rng: np.random.Generator, rank: int = 0, world_size: int = 1):
        self.data, self.batch_size, self.rng = data, batch_size, rng
        self.n = _length(data)
        self.order = np.array([], dtype=np.int64)  # the rest of the stream drawn so far
        self.shard = rank_share(batch_size, rank, world_size)

    def __iter__(self) -> StreamBatches:
        return self

    def __next__(self):
        if len(self.order) < self.batch_size:
            self.order = np.concatenate([self.order, self.rng.permutation(self.n)])
        idx, self.order = torch.from_numpy(self.order[: self.batch_size]), self.order[self.batch_size:]
        return _rows(self.data, idx[self.shard])

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "order": torch.from_numpy(self.order.copy())}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.order = state["order"].numpy()


class ZipBatches:
    """One batch from each of several named iterators per call, as a dict (the labelled and the unlabelled
    mini-batch that one semi-supervised update reads together); their positions are checkpointed together."""

    def __init__(self, sources: Mapping[str, Any]):
        self.sources = dict(sources)

    def __iter__(self) -> ZipBatches:
        return self

    def __next__(self) -> dict[str, Any]:
        return {k: next(it) for k, it in self.sources.items()}

    def state_dict(self) -> dict[str, Any]:
        return {k: it.state_dict() for k, it in self.sources.items()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for k, it in self.sources.items():
            it.load_state_dict(state[k])
