"""XLNet fine-tuning (thesis Y §2.2.3; spec xlnet.md §2.12): the query stream is dropped and the content stream is
a bidirectional Transformer-XL encoder (no perm mask, no memory, padding masked as keys).

    inputs      [A, <sep>, (B, <sep>,) <cls>], left-padded so <cls> is the last token; segment ids A 0, B 1,
                <cls> 2, padding 4 (the reference's classification layout; only equality matters)
    summary     the last position's state -> Linear(d, d) -> tanh -> dropout   ("last", projection on)
    classify    summary -> Linear(d, n_labels); n_labels = 1 is regression (STS-B)
    choice      one [passage, <sep>, question + option, <sep>, <cls>] per option -> summary -> Linear(d, 1), soft-maxed
                across the options (RACE)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from genfeat.models.xlnet.config import XLNetConfig
from genfeat.models.xlnet.model import XLNet

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


class SequenceSummary(nn.Module):
    """The last position (<cls>) -> Linear(d, d) -> tanh -> dropout."""

    def __init__(self, d_model: int, dropout: float = 0.1):
        super().__init__()
        self.summary = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, hidden: Tensor) -> Tensor:
        return self.drop(torch.tanh(self.summary(hidden[:, -1])))


class XLNetClassifier(nn.Module):
    """Sequence classification (n_labels > 1, cross-entropy) or regression (n_labels = 1, squared error)."""

    def __init__(self, cfg: XLNetConfig, n_labels: int, dropout: float = 0.1):
        super().__init__()
        if n_labels < 1:
            raise ValueError("n_labels must be >= 1")
        self.transformer = XLNet(cfg)
        self.sequence_summary = SequenceSummary(cfg.d_model, dropout)
        self.logits_proj = nn.Linear(cfg.d_model, n_labels)
        for lin in (self.sequence_summary.summary, self.logits_proj):
            nn.init.normal_(lin.weight, 0.0, cfg.init_std)
            nn.init.zeros_(lin.bias)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None,
                attention_mask: Tensor | None = None) -> Tensor:
        h = self.transformer(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask).hidden
        logits = self.logits_proj(self.sequence_summary(h))
        return logits[:, 0] if logits.size(1) == 1 else logits

    def loss(self, logits: Tensor, labels: Tensor) -> Tensor:
        if logits.dim() == 1:
            return nn.functional.mse_loss(logits, labels.float())
        return nn.functional.cross_entropy(logits, labels)


class XLNetMultipleChoice(nn.Module):
    """Inputs (B, C, T): one sequence per option; logits (B, C)."""

    def __init__(self, cfg: XLNetConfig, dropout: float = 0.1):
        super().__init__()
        self.clf = XLNetClassifier(cfg, 1, dropout)

    @property
    def transformer(self) -> XLNet:
        return self.clf.transformer

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None,
                attention_mask: Tensor | None = None) -> Tensor:
        B, C, T = input_ids.shape

        def flat(t):
            return None if t is None else t.reshape(B * C, T)
        return self.clf(flat(input_ids), flat(token_type_ids), flat(attention_mask)).view(B, C)
