"""Interaction data for sequential recommendation (thesis C §2.5.1; spec sequential-recommendation.md §6, §10).

Readers (each returns `Interactions`: user, item and time arrays in file order, original tokens kept):

    load_atomic_inter(path)      RecBole atomic `.inter` files (tab-separated, typed header `name:type`), the
                                 format of RecSysDatasets (ML-1m, Amazon-beauty, Steam, Retailrocket, ...)
    load_ml1m_ratings(path)      the GroupLens ML-1M `ratings.dat` (UserID::MovieID::Rating::Timestamp)
    load_ml100k()                MovieLens-100K with timestamps from the `recbole==1.2.1` wheel
                                 (`genfeat data fetch ml-100k`; sha256 in MANIFEST.json)

`build_sequences` sorts each user's interactions by time (ties keep file order, a stable sort), keeps
duplicates, drops users with fewer than `min_user_inter` interactions and remaps item tokens to 1..N_I in
order of first appearance (0 is padding, as RecBole). `leave_one_out` makes the RecBole sequential split: the
last item of each user is the test target, the second-to-last the validation target, and every earlier
position k >= 1 (0-based) one training example (history = the up to `max_len` items before it).
Examples are right-padded arrays: `Examples(history (N, max_len) int64, length (N,), target (N,))`.

`training_windows` serves the same training targets as windows scored at many positions at once (every
encoder and head here is causal, so a position's output depends only on the items up to it): per user, one
window holds the first max_len items and scores every target whose whole history fits in it (exactly the
prefix examples' histories), and windows of max_len items ending every `stride` items back from the last
target score the rest, each its last `stride` positions. stride 1 gives every target its prefix example's
history exactly (the first window replaces up to max_len - 1 examples); a larger stride cuts the number of
windows about stride-fold, and a target then sees at least max_len - stride + 1 items of history (not
max_len) when its user has more than that before it.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from genfeat.data.sources import require
from genfeat.errors import DataError

ML100K_INTER = "recbole/dataset_example/ml-100k/ml-100k.inter"


@dataclass(frozen=True)
class Interactions:
    users: np.ndarray  # (n,) user tokens (str)
    items: np.ndarray  # (n,) item tokens (str)
    times: np.ndarray  # (n,) float64
    name: str = ""


@dataclass(frozen=True)
class Examples:
    history: np.ndarray  # (N, max_len) item ids, right-padded with 0
    length: np.ndarray  # (N,) number of real items in each history (>= 1)
    target: np.ndarray  # (N,) item id

    def __len__(self) -> int:
        return len(self.target)


@dataclass(frozen=True)
class Windows:
    inputs: np.ndarray  # (M, max_len) item ids, right-padded with 0
    targets: np.ndarray  # (M, max_len) the next item at each scored position, 0 elsewhere

    def __len__(self) -> int:
        return len(self.inputs)

    @property
    def n_targets(self) -> int:
        return int((self.targets > 0).sum())


@dataclass(frozen=True)
class SeqData:
    sequences: list[np.ndarray]  # per user, time-ordered item ids in 1..n_items
    n_items: int  # item ids are 1..n_items; 0 is padding
    item_tokens: np.ndarray  # (n_items + 1,) original token of each id ("[PAD]" at 0)
    train: Examples
    valid: Examples
    test: Examples
    name: str = ""

    def stats(self) -> dict[str, float]:
        return dataset_stats(self.sequences, self.n_items, self.valid, self.test)

    def summary(self) -> str:
        s = self.stats()
        return (f"{self.name}: {s['users']:,} users, {s['items']:,} items, {s['interactions']:,} interactions, "
                f"mean length {s['mean_length']:.1f}, {len(self.train):,} training examples; repeat rate "
                f"valid {s['repeat_rate_valid']:.3f} test {s['repeat_rate_test']:.3f}")


def load_atomic_inter(path: str | Path, user_field: str = "user_id", item_field: str = "item_id",
                      time_field: str = "timestamp") -> Interactions:
    """A RecBole atomic `.inter` file: tab-separated, first line `name:type` headers."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    with open(path, newline="", encoding="utf-8") as f:
        rows = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = [h.split(":")[0] for h in next(rows, [])]
        missing = [n for n in (user_field, item_field, time_field) if n not in header]
        if missing:
            raise DataError(f"{path}: no field(s) {missing} in the header {header}; pass user_field/item_field/"
                            "time_field (e.g. Steam: item_field='product_id')")
        cols = [header.index(n) for n in (user_field, item_field, time_field)]
        data = [[r[c] for c in cols] for r in rows if r]
    if not data:
        raise DataError(f"{path}: no interactions")
    arr = np.asarray(data, dtype=object)
    try:
        times = arr[:, 2].astype(np.float64)
    except ValueError as e:
        raise DataError(f"{path}: non-numeric {time_field}: {e}") from None
    return Interactions(arr[:, 0].astype(str), arr[:, 1].astype(str), times, path.stem)


