"""What the permutation objective buys, measured on synthetic sequences with analytic optima (thesis Y §2.2;
spec xlnet.md §6.2 D1, D2; data in `data.plm_synthetic`). The model is an `XLNetLM`; the test split is a fixed
set of held-out sequences; NLL in nats.

    new_york + plm        joint_nll_a_first, joint_nll_b_first: -log p(a) - log p(b | a) with the slot's first
                          (second) token predicted first, everything else context (optimum ln 2)
    new_york + mlm        joint_nll: both slot tokens masked and predicted independently (>= 2 ln 2)
    right_context + plm   fill_in_nll: each marked token predicted alone from all other tokens (optimum 0)
    right_context + ar    fill_in_nll: each marked token from the tokens to its left (ln 16)
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor, nn

from genfeat.data.plm import perm_mask_from_ranks
from genfeat.data.plm_synthetic import MASK, DependencyBatches
from genfeat.losses.nll import nll
from genfeat.losses.plm import mlm_loss, plm_loss
from genfeat.tasks.base import Task


class DependencyStudy(Task):
    mode = "min"
    unit = "targets"

    def __init__(self, study: str, objective: str, test: Mapping[str, Tensor]):
        if objective not in DependencyBatches.OBJECTIVES.get(study, ()):
            raise ValueError(f"study {study!r} has no objective {objective!r}")
        self.study, self.objective, self.test = study, objective, dict(test)
        self.splits = ("test",)
        self.metric = "fill_in_nll" if study == "right_context" else \
            "joint_nll" if objective == "mlm" else "joint_nll_a_first"

    def loss(self, model: nn.Module, batch: Mapping[str, Tensor]) -> tuple[Tensor, int]:
        device = next(model.parameters()).device
        batch = {k: v.to(device) for k, v in batch.items()}
        return mlm_loss(model, batch) if self.objective == "mlm" else plm_loss(model, batch)

    @torch.no_grad()
    def evaluate(self, model: nn.Module, split: str) -> dict[str, float]:
        if split != "test":
            raise KeyError(f"DependencyStudy has no split {split!r}; it has test")
        was = model.training
        model.eval()
        d = {k: v.to(next(model.parameters()).device) for k, v in self.test.items()}
        if self.study == "right_context":
            out = {"fill_in_nll": fill_in_nll(model, d, identity=self.objective == "ar")}
        elif self.objective == "mlm":
            out = {"joint_nll": joint_nll_mlm(model, d)}
        else:
            out = {"joint_nll_a_first": joint_nll_plm(model, d, 0), "joint_nll_b_first": joint_nll_plm(model, d, 1)}
        model.train(was)
        return {f"test_{k}": v for k, v in out.items()}


def joint_nll_plm(lm: nn.Module, d: Mapping[str, Tensor], first: int) -> float:
    """Mean over sequences of -Σ log p over the target_pos tokens, the target `first` (an index into target_pos)
    predicted first, the others after it in the listed order; everything else is context."""
    ids, tp = d["input_ids"], d["target_pos"]  # (B, T), (B, P)
    (B, T), P = ids.shape, tp.size(1)
    order = [first] + [i for i in range(P) if i != first]
    rank = torch.zeros(B, T, dtype=torch.long, device=ids.device)
    for r, i in enumerate(order):
        rank.scatter_(1, tp[:, i:i + 1], torch.full((B, 1), r, device=ids.device))
    is_t = torch.zeros(B, T, dtype=torch.bool, device=ids.device).scatter(1, tp, True)
    out, _ = lm(ids, perm_mask=perm_mask_from_ranks(rank, is_t), target_pos=tp)
    return float(nll(out, ids.gather(1, tp), reduction="none").sum(1).mean())


def fill_in_nll(lm: nn.Module, d: Mapping[str, Tensor], identity: bool) -> float:
    """Mean NLL of each target_pos token predicted alone: from all other tokens, or (identity) from the tokens to
    its left."""
    ids, tp = d["input_ids"], d["target_pos"]
    (B, T), P = ids.shape, tp.size(1)
    rank = torch.arange(T, device=ids.device).expand(B, -1)
    total = 0.0
    for i in range(P):
        pos = tp[:, i:i + 1]
        is_t = torch.ones(B, T, dtype=torch.bool, device=ids.device) if identity else \
            torch.zeros(B, T, dtype=torch.bool, device=ids.device).scatter(1, pos, True)
        out, _ = lm(ids, perm_mask=perm_mask_from_ranks(rank, is_t), target_pos=pos)
        total += float(nll(out, ids.gather(1, pos)))
    return total / P


def joint_nll_mlm(lm: nn.Module, d: Mapping[str, Tensor]) -> float:
    """Both slot tokens masked, each predicted from the rest: the sum of the two NLLs (a mean over sequences)."""
    tp = d["target_pos"]
    loss, _ = mlm_loss(lm, {"input_ids": d["input_ids"].scatter(1, tp, MASK), "target_pos": tp,
                            "labels": d["input_ids"].gather(1, tp)})
    return float(loss) * tp.size(1)
