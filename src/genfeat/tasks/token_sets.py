"""Next-token sets: each row's next token is any of its `targets`, equally likely (spec multi-facet-softmax.md
§11 S2, the multimodal next-word distribution). Rows: input_ids (P, T), targets (P, S), and a boolean `group`
column naming the rows whose scores are reported apart (S2's diagonal pairs). The model is a `CausalLM`; what it
scores is the next token after the last input.

    loss    -1/S Σ_s log p(target_s), the cross-entropy to the uniform target set (its optimum is log S)
    score   ce and top-S accuracy (every target among the S best) on the grouped rows and ce on the others
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor, nn

from genfeat.tasks.base import Task


class NextTokenSet(Task):
    metric = "ce_group"
    mode = "min"
    unit = "rows"

    def __init__(self, rows: Mapping[str, Tensor], group: str):
        self.rows, self.group = dict(rows), group
        self.splits = ("train",)  # the study fits its contexts: the training rows are what is measured
        self.train_rows = self.rows

    def _logp(self, model: nn.Module, ids: Tensor) -> Tensor:
        return model(ids)[0].log_probs()[:, -1]  # (P, V) after the last input

    def loss(self, model: nn.Module, batch: Mapping[str, Tensor]) -> tuple[Tensor, int]:
        device = next(model.parameters()).device
        ids, targets = batch["input_ids"].to(device), batch["targets"].to(device)
        return -self._logp(model, ids).gather(1, targets).mean(), len(ids)

    @torch.no_grad()
    def predict(self, model: nn.Module, split: str) -> Tensor:
        return self._logp(model, self.rows["input_ids"].to(next(model.parameters()).device)).cpu()

    def score(self, logp: Tensor, split: str) -> dict[str, float]:
        targets, group = self.rows["targets"], self.rows[self.group].bool()
        ce = -logp.gather(1, targets).mean(1)  # (P,)
        best = logp.topk(targets.size(1), -1).indices  # (P, S)
        hit = (best[:, :, None] == targets[:, None, :]).any(1).all(1).float()  # every target among the S best
        return {"ce_group": float(ce[group].mean()), "ce_other": float(ce[~group].mean()),
                "top_s_group": float(hit[group].mean())}
