"""Node classification on one graph (thesis Y §3.1, Planetoid and its baselines), as a task (`tasks.base`).

The graph's nodes carry labels (N,); the splits are index sets into them (train / valid / test: the labeled
training nodes, the validation and test nodes). How a network predicts a node's class differs by method (Planetoid
from ids and features, GCN from the whole graph, label propagation by a solve), so the task takes a `predictor`:
a function of the network returning the predicted class of every node (N,). One prediction pass serves every split
(`evaluate_all`). Metric: accuracy over the split's nodes, reported as `{split}_acc`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numpy as np
import torch
from torch import Tensor, nn

from genfeat.metrics.classification import split_accuracy
from genfeat.tasks.base import Task

Predictor = Callable[[nn.Module], Tensor]  # network -> predicted class of every node (N,)


class NodeClassification(Task):
    metric = "acc"
    mode = "max"
    unit = "nodes"

    def __init__(self, labels: np.ndarray, split_idx: Mapping[str, np.ndarray], predictor: Predictor | None = None):
        self.labels, self.split_idx, self.predictor = labels, dict(split_idx), predictor
        self.splits = tuple(self.split_idx)

    def predict(self, model: nn.Module, split: str | None = None) -> Tensor:
        """The predicted class of every node (the split does not change the pass)."""
        if self.predictor is None:
            raise ValueError("NodeClassification needs a predictor (network -> class of every node) to predict")
        was = model.training
        model.eval()
        with torch.no_grad():
            pred = self.predictor(model).cpu()
        model.train(was)
        return pred

    def score(self, pred: Tensor, split: str) -> dict[str, float]:
        return {"acc": split_accuracy(pred, self.labels, {split: self.split_idx[split]})[f"{split}_acc"]}

    def evaluate_all(self, model: nn.Module, splits: Iterable[str] | None = None) -> dict[str, float]:
        return self.scores(self.predict(model), splits)

    def scores(self, pred: Tensor, splits: Iterable[str] | None = None) -> dict[str, float]:
        """{split}_acc of the node predictions `pred` (N,) on each split (default: all)."""
        chosen = self.splits if splits is None else splits
        return split_accuracy(pred, self.labels, {s: self.split_idx[s] for s in chosen})
