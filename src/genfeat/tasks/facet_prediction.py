"""Multi-facet embedding's self-supervised task (thesis C §3.2.1): a sequence's K facets should rebuild the
embeddings of the words around it. Training minimises the NNSC objective (`losses.nnsc.NNSCObjective`, Eq. 3.2:
the reconstruction error of the neighbours' words minus that of another sequence's, with its random stream
checkpointed); the validation split scores the same loss with the exact E-step and negatives drawn from a fixed
seed, so every evaluation of a run sees the same negatives.

    valid_loss     Er(positives) - neg_weight · Er(rotated negatives), per word, mean over the held-out batches
    valid_er_pos   Er(positives)      valid_er_neg   Er(negatives)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from genfeat.losses.nnsc import NNSCObjective
from genfeat.tasks.base import Task

METRICS = ("valid_loss", "valid_er_pos", "valid_er_neg")


class NeighbourWordFacets(Task):
    metric = "loss"
    mode = "min"
    unit = "targets"

    def __init__(self, objective: NNSCObjective, valid: Sequence[dict[str, Tensor]], check_seed: int = 12_345,
                 metric: str = "loss", mode: str = "min"):
        """`objective`: the training loss; `valid`: held-out batches (`data.facets.collate`); `metric` / `mode`:
        what weights are selected on (one of METRICS without its split, and min or max)."""
        if not valid:
            raise ValueError("NeighbourWordFacets needs at least one validation batch")
        if f"valid_{metric}" not in METRICS or mode not in ("min", "max"):
            raise ValueError(f"select on one of {', '.join(m.removeprefix('valid_') for m in METRICS)} (min or max), "
                             f"got {metric!r} ({mode})")
        self.objective, self.valid, self.check_seed = objective, list(valid), check_seed
        self.metric, self.mode = metric, mode
        self.splits = ("valid",)

    @property
    def loss(self) -> NNSCObjective:
        """The objective itself (a callable with `state_dict`: `train.fit` checkpoints its random stream)."""
        return self.objective

    @torch.no_grad()
    def evaluate(self, model: nn.Module, split: str) -> dict[str, float]:
        if split != "valid":
            raise KeyError(f"NeighbourWordFacets has no split {split!r}; it has valid")
        o = self.objective
        check = NNSCObjective(o.table, o.lam, o.method, o.iters, self.check_seed, o.neg_weight, o.exact_iters,
                              assign=o.assign)  # fixed negatives
        sums = dict.fromkeys(METRICS, 0.0)
        for b in self.valid:
            loss, _, parts = check(model, b, exact=True)
            sums["valid_loss"] += float(loss) / len(self.valid)
            sums["valid_er_pos"] += parts["er_pos"] / len(self.valid)
            sums["valid_er_neg"] += parts["er_neg"] / len(self.valid)
        return sums
