"""Pretraining objectives as tasks (specs/framework.md §2: a one-phase model's generative loss l_g is a task too):
training minimises the objective, the "valid" split scores it on fixed held-out batches, and weights are selected
on one of those scores (`metric`, `mode`: a run's train.early_stop_metric / early_stop_mode).

    HeldOutObjective       the base: `loss` is the training objective itself (a stateful one is checkpointed through
                           its state_dict by `train.fit`), `valid` the held-out batches, `unit` tokens
    PermutationLMPretraining   XLNet (thesis Y §2.2): valid_loss = the mean target NLL of the batches read in order,
                           with the memory they carry (a fresh objective, so training's memory is left alone)
    MultiCLSPretraining    Multi-CLS BERT (thesis C §5.2): the mean of each loss (mlm, tfidf, so, mcqt) and their sum,
                           and valid_positive_first, the share of anchors whose positive ranks first (Eq. 5.2 logits
                           against every P and H row; against the P rows without hard negatives: 1 / N by chance)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from genfeat.losses.plm import PretrainingLoss
from genfeat.models.multi_cls.pretrain import MultiCLSPretrainer, positive_first
from genfeat.tasks.base import Task
from genfeat.train import distributed as D

Batch = dict[str, Tensor]


class HeldOutObjective(Task):
    unit = "tokens"
    metrics: tuple[str, ...] = ("loss",)

    def __init__(self, objective: Callable[[nn.Module, Any], tuple[Tensor, int]], valid: Sequence[Batch],
                 metric: str = "loss", mode: str = "min"):
        if not valid:
            raise ValueError(f"{type(self).__name__} needs at least one held-out batch")
        if metric not in self.metrics or mode not in ("min", "max"):
            raise ValueError(f"select on one of {', '.join(self.metrics)} (min or max), got {metric!r} ({mode})")
        self.objective, self.valid, self.metric, self.mode = objective, list(valid), metric, mode
        self.splits = ("valid",)

    @property
    def loss(self) -> Callable[[nn.Module, Any], tuple[Tensor, int]]:
        return self.objective

    def evaluate(self, model: nn.Module, split: str) -> dict[str, float]:
        if split != "valid":
            raise KeyError(f"{type(self).__name__} has no split {split!r}; it has valid")
        net = D.unwrap(model)
        was = net.training
        net.eval()
        try:
            with torch.no_grad():
                return {f"valid_{k}": v for k, v in self.scores(net).items()}
        finally:
            net.train(was)

    def scores(self, net: nn.Module) -> dict[str, float]:
        raise NotImplementedError


class PermutationLMPretraining(HeldOutObjective):
    def __init__(self, objective: str, valid: Sequence[Batch], metric: str = "loss", mode: str = "min"):
        """`objective`: plm | mlm (`losses.plm.PretrainingLoss`)."""
        super().__init__(PretrainingLoss(objective), valid, metric, mode)
        self.objective_name = objective

    def scores(self, net: nn.Module) -> dict[str, float]:
        loss_fn, total, count = PretrainingLoss(self.objective_name), 0.0, 0
        for b in self.valid:
            loss, n = loss_fn(net, b)
            total, count = total + float(loss) * n, count + n
        return {"loss": total / count}


def multi_cls_loss(model: nn.Module, batch: Batch) -> tuple[Tensor, int]:
    """The multi-task loss and the batch's real (unpadded) input tokens, the count behind the loop's tokens/s."""
    n_tokens = int(batch["attention_mask"].sum())  # on the CPU, before the copy: no device sync
    device = next(model.parameters()).device
    return model(**{k: v.to(device) for k, v in batch.items()}), n_tokens


class MultiCLSPretraining(HeldOutObjective):
    metrics = ("loss", *MultiCLSPretrainer.LOSSES, "positive_first")

    def __init__(self, valid: Sequence[Batch], metric: str = "loss", mode: str = "min"):
        super().__init__(multi_cls_loss, valid, metric, mode)

    def scores(self, net: nn.Module) -> dict[str, float]:
        device = next(net.parameters()).device
        sums: dict[str, float] = {}
        hits = total = 0
        for b in self.valid:
            b = {k: v.to(device) for k, v in b.items()}
            for k, v in net.losses(b).items():
                sums[k] = sums.get(k, 0.0) + float(v) / len(self.valid)
            h, n = positive_first(net.sentence_embeddings(b), net.lam, net.hard_negatives)
            hits, total = hits + h, total + n
        return {"loss": sum(sums.values()), **sums, "positive_first": hits / total}
