"""The loss of a sequence classifier's output: cross-entropy over classes for logits (B, C), or the squared error
for a regression head's scores (B,) (GLUE's STS-B). One function for every classifier of the task layer
(`tasks.classification.SequenceClassification`), so no model carries a loss of its own."""

from __future__ import annotations

from torch import Tensor, nn


def classification_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean cross-entropy (logits (B, C), labels (B,) class ids) or mean squared error (scores (B,), targets)."""
    if logits.dim() == 1:
        return nn.functional.mse_loss(logits, labels.float())
    return nn.functional.cross_entropy(logits, labels)
