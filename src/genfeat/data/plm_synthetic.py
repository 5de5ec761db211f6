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

from genfeat.data.batches import rank_share
from genfeat.data.plm import mlm_corrupt, perm_mask_from_ranks, sample_ranks

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


STUDIES = {"new_york": (new_york, new_york_vocab), "right_context": (right_ctx, right_ctx_vocab)}


def study_vocab(study: str) -> int:
    return STUDIES[study][1]()


def targets_mask(target_pos: Tensor, T: int, extra_rate: float, generator: torch.Generator) -> Tensor:
    """(B, T) bool: the study's tokens, plus each other token with probability `extra_rate`."""
    m = torch.rand(target_pos.size(0), T, generator=generator) < extra_rate
    return m.scatter(1, target_pos, True)


def plm_targets_batch(d: dict[str, Tensor], is_target: Tensor, generator: torch.Generator,
                      identity: bool = False) -> dict[str, Tensor]:
    """A permutation-LM batch of `d`: a random order of the targets (identity: left to right over all tokens, an
    AR LM), the targets listed first-position-first and padded to the batch maximum with label -100."""
    B, T = is_target.shape
    rank = torch.arange(T).expand(B, -1) if identity else sample_ranks(B, T, generator=generator)
    n = int(is_target.sum(1).max())
    key = torch.where(is_target, torch.arange(T).float(), T + torch.arange(T).float())
    pos = key.argsort(1)[:, :n]  # (B, n) the targets' positions, in order
    labels = torch.where(is_target.gather(1, pos), d["input_ids"].gather(1, pos), -100)
    return {"input_ids": d["input_ids"], "perm_mask": perm_mask_from_ranks(rank, is_target), "target_pos": pos,
            "labels": labels}


class DependencyBatches:
    """Fresh training batches of a study (spec xlnet.md §6.2) for one objective, seeded and resumable:

        new_york + plm        the slot's two tokens as the targets, in a random order
        new_york + mlm        the slot's two tokens corrupted BERT's way (`mlm_corrupt`), predicted independently
        right_context + plm   the marked tokens plus 1/6 of the others, in a random order
        right_context + ar    every token, left to right (the identity order): an AR LM on the same network
    """

    OBJECTIVES = {"new_york": ("plm", "mlm"), "right_context": ("plm", "ar")}

    def __init__(self, study: str, objective: str, batch_size: int, T: int, seed: int, rank: int = 0,
                 world_size: int = 1):
        if objective not in self.OBJECTIVES.get(study, ()):
            raise ValueError(f"study {study!r} trains {' or '.join(self.OBJECTIVES.get(study, ()))}, not "
                             f"{objective!r}")
        self.study, self.objective, self.B, self.T = study, objective, batch_size, T
        self.rng, self.gen = np.random.default_rng(seed), torch.Generator().manual_seed(seed)
        self.share = rank_share(batch_size, rank, world_size)  # every rank draws the global batch, keeps its rows

    def __iter__(self) -> DependencyBatches:
        return self

    def __next__(self) -> dict[str, Tensor]:
        return {k: v[self.share] for k, v in self._global_batch().items()}

    def _global_batch(self) -> dict[str, Tensor]:
        d = STUDIES[self.study][0](self.B, self.T, self.rng)
        if self.objective == "mlm":
            x = mlm_corrupt(d["input_ids"], d["target_pos"], MASK, study_vocab(self.study), self.gen)
            return {"input_ids": x, "target_pos": d["target_pos"], "labels": d["input_ids"].gather(1, d["target_pos"])}
        if self.objective == "ar":
            return plm_targets_batch(d, torch.ones(self.B, self.T, dtype=torch.bool), self.gen, identity=True)
        extra = 1 / 6 if self.study == "right_context" else 0.0
        return plm_targets_batch(d, targets_mask(d["target_pos"], self.T, extra, self.gen), self.gen)

    def state_dict(self) -> dict:
        return {"rng": self.rng.bit_generator.state, "gen": self.gen.get_state()}

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.gen.set_state(state["gen"])
