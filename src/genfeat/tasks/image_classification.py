"""Semi-supervised image classification (thesis Y §3.2, the complement GAN on MNIST / Fashion-MNIST with 100 /
1,000 labels), as a task (`tasks.base`): a few labeled training images, many unlabeled ones, and labeled
validation / test images on which the classifier (the GAN's discriminator over its K real classes) is scored.

Rows per split: `x` images (N, C, H, W) and `y` labels (N,). The model is called as model(x) and returns class
logits (N, K). Metric: the number of misclassified images (`{split}_errors`, the thesis's tables report errors out
of 10,000), and the accuracy.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor, nn

from genfeat.tasks.base import Task


@torch.no_grad()
def predict_classes(model: nn.Module, x: Tensor, batch: int = 1000) -> Tensor:
    """argmax of model(x) in chunks on the model's device, in eval mode, on the CPU (N,)."""
    was = model.training
    model.eval()
    dev = next(model.parameters()).device
    out = torch.cat([model(x[a: a + batch].to(dev)).argmax(-1).cpu() for a in range(0, len(x), batch)])
    model.train(was)
    return out


class SemiSupervisedImageClassification(Task):
    """`data`: {split: {"x": images, "y": labels}} for the evaluated splits. The training side (labeled subset and
    unlabeled pool) is the method's (`data.ssl_batches.SSLBatches`)."""

    metric = "errors"
    mode = "min"
    unit = "images"

    def __init__(self, data: Mapping[str, Mapping[str, Tensor]], batch: int = 1000):
        self.data, self.batch = dict(data), batch
        self.splits = tuple(self.data)

    def predict(self, model: nn.Module, split: str) -> Tensor:
        return predict_classes(model, self.data[split]["x"], self.batch)

    def score(self, pred: Tensor, split: str) -> dict[str, float]:
        wrong = int((pred != self.data[split]["y"]).sum())
        return {"errors": wrong, "accuracy": 1.0 - wrong / max(1, len(pred))}

    def errors(self, model: nn.Module, split: str) -> int:
        return int(self.score(self.predict(model, split), split)["errors"])
