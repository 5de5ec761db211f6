"""Next-item ranking as a task (thesis C §2.5; spec sequential-recommendation.md §5): a user's history is the
context, the next item the target, every item a candidate (full ranking, no sampled negatives).

    loss        the NLL of the next item under the model's distribution (`next_item_loss`): prefix examples
                (history, length, target) or windows (inputs, targets) scored at every position whose target
                is not 0
    metrics     Hit@K, NDCG@K, MRR@K, the NLL and the probability mass on the history items
                (`metrics.ranking`: pessimistic ties by default, history items stay candidates unless masked)
    primary     ndcg@{first K}

Citation and relation ranking (the next wave) rank other candidate sets with the same metrics.
"""

from __future__ import annotations

import torch

from genfeat.data.seqrec import Examples
from genfeat.metrics.ranking import history_mass, ranking_metrics_from_ranks, target_ranks
from genfeat.tasks.base import Task
from genfeat.train import distributed as D


def next_item_loss(model: torch.nn.Module, batch: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, int]:
    """Mean NLL of the batch's targets: prefix examples (history, length, target), or windows (inputs,
    targets) scored at every position whose target is not 0. Through the (maybe DDP-wrapped) model's forward;
    under torchrun each rank's sum is divided by the global count of targets times W (DDP averages the W
    gradients), which is one process's mean over the whole batch however the targets fall on the ranks."""
    device = next(model.parameters()).device
    batch = tuple(t.to(device) for t in batch)
    if len(batch) == 2:  # the head runs at the scored positions only (padded per row with unscored ones)
        inputs, targets = batch
        scored = targets > 0
        count = scored.sum(1, keepdim=True)
        pos = (~scored).to(torch.uint8).argsort(dim=1, stable=True)[:, : int(count.max())]  # scored ones first
        logp = model(inputs, positions=pos)  # the padding slots' targets gather as 0: ignored
        logp, target, n = logp.flatten(0, 1), targets.gather(1, pos).flatten(), int(count.sum())
    else:
        hist, length, target = batch
        logp, n = model(hist, length), target.numel()
    world = D.world_size()
    if world == 1:
        return torch.nn.functional.nll_loss(logp, target, ignore_index=0), n
    total = D.all_reduce_sum(torch.tensor(float(n), device=device))  # the loop counts W × the returned count
    return torch.nn.functional.nll_loss(logp, target, ignore_index=0, reduction="sum") * (world / total), \
        float(total) / world


@torch.no_grad()
def ranking_metrics(model: torch.nn.Module, ex: Examples, ks: tuple[int, ...] = (10,), mask_history: bool = False,
                    ties: str = "pessimistic", batch_size: int = 1024) -> dict[str, float]:
    """Full-ranking Hit/NDCG/MRR@K, NLL and mean history mass of the model's next-item distributions over `ex`
    (model(history, length) -> log-probabilities (B, n_items + 1)); the padding id 0 is never a candidate."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    sums: dict[str, float] = {}
    for a in range(0, len(ex), batch_size):
        hist, length, target = (torch.from_numpy(x[a: a + batch_size]).to(device)
                                for x in (ex.history, ex.length, ex.target))
        logp = model(hist, length)
        ranks = target_ranks(logp, target, (0,), hist, mask_history, ties)
        vals = ranking_metrics_from_ranks(ranks, ks)
        vals["loss"] = -logp.gather(1, target[:, None]).squeeze(1)
        vals["history_mass"] = history_mass(logp, hist)
        for k, v in vals.items():
            sums[k] = sums.get(k, 0.0) + float(v.sum())
    model.train(was_training)
    return {k: v / len(ex) for k, v in sums.items()}


class NextItemRanking(Task):
    """Rows: training examples or windows (`train_rows`, batches drawn by the recipe); splits valid / test."""

    unit = "targets"  # next_item_loss counts the scored positions

    def __init__(self, valid: Examples, test: Examples, ks: tuple[int, ...] = (10,), mask_history: bool = False,
                 ties: str = "pessimistic", batch_size: int = 1024):
        self.data = {"valid": valid, "test": test}
        self.splits = ("valid", "test")
        self.ks, self.mask_history, self.ties, self.batch_size = ks, mask_history, ties, batch_size
        self.metric = f"ndcg@{ks[0]}"

    def loss(self, model: torch.nn.Module, batch: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, float]:
        return next_item_loss(model, batch)

    def evaluate(self, model: torch.nn.Module, split: str) -> dict[str, float]:
        """Metrics summed batch by batch (the (N, n_items) scores of a split are never held at once)."""
        scores = ranking_metrics(D.unwrap(model), self.data[split], self.ks, self.mask_history, self.ties,
                                 self.batch_size)
        return {f"{split}_{k}": v for k, v in scores.items()}
