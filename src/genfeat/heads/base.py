"""The head contract."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class HeadOutput:
    """scores: (..., V). Logits when `is_log_prob` is False (softmax-like heads), normalised
    log-probabilities when True (mixtures, pointer heads)."""

    scores: Tensor
    is_log_prob: bool = False

    def log_probs(self) -> Tensor:
        return self.scores if self.is_log_prob else torch.log_softmax(self.scores.float(), dim=-1)
