"""The task contract: what a target task is, apart from the network that solves it (specs/framework.md §2: the
target loss l_t and its evaluation; the generative loss l_g of a one-phase model is a task too).

    task.metric, task.mode      the primary metric and its direction: model selection reads `valid_{metric}`
    task.train_rows             the training examples as rows (a dict of tensors, first dimension = examples), or
                                None for a task that is only evaluated (similarity of an unsupervised model)
    task.loss(model, batch)     -> (mean loss, examples): l_t on a batch of rows, through the model's forward
                                (so DDP sees it); `train.fit`'s loss function
    task.predict(model, split)  -> the model's predictions for an evaluation split, on the CPU
    task.score(pred, split)     -> {metric: value} against the split's gold answers
    task.evaluate(model, split) -> {f"{split}_{metric}": value}: predict + score, the names `write_record` wants
    task.evaluate_all(model)    -> every split's evaluation (a task whose one prediction pass covers every split,
                                as node classification on a graph, overrides it)

A recipe is then a network, a task and a paradigm (`train.paradigms`): `fit_task` trains a model on a task with
model selection on its primary metric and returns its evaluation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch
from torch import Tensor, nn

Rows = Mapping[str, Tensor]


class Task:
    """Base class; see the module docstring. Subclasses hold their splits and implement `predict` and `score`
    (and `loss` when the task is trained)."""

    metric: str = "accuracy"
    mode: str = "max"
    train_rows: Rows | None = None
    splits: tuple[str, ...] = ()

    def loss(self, model: nn.Module, batch: Rows) -> tuple[Tensor, int]:
        raise NotImplementedError(f"{type(self).__name__} is an evaluation-only task")

    def predict(self, model: nn.Module, split: str) -> Any:
        raise NotImplementedError

    def score(self, pred: Any, split: str) -> dict[str, float]:
        raise NotImplementedError

    def evaluate(self, model: nn.Module, split: str) -> dict[str, float]:
        if split not in self.splits:
            raise KeyError(f"{type(self).__name__} has no split {split!r}; it has {', '.join(self.splits)}")
        return {f"{split}_{k}": v for k, v in self.score(self.predict(model, split), split).items()}

    def evaluate_all(self, model: nn.Module, splits: Iterable[str] | None = None) -> dict[str, float]:
        out: dict[str, float] = {}
        for split in self.splits if splits is None else splits:
            out |= self.evaluate(model, split)
        return out


@torch.no_grad()
def predict_rows(model: nn.Module, rows: Rows, batch: int = 32) -> Tensor | dict[str, Tensor]:
    """The model's outputs for `rows` (called as model(**chunk)), in chunks on the model's device, in eval mode,
    gathered on the CPU: a tensor, or a dict of tensors."""
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    n = next(iter(rows.values())).size(0)
    outs = [model(**{k: v[a: a + batch].to(device) for k, v in rows.items()}) for a in range(0, n, batch)]
    model.train(was)
    if isinstance(outs[0], dict):
        return {k: torch.cat([o[k].cpu() for o in outs]) for k in outs[0]}
    return torch.cat([o.cpu() for o in outs])


def to_device(batch: Rows, device: torch.device) -> dict[str, Tensor]:
    return {k: v.to(device) for k, v in batch.items()}
