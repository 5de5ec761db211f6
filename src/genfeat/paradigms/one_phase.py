"""Training paradigms on tasks (specs/framework.md §3), built on `train.fit`:

    fit_task      one phase: train a network on a task, select the weights on the task's primary metric of its
                  selection split (valid, or dev), load them back and evaluate the splits. Pretrain -> fine-tune
                  is two of these, the second starting from the first's weights (`paradigms/finetune.py`);
                  alternating, adversarial and warm-up schedules are `train.step.Step`s (Planetoid's Algorithm3,
                  the complement GAN).

A recipe is then: data -> a task (`genfeat.tasks`), a network, a paradigm; and `train.record.write_record`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from pathlib import Path

import torch
from torch import nn

from genfeat.tasks.base import Task
from genfeat.train import distributed as D
from genfeat.train.checkpoint import WEIGHTS, load_model_weights
from genfeat.train.loop import FitResult, TrainConfig, autocast_dtype, fit
from genfeat.train.step import Step


def selection_split(task: Task) -> str:
    """The split model selection reads: valid, else dev."""
    for split in ("valid", "dev"):
        if split in task.splits:
            return split
    raise ValueError(f"{type(task).__name__} has no valid or dev split to select on (splits: {task.splits})")


def fit_task(model: nn.Module, task: Task, batches: Iterator, cfg: TrainConfig, run_dir: str | Path,
             method: Step | None = None, optimizer: torch.optim.Optimizer | None = None,
             resume_from: str | Path | None = None, desc: str = "train", select: bool = True,
             final_splits: Iterable[str] | None = None) -> tuple[FitResult, dict[str, float]]:
    """Train `model` (maybe DDP-wrapped) on `task.loss` over `batches` with `cfg` (or `method`, a Step whose
    updates use the task's loss), evaluating the selection split every `cfg.eval_every` steps and keeping the
    best weights by `{split}_{task.metric}` (early stopping as `cfg.patience`; `select=False`: no evaluation
    during training, the last weights); load them back and return the fit result and the evaluation of
    `final_splits` (default: every split) as {split}_{metric}, the names `write_record` wants."""
    evaluate = None
    if select:
        split = selection_split(task)
        cfg = dataclasses.replace(cfg, early_stop_metric=f"{split}_{task.metric}", early_stop_mode=task.mode)
        evaluate = lambda m: task.evaluate(m, split)  # noqa: E731
    res = fit(model, method or task.loss, batches, cfg, run_dir, evaluate=evaluate, resume_from=resume_from,
              optimizer=optimizer, desc=desc, unit=task.unit)
    net = D.unwrap(model)
    load_model_weights(net, Path(run_dir) / WEIGHTS)  # the best weights by the selection metric (or the last)
    was = net.training
    net.eval()  # as fit evaluates: no dropout, batch norm on its running statistics
    try:
        return res, final_scores(task, net, res, cfg, final_splits, split if select else None)
    finally:
        net.train(was)


def final_scores(task: Task, net: nn.Module, res: FitResult, cfg: TrainConfig, splits: Iterable[str] | None,
                 selected: str | None) -> dict[str, float]:
    """The kept weights' {split}_{metric} on `splits` (default: every split). The selection split's were
    measured when fit kept those weights (`res.best_eval`): reused, not evaluated again, where that evaluation
    ran in full precision (no autocast), so it is the number a new pass would give."""
    splits = list(task.splits if splits is None else splits)
    device = next(net.parameters()).device
    known = {k: v for k, v in res.best_eval.items() if k != "step" and k.startswith(f"{selected}_")} \
        if selected in splits and autocast_dtype(cfg.precision, device) is None else {}
    rest = [s for s in splits if not (known and s == selected)]
    scores = task.evaluate_all(net, rest) if rest else {}
    if not known:
        return scores
    out: dict[str, float] = {}
    for s in splits:  # in the splits' order, as evaluate_all gives them
        out |= known if s == selected else {k: v for k, v in scores.items() if k.startswith(f"{s}_")}
    return out | scores
