"""Condition vectors inserted into a decoder's input (thesis C §4.2.2.1, Figure 4.3a; spec
interactive-generation.md §4.2-4.3 and §9 tests 3 and 5).

A condition vector v (a topic of Eq. 4.1 or a typed word's unit GloVe vector, (c,)) enters the sequence as

    f = Linear(c -> d)(v) + P^f[pos(x_L)]         P^f: the special ("future") position table, not GPT-2's wpe

immediately before the real token x_L it is inserted at; every vector at one location shares that position,
there is no order among them, and the real tokens keep their own positions (no shift by the insertions).

Layout: tokens x_0 .. x_9 with vectors at locations [3, 3, 7] merge into

    x_0 x_1 x_2 f f x_3 x_4 x_5 x_6 f x_7 x_8 x_9           (length 13)

token i at merged slot i + #{vectors at locations <= i}, the j-th vector (sorted by location) at location_j + j.
A real token predicts the next real token, an inserted slot predicts nothing (a null label): in the reference's
form, the labels of the merged sequence before its shift-by-one are `merged_labels`:
x_0 .. x_3, -100, -100, x_4 .. x_7, -100, x_8, x_9, so x_3 (which has read the hints) predicts x_4.
`models.gpt.GPTDecoder` returns the hidden states of the real tokens only (B, T, d), so the standard shifted
loss of `lm(ids[:, :-1], targets=ids[:, 1:], inserts=...)` is exactly that null-label loss
(tests/interactive/test_insertion.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

IGNORE = -100


@dataclass
class Insertions:
    """vectors (B, N, c) and locations (B, N): the index, in this call's input_ids, of the real token each vector
    goes before; -1 marks an unused slot. In each row the used slots come first, sorted by location."""

    vectors: Tensor
    locations: Tensor

    def __post_init__(self) -> None:
        if self.vectors.dim() != 3 or self.locations.shape != self.vectors.shape[:2]:
            raise ValueError(f"inserted vectors {tuple(self.vectors.shape)} must be (batch, slots, dim) with "
                             f"locations (batch, slots), got locations {tuple(self.locations.shape)}")
        used = self.locations >= 0
        if bool((used[:, 1:] & ~used[:, :-1]).any()):
            raise ValueError("unused insertion slots (location -1) must come after the used ones in each row")
        loc = torch.where(used, self.locations, torch.iinfo(self.locations.dtype).max)
        if bool((loc[:, 1:] < loc[:, :-1]).any()):
            raise ValueError("insertion locations must be sorted (non-decreasing) in each row")

    @property
    def counts(self) -> Tensor:
        """(B,) inserted vectors per row."""
        return (self.locations >= 0).sum(1)

    @classmethod
    def before_last(cls, vectors: Tensor, T: int) -> Insertions:
        """All of vectors (B, n, c) before the last of T input tokens (the interactive generator's place, §4.2.2.1:
        before x_I, so the prompt's own tokens never read a future hint)."""
        return cls(vectors, torch.full(vectors.shape[:2], T - 1, dtype=torch.long, device=vectors.device))


@dataclass
class Layout:
    token_slot: Tensor  # (B, T) merged slot of each real token
    vector_slot: Tensor  # (B, N) merged slot of each vector; `width` for an unused slot
    length: Tensor  # (B,) merged length T + n_b
    width: int  # T + max_b n_b


def insertion_layout(locations: Tensor, T: int) -> Layout:
    """Where tokens and vectors sit in the merged sequence (module docstring)."""
    if bool((locations >= T).any()):
        raise ValueError(f"an insertion location is past the last of the {T} input tokens")
    used = locations >= 0  # (B, N)
    counts = used.sum(1)  # (B,)
    width = T + int(counts.max()) if locations.numel() else T
    ar = torch.arange(T, device=locations.device)
    before = ((locations[:, None, :] <= ar[None, :, None]) & used[:, None, :]).sum(2)  # (B, T) vectors at <= i
    j = torch.arange(locations.size(1), device=locations.device)
    vector_slot = torch.where(used, locations + j[None], width)  # (B, N)
    return Layout(ar[None] + before, vector_slot, T + counts, width)


def merge(tokens: Tensor, vectors: Tensor, layout: Layout) -> Tensor:
    """tokens (B, T, d) and vectors (B, N, d) -> (B, width, d); slots past a row's length are zero."""
    B, _, d = tokens.shape
    out = tokens.new_zeros(B, layout.width + 1, d)  # one extra column takes the unused vectors
    out.scatter_(1, layout.token_slot[..., None].expand(-1, -1, d), tokens)
    out.scatter_(1, layout.vector_slot[..., None].expand(-1, -1, d), vectors.to(tokens.dtype))
    return out[:, : layout.width]


def merged_labels(input_ids: Tensor, locations: Tensor, ignore: int = IGNORE) -> Tensor:
    """The reference's labels (before its shift-by-one) of the merged sequence (B, width): the target of merged
    slot m is labels[:, m + 1], the next real token after a real token and `ignore` after an inserted slot."""
    B, T = input_ids.shape
    layout = insertion_layout(locations, T)
    nxt = input_ids.new_full((B, layout.width + 1), ignore)  # target of each merged slot, + a spill column
    nxt.scatter_(1, layout.token_slot[:, :-1], input_ids[:, 1:])
    labels = input_ids.new_full((B, layout.width), ignore)
    labels[:, 0] = input_ids[:, 0]
    labels[:, 1:] = nxt[:, : layout.width - 1]
    return labels
