"""Fine-tuning a pretrained encoder the way the XLNet reference does (thesis Y §2.2.3; spec xlnet.md §2.12), as one
`fit_task` phase:

    finetune(model, task, FinetuneConfig(...), seed, run_dir, desc) -> (FitResult, final scores)

AdamW with layer-wise decay (`train.optim.finetune_optimizer`: layer l at lr · layer_decay^(N − 1 − l), no weight
decay on LayerNorm parameters and biases), linear warm-up then linear decay to 0 at `max_steps`, gradient clipping
at 1, fp32, an evaluation and a checkpoint every `eval_every` steps (so `--resume` is exact), batches drawn from
`task.train_rows` (under torchrun each rank takes its share of every batch and the model is wrapped in DDP). The
best weights on the task's selection split are kept (`select`), else the last.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from torch import nn

from genfeat.data.batches import StreamBatches
from genfeat.errors import ConfigError
from genfeat.paradigms.one_phase import fit_task
from genfeat.tasks.base import Task
from genfeat.train import distributed as D
from genfeat.train.loop import FitResult, TrainConfig, effective_warmup
from genfeat.train.optim import finetune_optimizer
from genfeat.train.step import OneLoss


@dataclass(frozen=True)
class FinetuneConfig:
    max_steps: int = 400
    batch_size: int = 16
    lr: float = 1e-4
    warmup_steps: int = 40
    weight_decay: float = 0.01  # not on LayerNorm parameters and biases (the reference's exclusion)
    layer_decay: float = 1.0  # layer l trains at lr * layer_decay ** (N - 1 - l) (reference: 0.75 for SQuAD)
    adam_eps: float = 1e-8
    dropout: float = 0.1  # dropout and attention dropout (the reference's fine-tuning values)
    eval_every: int = 50
    device: str = "auto"  # under torchrun: one rank per device, each with its share of every batch (DDP)
    reschedule: bool = False  # a resume with another max_steps: accept the decay recomputed over it (TrainConfig's)

    def __post_init__(self) -> None:
        if min(self.max_steps, self.batch_size, self.eval_every) < 1 or self.lr <= 0:
            raise ConfigError("train.max_steps, batch_size and eval_every must be >= 1 and lr > 0")
        if not 0.0 < self.layer_decay <= 1.0:
            raise ConfigError(f"train.layer_decay must be in (0, 1], got {self.layer_decay}")
        if self.warmup_steps < 0 or self.weight_decay < 0 or self.adam_eps <= 0:
            raise ConfigError("train.warmup_steps and weight_decay must be >= 0 and adam_eps > 0")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"train.dropout must be in [0, 1), got {self.dropout}")


def finetune(model: nn.Module, task: Task, ft: FinetuneConfig, seed: int, run_dir: Path, desc: str,
             resume_from: Path | None = None, select: bool = True, final_splits: tuple[str, ...] = ("test",)
             ) -> tuple[FitResult, dict[str, float]]:
    """Train `model` on `task` as above; returns the fit result and the evaluation of `final_splits`."""
    info = D.current()
    opt = finetune_optimizer(model, ft.lr, ft.weight_decay, ft.layer_decay, ft.adam_eps)
    warmup = effective_warmup(ft.warmup_steps, ft.max_steps)
    method = OneLoss(task.loss, opt, lambda s: min(
        (s + 1) / max(1, warmup), max(0.0, (ft.max_steps - s) / max(1, ft.max_steps - warmup))))
    loop = TrainConfig(max_steps=ft.max_steps, clip_norm=1.0, precision="fp32", log_every=10, eval_every=ft.eval_every,
                       ckpt_every=ft.eval_every, reschedule=ft.reschedule)
    batches = StreamBatches(task.train_rows, ft.batch_size, np.random.default_rng(seed), info.rank, info.world_size)
    return fit_task(D.wrap(model, info), task, batches, loop, run_dir, method=method, resume_from=resume_from,
                    desc=desc, select=select, final_splits=final_splits)
