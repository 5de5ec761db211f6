"""A universal-schema co-occurrence matrix (thesis C §3.3.1.1; spec multi-facet-universal-schema.md §3): rows are
sentence patterns ("$ARG1 is a plugin for $ARG2") and KB relations (one token each, "debian:depends"), columns are
entity pairs, y_ij = 1 where row i co-occurs with pair j (text and KB merged into one matrix).

    SchemaMatrix        vocab (0 = <pad>, 1 = <eos>, 2 = <unk>), rows as token ids, row types (0 pattern, 1 KB
                        relation), row / pair names, the observed (row, pair) cells; `checksum` over all of it
    instances           the reference's training instances: each row's pairs (in a seeded order) cut into chunks
                        of at most `max_pairs` (5); `valid_share` (5 %) of them held out for the validation loss
    input_ids           every row as "tokens <eos>", left-padded (the facet network's input convention)

Patterns keep their $ARG1 / $ARG2 placeholders as tokens, in order (an argument-swapped pattern is another row);
`pattern_tokens` is the one tokenizer of pattern text (builders, evaluation): whitespace-separated tokens, lower
case except the placeholders.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genfeat.config import atomic_write_text
from genfeat.errors import DataError

PAD, EOS, UNK = 0, 1, 2
SPECIALS = ("<pad>", "<eos>", "<unk>")
ARGS = ("$ARG1", "$ARG2")
PATTERN, RELATION = 0, 1


@dataclass
class SchemaMatrix:
    name: str
    vocab: list[str]
    rows: list[tuple[int, ...]]  # token ids of each row, without <eos>
    row_types: np.ndarray  # (n_rows,) PATTERN / RELATION
    row_names: list[str]
    pair_names: list[str]
    cells: np.ndarray  # (n_cells, 2) int64 (row, pair), unique: the training matrix
    pair_split: np.ndarray | None = None  # (n_pairs,) 0 train / 1 valid / 2 test (relation extraction's held-out
    #                                       pairs); None: every pair trains
    held_out: np.ndarray | None = None  # (m, 2) (KB row, pair) cells of valid / test pairs: the extraction's gold

    def __post_init__(self) -> None:
        n = len(self.rows)
        if len(self.row_types) != n or len(self.row_names) != n:
            raise DataError(f"{self.name}: {n} rows, {len(self.row_types)} row types, {len(self.row_names)} names")
        if self.cells.ndim != 2 or self.cells.shape[1] != 2:
            raise DataError(f"{self.name}: cells must be (n, 2) (row, pair), got {self.cells.shape}")
        if len(self.cells) and (self.cells.min() < 0 or self.cells[:, 0].max() >= n
                                or self.cells[:, 1].max() >= len(self.pair_names)):
            raise DataError(f"{self.name}: a cell names a row or pair that does not exist")
        if len(np.unique(self.cells, axis=0)) != len(self.cells):
            raise DataError(f"{self.name}: repeated (row, pair) cells")
        if self.pair_split is not None and len(self.pair_split) != len(self.pair_names):
            raise DataError(f"{self.name}: pair_split has {len(self.pair_split)} entries for {self.n_pairs} pairs")
        if self.held_out is not None and len(self.held_out) and (
                self.row_types[self.held_out[:, 0]] != RELATION).any():
            raise DataError(f"{self.name}: a held-out cell is not a KB relation's")
        if self.pair_split is not None and len(self.cells) and (
                (self.row_types[self.cells[:, 0]] == RELATION) & (self.pair_split[self.cells[:, 1]] != 0)).any():
            raise DataError(f"{self.name}: a valid / test pair has a KB cell among the training cells")
        if any(not r or min(r) < len(SPECIALS) or max(r) >= len(self.vocab) for r in self.rows):
            raise DataError(f"{self.name}: a row is empty or has a token outside the vocabulary")

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    @property
    def n_pairs(self) -> int:
        return len(self.pair_names)

    @property
    def max_len(self) -> int:
        """The longest row with its <eos>: `input_ids`' width."""
        return max(map(len, self.rows)) + 1

    def pair_counts(self) -> np.ndarray:
        """(n_pairs,) Σ_i y_ij: the number of rows each pair co-occurs with (Eq. 3.9's weights)."""
        return np.bincount(self.cells[:, 1], minlength=self.n_pairs)

    def row_counts(self) -> np.ndarray:
        """(n_rows,) the number of unique pairs of each row (the Freq of the Freq Diff baseline)."""
        return np.bincount(self.cells[:, 0], minlength=self.n_rows)

    def input_ids(self, rows: np.ndarray | None = None) -> np.ndarray:
        """(n, T) "tokens <eos>" of the rows (all by default), left-padded with <pad>."""
        return left_padded([self.rows[r] for r in (range(self.n_rows) if rows is None else rows)])

    def instances(self, max_pairs: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(rows (n,), pairs (n, max_pairs) with -1 padding): each row's pairs in a seeded order, in chunks."""
        rng = np.random.default_rng(seed)
        order = np.lexsort((rng.random(len(self.cells)), self.cells[:, 0]))  # by row, pairs shuffled
        cells = self.cells[order]
        starts = np.flatnonzero(np.r_[True, cells[1:, 0] != cells[:-1, 0]])
        rows, chunks = [], []
        for a, b in zip(starts, np.r_[starts[1:], len(cells)], strict=True):
            for c in range(a, b, max_pairs):
                part = cells[c: min(c + max_pairs, b), 1]
                rows.append(cells[a, 0])
                chunks.append(np.pad(part, (0, max_pairs - len(part)), constant_values=-1))
        return np.asarray(rows, dtype=np.int64), np.asarray(chunks, dtype=np.int64).reshape(-1, max_pairs)

    def checksum(self) -> str:
        h = hashlib.sha256()
        for part in (self.vocab, self.row_names, self.pair_names):
            h.update("\n".join(part).encode() + b"\0")
        h.update(np.ascontiguousarray(self.row_types, dtype=np.int64).tobytes())
        h.update("\n".join(" ".join(map(str, r)) for r in self.rows).encode())
        h.update(np.ascontiguousarray(self.cells, dtype=np.int64).tobytes())
        if self.pair_split is not None:
            h.update(b"split" + np.ascontiguousarray(self.pair_split, dtype=np.int8).tobytes())
            h.update(np.ascontiguousarray(self.held_out, dtype=np.int64).tobytes())
        return h.hexdigest()

    def stats(self) -> dict[str, int]:
        kinds = np.bincount(self.row_types, minlength=2)
        out = {"patterns": int(kinds[PATTERN]), "relations": int(kinds[RELATION]), "pairs": self.n_pairs,
               "cells": len(self.cells), "vocab": len(self.vocab)}
        if self.pair_split is not None:
            n = np.bincount(self.pair_split, minlength=3)
            out |= {"train_pairs": int(n[0]), "valid_pairs": int(n[1]), "test_pairs": int(n[2]),
                    "held_out_cells": len(self.held_out)}
        return out

    def describe(self) -> dict:
        return {"task": self.name, "sizes": self.stats(), "sha256": self.checksum()}

    def write(self, out: str | Path) -> list[Path]:
        """schema.npz (row types, cells, the rows as left-padded ids) and schema.json (the names, the
        description)."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        extra = {} if self.pair_split is None else {"pair_split": self.pair_split, "held_out": self.held_out}
        np.savez_compressed(out / "schema.npz", row_types=self.row_types, cells=self.cells,
                            input_ids=self.input_ids() if self.rows else np.zeros((0, 1), np.int64), **extra)
        names = {"vocab": self.vocab, "rows": self.row_names, "pairs": self.pair_names, "describe": self.describe()}
        atomic_write_text(out / "schema.json", json.dumps(names, ensure_ascii=False) + "\n")
        return [out / "schema.npz", out / "schema.json"]

    def summary(self) -> str:
        s = self.stats()
        return (f"{self.name}: {s['patterns']:,} patterns, {s['relations']:,} KB relations, {s['pairs']:,} entity "
                f"pairs, {s['cells']:,} co-occurrences, {s['vocab']:,} tokens")


def pattern_tokens(text: str) -> list[str]:
    """A pattern's tokens: split on whitespace (non-breaking spaces too), lower case, $ARG1 / $ARG2 kept."""
    return [t if t in ARGS else t.lower() for t in text.replace("\xa0", " ").split()]


def encode_patterns(texts: list[str], vocab: list[str]) -> np.ndarray:
    """(n, T) "tokens <eos>" ids of pattern texts, left-padded; unknown tokens -> <unk>."""
    index = {w: i for i, w in enumerate(vocab)}
    return left_padded([[index.get(t, UNK) for t in pattern_tokens(x)] or [UNK] for x in texts])


def left_padded(rows: list) -> np.ndarray:
    """(n, T) "tokens <eos>" of token-id rows, left-padded with <pad> (the facet network's input convention)."""
    T = max(map(len, rows)) + 1
    out = np.full((len(rows), T), PAD, dtype=np.int64)
    for i, r in enumerate(rows):
        out[i, T - len(r) - 1: -1] = r
        out[i, -1] = EOS
    return out


def split_instances(n: int, valid_share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, valid) indices of n instances, `valid_share` of them (at least 1) held out, seeded."""
    perm = np.random.default_rng(seed).permutation(n)
    k = max(1, round(n * valid_share)) if valid_share > 0 else 0
    return np.sort(perm[k:]), np.sort(perm[:k])


def held_out_split(keys: list[str], test_fraction: float, valid_fraction: float, seed: int) -> dict[str, int]:
    """{key: 0 train / 1 valid / 2 test}: a seeded draw of `test_fraction` and `valid_fraction` of the sorted keys
    (held-out heads, or their groups)."""
    keys = sorted(keys)
    order = [keys[i] for i in np.random.default_rng(seed).permutation(len(keys))]
    n_test, n_valid = round(test_fraction * len(keys)), round(valid_fraction * len(keys))
    return {k: 2 if i < n_test else 1 if i < n_test + n_valid else 0 for i, k in enumerate(order)}


def kb_matrix(name: str, pairs_of: dict[str, set[tuple[str, str]]], kb: dict[tuple[str, str], set[str]],
              relations: list[str], pair_split: dict[tuple[str, str], int]) -> SchemaMatrix:
    """A matrix with KB rows from text and a KB: rows = the patterns of `pairs_of` (pattern -> its entity pairs,
    sorted) then `relations`; columns = the pairs of the patterns; a KB cell for each relation of a pair in `kb`,
    kept out of training (`held_out`) when `pair_split` puts the pair in valid / test."""
    patterns = sorted(pairs_of)
    pairs = sorted({pq for ps in pairs_of.values() for pq in ps})
    pair_id = {pq: j for j, pq in enumerate(pairs)}
    split = np.array([pair_split[pq] for pq in pairs], dtype=np.int8)
    vocab = [*SPECIALS, *sorted({w for p in patterns for w in p.split()}), *relations]
    tok = {w: i for i, w in enumerate(vocab)}
    rel_row = {r: len(patterns) + i for i, r in enumerate(relations)}
    text = [(r, pair_id[pq]) for r, p in enumerate(patterns) for pq in pairs_of[p]]
    facts = [(rel_row[rel], j) for j, pq in enumerate(pairs) for rel in sorted(kb.get(pq, ()))]
    return SchemaMatrix(
        name=name, vocab=vocab, rows=[tuple(tok[w] for w in p.split()) for p in patterns] +
        [(tok[r],) for r in relations],
        row_types=np.array([PATTERN] * len(patterns) + [RELATION] * len(relations), dtype=np.int64),
        row_names=patterns + relations, pair_names=[f"{a}\t{b}" for a, b in pairs],
        cells=np.asarray(sorted(text + [c for c in facts if split[c[1]] == 0]), dtype=np.int64).reshape(-1, 2),
        pair_split=split,
        held_out=np.asarray(sorted(c for c in facts if split[c[1]] != 0), dtype=np.int64).reshape(-1, 2))
