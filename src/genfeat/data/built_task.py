"""A text classification task built from an offline source (`data/built_tasks.py` lists them): its splits, class
names and checksum, and the split and export helpers every builder uses.

`BuiltTask.splits`: {"train", "valid", "test"} -> ((text_a, text_b | None) pairs, labels); `checksum` is the sha256 of
the splits (their order, texts and labels, as canonical JSON).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from genfeat.config import atomic_write_text
from genfeat.errors import DataError

Pairs = list[tuple[str, str | None]]
Splits = dict[str, tuple[Pairs, np.ndarray]]


@dataclass
class BuiltTask:
    name: str
    splits: Splits
    classes: list[str]
    source: str  # the `genfeat data` source it was built from
    notes: dict[str, Any] = field(default_factory=dict)  # counts of what the build dropped and why

    @property
    def checksum(self) -> str:
        return splits_checksum(self.splits)

    def describe(self) -> dict[str, Any]:
        return {"task": self.name, "source": self.source, "classes": len(self.classes),
                "sizes": {k: len(y) for k, (_, y) in self.splits.items()}, "sha256": self.checksum, **self.notes}

    def write(self, out: str | Path) -> list[Path]:
        return write_tsv(self, out)


def splits_checksum(splits: Splits) -> str:
    canon = {k: [[a, b, int(y)] for (a, b), y in zip(pairs, labels.tolist(), strict=True)]
             for k, (pairs, labels) in sorted(splits.items())}
    return hashlib.sha256(json.dumps(canon, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def write_tsv(task: BuiltTask, out: str | Path) -> list[Path]:
    """train.tsv / valid.tsv / test.tsv with a header (text_a, text_b, label: the class name); tabs and newlines
    inside a text become spaces."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for k, (pairs, labels) in task.splits.items():
        def clean(t: str | None) -> str:
            return " ".join((t or "").split())
        lines = ["text_a\ttext_b\tlabel"] + [f"{clean(a)}\t{clean(b)}\t{task.classes[y]}"
                                            for (a, b), y in zip(pairs, labels.tolist(), strict=True)]
        files.append(out / f"{k}.tsv")
        atomic_write_text(files[-1], "\n".join(lines) + "\n")
    return files


def sized_split(labels: np.ndarray, seed: int, n_valid: int, n_test: int) -> dict[str, np.ndarray]:
    """Class-stratified train / valid / test indices with about n_valid and n_test examples (each class in
    proportion, at least one per class where it has three), fixed by the seed; sorted within each split."""
    if n_valid + n_test >= len(labels):
        raise DataError(f"{len(labels)} examples cannot give {n_valid} validation and {n_test} test examples")
    rng = np.random.default_rng(seed)
    out: dict[str, list[np.ndarray]] = {"train": [], "valid": [], "test": []}
    for c in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == c))
        share = len(idx) / len(labels)
        n_te = max(1, round(share * n_test)) if len(idx) >= 3 else 0
        n_va = max(1, round(share * n_valid)) if len(idx) >= 3 else 0
        out["test"].append(idx[:n_te])
        out["valid"].append(idx[n_te: n_te + n_va])
        out["train"].append(idx[n_te + n_va:])
    return {k: np.sort(np.concatenate(v)) for k, v in out.items()}


def labelled_splits(pairs: Sequence[tuple[str, str | None]], names: Sequence[str], seed: int, n_valid: int,
                    n_test: int) -> tuple[Splits, list[str]]:
    """Pairs with their class names -> stratified splits (labels: indices of the sorted class names)."""
    classes = sorted(set(names))
    y = np.array([classes.index(n) for n in names], dtype=np.int64) if classes else np.zeros(0, np.int64)
    split = sized_split(y, seed, n_valid, n_test)
    return {k: ([pairs[i] for i in idx], y[idx]) for k, idx in split.items()}, classes
