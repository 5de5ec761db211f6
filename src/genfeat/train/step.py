"""What one training step does, for `train.fit`: a sequence of updates, each minimising one loss with one
optimizer.

    Update(loss_fn, optimizer="model", data="train", name="loss", hold=())

    loss_fn(model, batch) -> (mean loss, items)  or  (mean loss, items, {name: float})   the dict: logged parts
    optimizer   the name of the optimizer this update steps (the `Step`'s `optimizers`), or a tuple of names:
                one loss, one backward, several optimizers stepped on it (universal schema's network under
                Adam and its entity-pair table under SGD at lr 1.0); clipping covers their parameters together
    data        the name of the batch iterator it draws from (`fit`'s `train_data`); None: the batches the
                previous update of this step drew (a discriminator and a generator update on one mini-batch)
    name        the name its loss is logged under
    hold        modules differentiated through but not updated: their parameters stop requiring gradients
                for the update (a GAN's discriminator during the generator update)

Methods (specs/framework.md §4):

    one loss, one optimizer    OneLoss(loss_fn, optimizer, lr_lambda)       -> [Update(loss_fn)]
    one loss, several          SharedLoss(loss_fn, optimizers, lr_lambdas)  -> [Update(loss_fn, optimizer=all names)]
      optimizers               (parameters under different optimizers and learning rates, one forward and backward)
    adversarial (GAN D / G)    a Step whose updates are [D update, G update holding D]
    alternating                a Step whose updates depend on the step (Planetoid's T1 supervised / T2 context
                               rounds, an E/M schedule)

A `Step` owns the optimizers and their learning-rate multipliers (one `LambdaLR` each, stepped once per
training step) and whatever random streams decide its updates (`state_dict`), so that a checkpoint holds
everything needed to continue exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import torch
from torch import nn

LossFn = Callable[[nn.Module, Any], tuple]


@dataclass(frozen=True)
class Update:
    loss_fn: LossFn
    optimizer: str | tuple[str, ...] = "model"
    data: str | None = "train"
    name: str = "loss"
    hold: tuple[nn.Module, ...] = ()

    @property
    def optimizer_names(self) -> tuple[str, ...]:
        return (self.optimizer,) if isinstance(self.optimizer, str) else tuple(self.optimizer)


class Step:
    """The updates of a training method. Subclasses set `optimizers` and `lr_lambdas` (an optimizer without a
    multiplier keeps its learning rate) and return the updates of step `step` (0-based) from `updates`."""

    optimizers: Mapping[str, torch.optim.Optimizer]
    lr_lambdas: Mapping[str, Callable[[int], float]] = MappingProxyType({})

    def updates(self, step: int) -> Sequence[Update]:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """The method's own random streams and counters (checkpointed per rank)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


class OneLoss(Step):
    """One loss, one optimizer: the update of most recipes. A loss_fn with `state_dict` (Transformer-XL's
    memory) has its state checkpointed."""

    def __init__(self, loss_fn: LossFn, optimizer: torch.optim.Optimizer, lr_lambda: Callable[[int], float]):
        self.loss_fn = loss_fn
        self.optimizers = {"model": optimizer}
        self.lr_lambdas = {"model": lr_lambda}
        self._updates = (Update(loss_fn),)

    def updates(self, step: int) -> Sequence[Update]:
        return self._updates

    def state_dict(self) -> dict[str, Any]:
        return self.loss_fn.state_dict() if hasattr(self.loss_fn, "state_dict") else {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if hasattr(self.loss_fn, "load_state_dict"):
            self.loss_fn.load_state_dict(state)



class SharedLoss(OneLoss):
    """One loss stepping several optimizers on one backward: `optimizers` by name (their parameters disjoint),
    `lr_lambdas` for those with a schedule."""

    def __init__(self, loss_fn: LossFn, optimizers: Mapping[str, torch.optim.Optimizer],
                 lr_lambdas: Mapping[str, Callable[[int], float]] = MappingProxyType({})):
        ids = [id(p) for opt in optimizers.values() for g in opt.param_groups for p in g["params"]]
        if len(ids) != len(set(ids)):
            raise ValueError("SharedLoss: a parameter is in two of the optimizers")
        self.loss_fn = loss_fn
        self.optimizers, self.lr_lambdas = dict(optimizers), dict(lr_lambdas)
        self._updates = (Update(loss_fn, optimizer=tuple(optimizers)),)
