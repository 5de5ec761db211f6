"""The head contract."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


def upcast(x: Tensor) -> Tensor:
    """At least fp32 for softmax / losses under mixed precision (fp64 stays fp64)."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


@dataclass
class HeadOutput:
    """scores: (..., V). Logits when `is_log_prob` is False (softmax-like heads), normalised
    log-probabilities when True (mixtures, pointer heads)."""

    scores: Tensor
    is_log_prob: bool = False

    def log_probs(self) -> Tensor:
        return self.scores if self.is_log_prob else torch.log_softmax(upcast(self.scores), dim=-1)
