"""Node classification on one graph (thesis Y §3.1, Planetoid and its baselines), as a task (`tasks.base`).

The graph's nodes carry labels (N,); the splits are index sets into them (train / valid / test: the labeled
training nodes, the validation and test nodes). How a network predicts a node's class differs by method (Planetoid
from ids and features, GCN from the whole graph, label propagation by a solve), so the task takes a `predictor`:
a function of the network returning the predicted class of every node (N,); without one, the network is a
full-graph network (`model()` -> the (N, C) logits of every node) and its argmax is the prediction. One prediction
pass serves every split (`evaluate_all`). Metric: accuracy over the split's nodes, reported as `{split}_acc`.

Training (full-graph networks, every labeled node in each step): `loss(model, _)` is the mean cross-entropy of
`model()` over the training nodes; `labeled_loss(logits)` the same on logits a method computed itself (a method
that adds a graph term to it, ManiReg or SemiEmb). Planetoid's Algorithm 3 draws its own batches (its Step).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numpy as np
import torch
import torch.nn.functional as F
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
        self.train_ids = torch.from_numpy(np.asarray(self.split_idx["train"], dtype=np.int64))
        self.train_y = torch.from_numpy(np.asarray(labels, dtype=np.int64))[self.train_ids]

    def labeled_loss(self, logits: Tensor) -> tuple[Tensor, int]:
        """The mean cross-entropy of every node's logits (N, C) over the training nodes, and their count."""
        return F.cross_entropy(logits[self.train_ids], self.train_y), len(self.train_ids)

    def loss(self, model: nn.Module, batch: object = None) -> tuple[Tensor, int]:
        return self.labeled_loss(model())

    def predict(self, model: nn.Module, split: str | None = None) -> Tensor:
        """The predicted class of every node (the split does not change the pass)."""
        was = model.training
        model.eval()
        with torch.no_grad():
            pred = (model().argmax(-1) if self.predictor is None else self.predictor(model)).cpu()
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
