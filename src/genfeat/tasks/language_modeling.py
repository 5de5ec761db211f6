"""Language modelling (thesis C ch. 2, thesis Y ch. 2), as a task (`tasks.base`): predict every next token of a
held-out token stream.

Splits: token streams (1-D arrays of ids; "train" is trained on, the others evaluated). The model is a
`CausalLM`, called as model(x, targets=y) -> (HeadOutput, BackboneOutput). Training loss: the mean NLL of a
(B, L) batch of (inputs, targets), plus the stage-1 NLL of a two-stage head (`HeadOutput.aux`). Evaluation: one
ordered pass over the split, summing the NLL of every target; how the pass is cut into model calls is the
network's (`NLLPass`: fixed segments for GPT, segments with carried memory or a sliding window for
Transformer-XL), so the same task scores every backbone. Metrics: mean NLL per token (`loss`, the primary one),
perplexity (`ppl`) and, for character / byte tokens, bits per character (`bpc`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from genfeat.errors import ConfigError
from genfeat.losses import nll
from genfeat.metrics import bits_per_character, perplexity
from genfeat.tasks.base import Task

NLLPass = Callable[[nn.Module, np.ndarray, str], tuple[float, int]]  # model, tokens, split -> (total NLL, targets)


def lm_loss(model: nn.Module, batch: tuple[Tensor, Tensor]) -> tuple[Tensor, int]:
    """Mean next-token NLL of a batch of (inputs, targets) (B, L); a two-stage head adds its stage-1 NLL."""
    device = next(model.parameters()).device
    x, y = (t.to(device, non_blocking=True) for t in batch)  # (B, L)
    out, _ = model(x, targets=y)
    loss = nll(out, y)
    if out.aux is not None:  # two-stage reranker: stage-1 NLL + stage-2 NLL
        loss = loss + nll(out.aux, y)
    return loss, y.numel()


def _memory_on(memory: dict[str, Any], device) -> dict[str, Any]:
    """A `carry()` dict (mems: a tuple of tensors, mem_ids: a tensor) on `device`."""
    return {k: tuple(t.to(device) for t in v) if k == "mems" else v.to(device) for k, v in memory.items()}


class MemoryLMLoss:
    """Next-token NLL on consecutive segments, carrying the backbone's (detached) memory from one call to the next
    (Transformer-XL training, thesis Y §2.1); the memory is its state, checkpointed with the run, so a resume is
    exact."""

    def __init__(self):
        self.memory: dict[str, Any] = {}  # the last output's `carry()`: mems (and mem_ids for a head that reads them)

    def __call__(self, model: torch.nn.Module, batch) -> tuple[torch.Tensor, int]:
        device = next(model.parameters()).device
        x, y = (t.to(device, non_blocking=True) for t in batch)  # (B, L)
        memory = _memory_on(self.memory, device)  # a no-op unless resumed
        out, bb = model(x, targets=y, **memory)
        self.memory = bb.carry()
        return nll(out, y), y.numel()

    def state_dict(self) -> dict[str, Any]:
        return _memory_on(self.memory, "cpu")

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.memory = {k: tuple(v) if k == "mems" else v for k, v in state.items()}


def lm_scores(total_nll: float, count: int, per_char: bool) -> dict[str, float]:
    """{loss, ppl[, bpc]} of a summed NLL over `count` targets."""
    res = {"loss": total_nll / count, "ppl": perplexity(total_nll, count)}
    if per_char:
        res["bpc"] = bits_per_character(total_nll, count)
    return res


class LanguageModeling(Task):
    metric = "loss"
    mode = "min"
    unit = "tokens"

    def __init__(self, streams: Mapping[str, np.ndarray], nll_pass: NLLPass, per_char: bool = False,
                 loss: Callable[[nn.Module, tuple[Tensor, Tensor]], tuple[Tensor, int]] = lm_loss,
                 metric: str = "loss"):
        """`metric`: the score weights are selected on (loss, ppl or, per character, bpc; all lower-is-better)."""
        self.streams, self.nll_pass, self.per_char, self._loss = dict(streams), nll_pass, per_char, loss
        self.splits = tuple(k for k in self.streams if k != "train")
        if metric not in self.metric_names():
            raise ConfigError(f"a language model is selected on one of {', '.join(self.metric_names())}, "
                              f"got {metric!r}")
        self.metric = metric

    def loss(self, model: nn.Module, batch: tuple[Tensor, Tensor]) -> tuple[Tensor, int]:
        return self._loss(model, batch)

    def predict(self, model: nn.Module, split: str) -> tuple[float, int]:
        with torch.no_grad():
            return self.nll_pass(model, self.streams[split], split)

    def score(self, pred: tuple[float, int], split: str) -> dict[str, float]:
        return lm_scores(*pred, self.per_char)

    def metric_names(self) -> list[str]:
        return list(lm_scores(1.0, 1, self.per_char))
