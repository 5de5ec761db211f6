"""Synthetic sequences on which the permutation LM's mechanism has a large, analytic effect (spec xlnet.md §6.2).

Vocabulary: 0 <mask>, 1 marker M, then the task's own symbols, then fillers (uniform random tokens).

new_york   D1 "New York": one slot [M, a, b] at a random place, (a, b) drawn uniformly from two pairs
           {(p1, q1), (p2, q2)}: a and b are each ambiguous alone (ln 2) and determine each other. Joint NLL of the
           slot given the rest: a permutation LM reaches ln 2 (-log p(a) - log p(b | a)); any model that predicts
           the two independently (MLM, Eq. 2.2) is bounded below by 2 ln 2.
right_ctx  D2: `n_marked` slots [M, f(y), y] with y a filler and f a fixed bijection onto the marked symbols: the
           marked token is a deterministic function of the token to its *right*. Fill-in NLL at the marked
           positions: 0 for a model that sees both sides (PLM), ln(n_fillers) for a left-to-right LM.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

MASK, MARK = 0, 1


def new_york(B: int, T: int, rng: np.random.Generator, n_fillers: int = 20) -> dict[str, Tensor]:
    """input_ids (B, T) and target_pos (B, 2) of the slot; vocabulary size `new_york_vocab(n_fillers)`."""
    if T < 3:
        raise ValueError("new_york needs T >= 3")
    x = rng.integers(6, 6 + n_fillers, (B, T))
    start = rng.integers(0, T - 2, B)  # position of M
    pair = rng.integers(0, 2, B)
    rows = np.arange(B)
    x[rows, start], x[rows, start + 1], x[rows, start + 2] = MARK, 2 + 2 * pair, 3 + 2 * pair
    return {"input_ids": torch.from_numpy(x), "target_pos": torch.from_numpy(np.stack([start + 1, start + 2], 1))}


def new_york_vocab(n_fillers: int = 20) -> int:
    return 6 + n_fillers


def right_ctx(B: int, T: int, rng: np.random.Generator, n_fillers: int = 16, n_marked: int = 2) -> dict[str, Tensor]:
    """input_ids (B, T) and target_pos (B, n_marked) of the marked tokens; vocabulary `right_ctx_vocab`."""
    if T < 3 * n_marked:
        raise ValueError("right_ctx needs T >= 3 * n_marked")
    fill0 = 2 + n_fillers  # marked symbols 2 .. 2 + n_fillers - 1, fillers after them
    x = rng.integers(fill0, fill0 + n_fillers, (B, T))
    pos = np.empty((B, n_marked), np.int64)
    for b in range(B):  # non-overlapping slots: choose n_marked of the T // 3 blocks of three
        blocks = np.sort(rng.choice(T // 3, n_marked, replace=False))
        pos[b] = blocks * 3 + 1
        x[b, blocks * 3] = MARK
        x[b, blocks * 3 + 1] = x[b, blocks * 3 + 2] - fill0 + 2  # f(y) = y's index among the marked symbols
    return {"input_ids": torch.from_numpy(x), "target_pos": torch.from_numpy(pos)}


def right_ctx_vocab(n_fillers: int = 16) -> int:
    return 2 + 2 * n_fillers
