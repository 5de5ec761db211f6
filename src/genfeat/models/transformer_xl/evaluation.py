"""How Transformer-XL and the vanilla baseline are evaluated (thesis Y §2.1.2-2.1.3): each split read in order in
segments of its own length, carrying a memory that may be several times longer than in training and starting
empty; or, for the vanilla model, a sliding window that scores only its newest targets (Al-Rfou et al.).

    eval_nll(model, tokens, split, ev, tgt_len, mem_len, batch_size) -> (summed NLL, number of targets)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from genfeat.models.nll_passes import segment_nll, sliding_nll
from genfeat.train import distributed as D


@dataclass(frozen=True)
class TXLEvalConfig:
    tgt_len: int = 0  # evaluation segment length; 0: model.tgt_len
    mem_len: int = -1  # evaluation memory length; -1: model.mem_len
    same_length: bool = False
    clamp_len: int = -1
    stride: int = 0  # > 0: sliding-window evaluation with window model.tgt_len (vanilla baseline)


@torch.no_grad()
def eval_nll(model: torch.nn.Module, tokens: np.ndarray, split: str, ev: TXLEvalConfig, tgt_len: int, mem_len: int,
             batch_size: int) -> tuple[float, int]:
    """Summed NLL and target count of `tokens` under `ev`, for a model trained on segments of `tgt_len` with a
    memory of `mem_len`: segments with the evaluation memory, or (ev.stride > 0) the sliding window of `tgt_len`
    (in batches of 8 x batch_size windows). The model's own memory setting is restored afterwards."""
    if ev.stride > 0:
        return sliding_nll(model, tokens, tgt_len, ev.stride, split, batch_size=batch_size * 8)
    bb = D.unwrap(model).backbone
    train_setting = (bb.mem_len, bb.same_length, bb.clamp_len)
    bb.reset_length(mem_len if ev.mem_len < 0 else ev.mem_len, ev.same_length, ev.clamp_len)
    try:
        return segment_nll(model, tokens, batch_size, ev.tgt_len or tgt_len, split, carry_memory=True)
    finally:
        bb.reset_length(*train_setting)
