"""Token streams on disk (numpy memmaps) and the two LM batch iterators.

`OrderedSegments` is what memory-carrying models need (Transformer-XL's LMOrderedIterator): the
stream is cut into B contiguous rows and read left to right in segments of length L, so segment i+1
of row b continues segment i of row b. `ShuffledWindows` draws non-overlapping windows of L+1 tokens
in a fresh random order each epoch. Both:

- yield (x, y) LongTensors of shape (B_local, L) with y = x shifted by one token;
- shard for distributed training: with world size W, rank r gets a disjoint B/W slice of every
  global batch, so W ranks together see exactly the batches one process with batch B would;
- have `state_dict()` / `load_state_dict()` (epoch and position) for exact resume.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from genfeat.errors import DataError


def write_stream(path: Path, ids: np.ndarray, vocab_size: int) -> np.memmap:
    """Write ids as a flat uint16/uint32 file next to a small JSON header; atomic."""
    dtype = np.uint16 if vocab_size <= 1 << 16 else np.uint32
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    arr = ids.astype(dtype)
    arr.tofile(tmp)
    meta = {"dtype": np.dtype(dtype).name, "length": int(arr.size), "vocab_size": int(vocab_size),
            "sha256": hashlib.sha256(arr.tobytes()).hexdigest()}
    path.with_suffix(".json").write_text(json.dumps(meta))
    os.replace(tmp, path)
    return read_stream(path)


# stream file -> its and its header's (size, mtime_ns, ctime_ns, inode) when they last matched in this process
_CHECKED: dict[Path, tuple] = {}


def read_stream(path: Path, check: bool = True) -> np.memmap:
    """The stream as a read-only memmap. With `check` (the default), its first read in a process (and any read
    after the file changed) compares it with its header: the sha256 recorded when it was written, and every id
    below the header's vocabulary size; a mismatch is a DataError saying how to rebuild."""
    meta_path = path.with_suffix(".json")
    try:
        meta = json.loads(meta_path.read_text())
        dtype, length = np.dtype(meta["dtype"]), int(meta["length"])
    except (OSError, json.JSONDecodeError, KeyError, TypeError):
        raise DataError(f"token stream header {meta_path} is missing or corrupt; delete {path.parent} "
                        "to rebuild it") from None
    if not path.is_file() or path.stat().st_size != length * dtype.itemsize:
        raise DataError(f"token stream {path} is missing or truncated; delete {path.parent} to rebuild it")
    mm = np.memmap(path, dtype=dtype, mode="r", shape=(length,))
    key, stats = path.absolute(), tuple((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                                        for st in (path.stat(), meta_path.stat()))
    if check and _CHECKED.get(key) != stats:
        if hashlib.sha256(mm.tobytes()).hexdigest() != meta.get("sha256"):
            raise DataError(f"token stream {path} does not match its checksum; delete {path.parent} to rebuild it")
        vocab = int(meta.get("vocab_size", 0))
        if length and vocab and int(mm.max()) >= vocab:
            raise DataError(f"token stream {path} holds id {int(mm.max())}, outside its vocabulary of {vocab}; "
                            f"delete {path.parent} to rebuild it")
        _CHECKED[key] = stats
    return mm


def _shard(batch_size: int, rank: int, world_size: int) -> slice:
    if batch_size % world_size:
        raise ValueError(f"global batch size {batch_size} is not divisible by world size {world_size}")
    per = batch_size // world_size
    return slice(rank * per, (rank + 1) * per)


class OrderedSegments(Iterator):
    """B contiguous streams read in segments of `seq_len` (the last segment of an epoch may be shorter)."""

    def __init__(self, tokens: np.ndarray, batch_size: int, seq_len: int, rank: int = 0, world_size: int = 1,
                 loop: bool = True):
        n_step = len(tokens) // batch_size
        if n_step < 2:
            raise DataError(f"{len(tokens)} tokens are too few for batch size {batch_size}")
        self.rows = np.asarray(tokens[: n_step * batch_size]).reshape(batch_size, n_step)[
            _shard(batch_size, rank, world_size)
        ]  # (B_local, n_step)
        self.seq_len, self.loop = seq_len, loop
        self.epoch, self.pos = 0, 0

    def __len__(self) -> int:  # segments per epoch
        return -(-(self.rows.shape[1] - 1) // self.seq_len)

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.pos >= self.rows.shape[1] - 1:
            if not self.loop:
                raise StopIteration
            self.epoch, self.pos = self.epoch + 1, 0
        end = min(self.pos + self.seq_len, self.rows.shape[1] - 1)
        chunk = torch.from_numpy(self.rows[:, self.pos : end + 1].astype(np.int64))  # (B, L+1)
        self.pos = end
        return chunk[:, :-1], chunk[:, 1:]

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "pos": self.pos}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.pos = int(state["epoch"]), int(state["pos"])


class ShuffledWindows(Iterator):
    """Non-overlapping windows of seq_len+1 tokens, reshuffled every epoch with seed + epoch."""

    def __init__(self, tokens: np.ndarray, batch_size: int, seq_len: int, seed: int = 0, rank: int = 0,
                 world_size: int = 1, loop: bool = True):
        self.tokens, self.seq_len, self.batch_size, self.seed, self.loop = tokens, seq_len, batch_size, seed, loop
        self.n_windows = (len(tokens) - 1) // seq_len
        if self.n_windows < batch_size:
            raise DataError(f"{len(tokens)} tokens give {self.n_windows} windows, fewer than batch {batch_size}")
        self.shard = _shard(batch_size, rank, world_size)
        self.epoch, self.batch = 0, 0
        self._perm_epoch, self._perm = -1, None

    def __len__(self) -> int:
        return self.n_windows // self.batch_size

    def _order(self) -> np.ndarray:
        if self._perm_epoch != self.epoch:
            self._perm = np.random.default_rng(self.seed + self.epoch).permutation(self.n_windows)
            self._perm_epoch = self.epoch
        return self._perm

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.batch >= len(self):
            if not self.loop:
                raise StopIteration
            self.epoch, self.batch = self.epoch + 1, 0
        starts = self._order()[self.batch * self.batch_size : (self.batch + 1) * self.batch_size][self.shard]
        idx = starts[:, None] * self.seq_len + np.arange(self.seq_len + 1)  # (B_local, L+1)
        chunk = torch.from_numpy(np.asarray(self.tokens)[idx].astype(np.int64))
        self.batch += 1
        return chunk[:, :-1], chunk[:, 1:]

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "batch": self.batch}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.batch = int(state["epoch"]), int(state["batch"])