def load_ml1m_ratings(path: str | Path) -> Interactions:
    """GroupLens ML-1M `ratings.dat`: UserID::MovieID::Rating::Timestamp per line."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    rows = [line.split("::") for line in path.read_text(encoding="latin-1").splitlines() if line.strip()]
    if any(len(r) != 4 for r in rows):
        raise DataError(f"{path}: expected UserID::MovieID::Rating::Timestamp on every line")
    arr = np.asarray(rows, dtype=object)
    return Interactions(arr[:, 0].astype(str), arr[:, 1].astype(str), arr[:, 3].astype(np.float64), "ml-1m")


def load_ml100k() -> Interactions:
    """MovieLens-100K (943 users, 1,682 items, 100,000 ratings with timestamps) from the recbole wheel."""
    path = require("ml-100k", ML100K_INTER) / ML100K_INTER
    inter = load_atomic_inter(path)
    return Interactions(inter.users, inter.items, inter.times, "ml-100k")


def build_sequences(inter: Interactions, min_user_inter: int = 5) -> tuple[list[np.ndarray], np.ndarray]:
    """(per-user time-ordered item-id sequences, item token of each id). Users are ordered by first
    appearance; items are numbered 1.. in order of first appearance in the file (as RecBole's remapping)."""
    item_tokens, first, item_idx = np.unique(inter.items, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(1, len(first) + 1)
    item_ids = rank[item_idx]
    users, ufirst, user_idx = np.unique(inter.users, return_index=True, return_inverse=True)
    uorder = np.empty(len(users), dtype=np.int64)
    uorder[np.argsort(ufirst, kind="stable")] = np.arange(len(users))
    user_idx = uorder[user_idx]
    order = np.lexsort((np.arange(len(user_idx)), inter.times, user_idx))  # user, then time, then file order
    starts = np.searchsorted(user_idx[order], np.arange(len(users) + 1))
    seqs = [item_ids[order[a:b]] for a, b in zip(starts[:-1], starts[1:], strict=True)]
    seqs = [s for s in seqs if len(s) >= min_user_inter]
    if not seqs:
        raise DataError(f"no user has >= {min_user_inter} interactions")
    used = np.unique(np.concatenate(seqs))  # drop items only filtered users had, keep first-appearance order
    remap = np.zeros(len(first) + 1, dtype=np.int64)
    remap[used] = np.arange(1, len(used) + 1)
    tokens = np.empty(len(used) + 1, dtype=object)
    tokens[0] = "[PAD]"
    by_id = np.empty(len(first) + 1, dtype=object)
    by_id[rank] = item_tokens
    tokens[1:] = by_id[used]
    return [remap[s] for s in seqs], tokens


def _examples(rows: list[tuple[np.ndarray, int]], max_len: int) -> Examples:
    hist = np.zeros((len(rows), max_len), dtype=np.int64)
    length = np.zeros(len(rows), dtype=np.int64)
    target = np.zeros(len(rows), dtype=np.int64)
    for n, (h, y) in enumerate(rows):
        h = h[-max_len:]
        hist[n, : len(h)] = h
        length[n], target[n] = len(h), y
    return Examples(hist, length, target)


def leave_one_out(seqs: list[np.ndarray], max_len: int = 50) -> tuple[Examples, Examples, Examples]:
    """RecBole's LS valid_and_test split with prefix augmentation (spec §6): for [a, b, c, d, e] train
    ([a], b), ([a, b], c); valid ([a, b, c], d); test ([a, b, c, d], e). Users with < 3 items are skipped."""
    if max_len < 1:
        raise ValueError("max_len must be >= 1")
    train, valid, test = [], [], []
    for s in seqs:
        n = len(s)
        if n < 3:
            continue
        train.extend((s[:k], int(s[k])) for k in range(1, n - 2))
        valid.append((s[: n - 2], int(s[n - 2])))
        test.append((s[: n - 1], int(s[n - 1])))
    return _examples(train, max_len), _examples(valid, max_len), _examples(test, max_len)


def training_windows(seqs: list[np.ndarray], max_len: int = 50, stride: int = 1) -> Windows:
    """The training targets of `leave_one_out` (each once) as windows; see the module docstring."""
    if not 1 <= stride <= max_len:
        raise ValueError(f"stride must be in [1, max_len={max_len}], got {stride}")
    inputs, targets = [], []
    for s in seqs:
        u = s[: len(s) - 2]  # the items before the validation target; target k (0-based, k >= 1) has history u[:k]
        m = len(u)
        if len(s) < 3 or m < 2:
            continue
        ends = np.arange(m - 1, 0, -stride)  # window e: inputs u[e - max_len : e], targets up to u[e]
        first = ends[ends <= max_len].max()  # the window from the start scores targets 1..first
        row = np.zeros((1, max_len), dtype=np.int64)
        row[0, :first] = u[:first]
        tgt = np.zeros((1, max_len), dtype=np.int64)
        tgt[0, :first] = u[1: first + 1]
        inputs.append(row)
        targets.append(tgt)
        later = ends[ends > max_len]  # inputs u[e - max_len : e], scored: its last `stride` positions
        if len(later):
            win = np.lib.stride_tricks.sliding_window_view(u, max_len)
            nxt = np.lib.stride_tricks.sliding_window_view(u[1:], max_len)
            inputs.append(win[later - max_len])
            tgt = np.zeros((len(later), max_len), dtype=np.int64)
            tgt[:, max_len - stride:] = nxt[later - max_len][:, max_len - stride:]
            targets.append(tgt)
    if not inputs:
        return Windows(np.zeros((0, max_len), dtype=np.int64), np.zeros((0, max_len), dtype=np.int64))
    return Windows(np.concatenate(inputs), np.concatenate(targets))


def repeat_rate(ex: Examples) -> float:
    """Share of targets already present in their history."""
    return float(((ex.history == ex.target[:, None]) & (ex.history > 0)).any(1).mean()) if len(ex) else 0.0


def dataset_stats(seqs: list[np.ndarray], n_items: int, valid: Examples, test: Examples) -> dict[str, float]:
    lengths = np.array([len(s) for s in seqs])
    return {"users": len(seqs), "items": n_items, "interactions": int(lengths.sum()),
            "mean_length": float(lengths.mean()), "repeat_rate_valid": repeat_rate(valid),
            "repeat_rate_test": repeat_rate(test)}


def make_seqdata(inter: Interactions, max_len: int = 50, min_user_inter: int = 5) -> SeqData:
    seqs, tokens = build_sequences(inter, min_user_inter)
    train, valid, test = leave_one_out(seqs, max_len)
    return SeqData(seqs, len(tokens) - 1, tokens, train, valid, test, inter.name)


class ExampleBatches:
    """Endless shuffled mini-batches of training rows, one permutation per epoch (seeded), the last batch of an
    epoch the remainder; its position is checkpointed (`state_dict`), so a resumed run sees the same batches.
    Rows: prefix examples (batches of (history, length, target)) or windows (batches of (inputs, targets)).
    `batch_size` is the global batch: under torchrun rank r of W keeps the r-th of W near-equal contiguous parts
    of every batch (`tasks.ranking.next_item_loss` normalises by the global count, so the ranks together compute
    one process's loss)."""

    def __init__(self, ex: Examples | Windows, batch_size: int, seed: int, rank: int = 0, world_size: int = 1):
        self.arrays = (ex.history, ex.length, ex.target) if isinstance(ex, Examples) else (ex.inputs, ex.targets)
        if batch_size < world_size:
            raise ValueError(f"a batch of {batch_size} rows does not split over {world_size} ranks")
        self.rank, self.world_size = rank, world_size
        self.n, self.batch_size, self.seed = len(ex), batch_size, seed
        self.epoch, self.pos = 0, 0
        self.steps_per_epoch = -(-len(ex) // batch_size)
        self._perm, self._perm_epoch = np.arange(0), -1

    def __iter__(self) -> ExampleBatches:
        return self

    def __next__(self) -> tuple[torch.Tensor, ...]:
        if self.pos >= self.steps_per_epoch:
            self.epoch, self.pos = self.epoch + 1, 0
        if self._perm_epoch != self.epoch:
            self._perm = np.random.default_rng([self.seed, self.epoch]).permutation(self.n)
            self._perm_epoch = self.epoch
        idx = self._perm[self.pos * self.batch_size: (self.pos + 1) * self.batch_size]
        self.pos += 1
        if self.world_size > 1:
            idx = np.array_split(idx, self.world_size)[self.rank]
        return tuple(torch.from_numpy(a[idx]) for a in self.arrays)

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "pos": self.pos}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.pos = state["epoch"], state["pos"]
