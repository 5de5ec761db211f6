"""The task contract: what a target task is, apart from the network that solves it (specs/framework.md §2: the
target loss l_t and its evaluation; the generative loss l_g of a one-phase model is a task too).

    task.metric, task.mode      the primary metric and its direction: model selection reads `valid_{metric}`
    task.train_rows             the training examples as rows (a dict of tensors, first dimension = examples), or
                                None for a task that is only evaluated (similarity of an unsupervised model)
    task.loss(model, batch)     -> (mean loss, items): l_t on a batch of rows, through the model's forward
                                (so DDP sees it); `train.fit`'s loss function; `task.unit` names the items
                                (examples; tokens for a language model, targets for next-item ranking)
    task.predict(model, split)  -> the model's predictions for an evaluation split, on the CPU
    task.score(pred, split)     -> {metric: value} against the split's gold answers
    task.evaluate(model, split) -> {f"{split}_{metric}": value}: predict + score, the names `write_record` wants
    task.evaluate_all(model)    -> every split's evaluation (a task whose one prediction pass covers every split,
                                as node classification on a graph, overrides it)

A recipe is then a network, a task and a paradigm (`genfeat.paradigms`): `fit_task` trains a model on a task with
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
    unit: str = "examples"  # what `loss`'s count counts (`train.fit`'s unit)
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
def predict_rows(model: nn.Module, rows: Rows, batch: int = 32, trim_padding: bool = False
                 ) -> Tensor | dict[str, Tensor]:
    """The model's outputs for `rows` (called as model(**chunk)), in chunks on the model's device, in eval mode,
    gathered on the CPU in the rows' order: a tensor, or a dict of tensors.

    `trim_padding` (dynamic padding, for right-padded rows with an "attention_mask", 1 = token, and outputs with
    one row per example, not per position): the rows are visited shortest first and every chunk is cut to its
    longest row, so a split padded to its longest example does not pay for that length in every chunk (MiniLM on
    the lexicographer-gloss validation split: 4.4x faster, Debian descriptions 1.5x, BBC articles, all at the
    128-token limit, 1.06x: docs/results/eval_padding.md); the padded positions are masked out of attention either
    way, so the outputs agree to float rounding (test; 2e-7 there)."""
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    n, order = next(iter(rows.values())).size(0), None
    if trim_padding:
        width = rows["attention_mask"].size(1)
        order = torch.argsort(rows["attention_mask"].sum(1), stable=True)  # shortest first
        rows = {k: v[order] for k, v in rows.items()}
    outs = []
    for a in range(0, n, batch):
        chunk = {k: v[a: a + batch] for k, v in rows.items()}
        if order is not None:
            length = int(chunk["attention_mask"].sum(1).max())
            if chunk["attention_mask"][:, length:].any():
                raise ValueError("trim_padding needs right-padded rows (attention_mask 1...1 0...0)")
            chunk = {k: v[:, :length] if v.dim() >= 2 and v.size(1) == width else v for k, v in chunk.items()}
        outs.append(model(**{k: v.to(device) for k, v in chunk.items()}))
    model.train(was)
    inverse = None if order is None else torch.argsort(order)

    def gather(parts: list[Tensor]) -> Tensor:
        out = torch.cat([o.cpu() for o in parts])
        return out if inverse is None else out[inverse]  # back in the rows' order

    if isinstance(outs[0], dict):
        return {k: gather([o[k] for o in outs]) for k in outs[0]}
    return gather(outs)


def to_device(batch: Rows, device: torch.device) -> dict[str, Tensor]:
    return {k: v.to(device) for k, v in batch.items()}
