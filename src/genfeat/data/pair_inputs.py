"""Input layouts of the fine-tuning tasks.

XLNet (thesis Y §2.2.3; the reference's classification layout): [A, <sep>, (B, <sep>,) <cls>], left-padded so
<cls> is the last token; segment ids A 0, B 1, <cls> 2, padding 4 (only equality matters).

    pair_inputs(a_ids, b_ids | None, max_len, sep_id, cls_id, pad_id)   token ids -> input_ids, token_type_ids,
                                                                        attention_mask
    encode_pairs(tok, pairs, max_len)                                   (text_a, text_b | None) pairs through a
                                                                        SentencePiece tokenizer (whitespace runs
                                                                        collapsed) into that layout
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

SEG_A, SEG_B, SEG_CLS, SEG_PAD = 0, 1, 2, 4


def pair_inputs(a: Sequence[Sequence[int]], b: Sequence[Sequence[int]] | None, max_len: int, sep_id: int,
                cls_id: int, pad_id: int) -> dict[str, Tensor]:
    """Batch of [A, <sep>, (B, <sep>,) <cls>] left-padded to the longest (at most max_len); the longer of A / B is
    truncated first (the reference's `_truncate_seq_pair`). Returns input_ids, token_type_ids, attention_mask."""
    n_special = 2 if b is None else 3
    if max_len <= n_special:
        raise ValueError(f"max_len must exceed the {n_special} special tokens")
    rows = []
    for i, ta in enumerate(a):
        ta, tb = list(ta), [] if b is None else list(b[i])
        while len(ta) + len(tb) > max_len - n_special:
            (ta if len(ta) >= len(tb) else tb).pop()
        ids = ta + [sep_id] + (tb + [sep_id] if b is not None else []) + [cls_id]
        seg = [SEG_A] * (len(ta) + 1) + ([SEG_B] * (len(tb) + 1) if b is not None else []) + [SEG_CLS]
        rows.append((ids, seg))
    T = max(len(ids) for ids, _ in rows)
    out = {"input_ids": torch.full((len(rows), T), pad_id), "token_type_ids": torch.full((len(rows), T), SEG_PAD),
           "attention_mask": torch.zeros(len(rows), T, dtype=torch.long)}
    for r, (ids, seg) in enumerate(rows):
        out["input_ids"][r, T - len(ids):] = torch.tensor(ids)
        out["token_type_ids"][r, T - len(ids):] = torch.tensor(seg)
        out["attention_mask"][r, T - len(ids):] = 1
    return out


def encode_pairs(tok: Any, pairs: Sequence[tuple[str, str | None]], max_len: int) -> dict[str, Tensor]:
    """`pair_inputs` of `tok`'s ids (`tok.encode`, `tok.ids` with <sep>, <cls>, <pad>) of each text, its whitespace
    runs collapsed to one space; a pair task when the first pair has a text_b."""
    a = [tok.encode(" ".join(p[0].split())) for p in pairs]
    b = None if pairs and pairs[0][1] is None else [tok.encode(" ".join(p[1].split())) for p in pairs]
    return pair_inputs(a, b, max_len, tok.ids["<sep>"], tok.ids["<cls>"], tok.ids["<pad>"])
