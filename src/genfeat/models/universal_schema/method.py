"""How a universal-schema model is stepped (thesis C §3.3.1; spec multi-facet-universal-schema.md §6): the network
under AdamW with the run's schedule and, with `pair_optimizer=sgd` (the reference's), the entity-pair table under
SGD at `pair_lr` and H (Ω's map, when the model has one) at `h_lr`, all on one forward and backward a step
(`train.step.SharedLoss`); `adam` keeps the table in the network's optimizer (the spec §10 reference).

    schema_method(model, loss_fn, SchemaOptimConfig(...), train) -> SharedLoss
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from genfeat.errors import ConfigError
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig, build_optimizer, lr_lambda
from genfeat.train.step import LossFn, SharedLoss


@dataclass(frozen=True)
class SchemaOptimConfig:
    pair_optimizer: str = "adam"  # adam: the pair table in the network's AdamW | sgd: SGD at pair_lr (and H at h_lr)
    pair_lr: float = 1.0
    h_lr: float = 0.1

    def __post_init__(self) -> None:
        if self.pair_optimizer not in ("adam", "sgd"):
            raise ConfigError(f"optim.pair_optimizer must be adam or sgd, got {self.pair_optimizer!r}")


def schema_method(model: nn.Module, loss_fn: LossFn, optim: SchemaOptimConfig, train: TrainConfig) -> SharedLoss:
    """`model` may be DDP-wrapped; `train` gives the network's rate and schedule."""
    net = D.unwrap(model)
    if optim.pair_optimizer == "adam":
        return SharedLoss(loss_fn, {"model": build_optimizer(model, train)}, {"model": lr_lambda(train)})
    own = [net.pairs.weight] + ([net.H.weight] if getattr(net, "H", None) is not None else [])
    opts = {"model": build_optimizer(model, train, exclude=own),
            "pairs": torch.optim.SGD([net.pairs.weight], lr=optim.pair_lr)}
    if len(own) > 1:
        opts["H"] = torch.optim.SGD([net.H.weight], lr=optim.h_lr)
    return SharedLoss(loss_fn, opts, {"model": lr_lambda(train)})
