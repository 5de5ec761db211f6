"""Ranking as a task: for each query of a split, score every candidate and compare the order with the relevant
ones (`Ranking`; several relevant candidates per query: citation, co-citation and relation ranking, with the
metrics of `metrics.multi_positive`). Next-item ranking is one instance (`NextItemRanking`).

    Ranking             splits of queries, each with its relevant candidate ids and the ids that are not
                        candidates for it (the query itself, edges seen in training); a `scorer(model, split, queries)`
                        returns the (b, n) candidate scores of a batch of query indices. Metrics: AP, NDCG, MRR, AUC
                        and NDCG / R / Rcap / MRR @k, each averaged over the queries with a relevant candidate.
                        Primary: `metric` ("ap" unless set).

Next-item ranking (thesis C §2.5; spec sequential-recommendation.md §5): a user's history is the
context, the next item the one relevant candidate, every item a candidate (full ranking, no sampled negatives).

    loss        the NLL of the next item under the model's distribution (`next_item_loss`): prefix examples
                (history, length, target) or windows (inputs, targets) scored at every position whose target
                is not 0
    metrics     Hit@K, NDCG@K, MRR@K, the NLL and the probability mass on the history items
                (`metrics.ranking`: pessimistic ties by default, history items stay candidates unless masked)
    primary     ndcg@{first K}

"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from genfeat.data.seqrec import Examples
from genfeat.metrics.multi_positive import multi_positive_metrics
from genfeat.metrics.ranking import history_mass, ranking_metrics_from_ranks, target_ranks
from genfeat.tasks.base import Task
from genfeat.train import distributed as D


class RankingTask(Task):
    """A split's queries are scored in batches (`query_metrics`: per-query metrics (b,) of each batch); `evaluate`
    averages each metric over the queries where it is defined (not NaN), unweighted."""

    unit = "queries"
    mode = "max"

    def query_metrics(self, model: nn.Module, split: str) -> Iterator[dict[str, Tensor]]:
        raise NotImplementedError

    @torch.no_grad()
    def evaluate(self, model: nn.Module, split: str) -> dict[str, float]:
        if split not in self.splits:
            raise KeyError(f"{type(self).__name__} has no split {split!r}; it has {', '.join(self.splits)}")
        net = D.unwrap(model)
        was = net.training
        net.eval()
        try:
            return average_query_metrics(self.query_metrics(net, split), split)
        finally:
            net.train(was)


class QueryMetricSums:
    """Running sums of per-query metric batches: `means(split)` = {f"{split}_{metric}": the mean over the queries
    where the metric is defined (not NaN)}."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def add(self, batch: dict[str, Tensor]) -> None:
        for k, v in batch.items():
            ok = ~torch.isnan(v)
            self.sums[k] = self.sums.get(k, 0.0) + float(v[ok].sum())
            self.counts[k] = self.counts.get(k, 0) + int(ok.sum())

    def means(self, split: str) -> dict[str, float]:
        return {f"{split}_{k}": (v / self.counts[k] if self.counts[k] else math.nan) for k, v in self.sums.items()}


def average_query_metrics(batches: Iterable[dict[str, Tensor]], split: str) -> dict[str, float]:
    """`QueryMetricSums` of per-query metric batches."""
    acc = QueryMetricSums()
    for batch in batches:
        acc.add(batch)
    return acc.means(split)


@dataclass
class RankingSplit:
    """Queries 0..Q-1 of one split: each query's relevant candidate ids and (optionally) the ids that are not
    candidates for it, or the only ids that are (`candidates`: a sampled list, SciDocs' 5 positives + 500
    negatives)."""

    relevant: Sequence[np.ndarray]
    excluded: Sequence[np.ndarray] | None = None
    candidates: Sequence[np.ndarray] | None = None

    def __post_init__(self) -> None:
        if self.excluded is not None and len(self.excluded) != len(self.relevant):
            raise ValueError(f"{len(self.relevant)} queries but {len(self.excluded)} exclusion lists")
        if self.candidates is not None and len(self.candidates) != len(self.relevant):
            raise ValueError(f"{len(self.relevant)} queries but {len(self.candidates)} candidate lists")
        if self.candidates is not None and self.excluded is not None:
            raise ValueError("give a split's excluded ids or its candidate ids, not both")

    def __len__(self) -> int:
        return len(self.relevant)


def _mask(ids: Sequence[np.ndarray], n: int) -> Tensor:
    """(len(ids), n) bool: row r True at ids[r]."""
    lengths = [len(i) for i in ids]
    rows = torch.from_numpy(np.repeat(np.arange(len(ids)), lengths))
    cols = torch.from_numpy(np.concatenate([np.asarray(i, dtype=np.int64) for i in ids])) if ids else rows
    out = torch.zeros(len(ids), n, dtype=torch.bool)
    out[rows, cols] = True
    return out


Scorer = Callable[[nn.Module, str, Tensor], Tensor]  # model, split, query indices (b,) -> candidate scores (b, n)


class Ranking(RankingTask):
    """Several relevant candidates per query over the full candidate list (module docstring). A relevant id that
    is also excluded stays a candidate (an exclusion list need not know the answers)."""

    def __init__(self, splits: Mapping[str, RankingSplit], n_candidates: int, scorer: Scorer,
                 ks: tuple[int, ...] = (10,), ties: str = "pessimistic", metric: str = "ap", batch_size: int = 256,
                 loss: Callable[[nn.Module, object], tuple[Tensor, float]] | None = None):
        self.data, self.splits = dict(splits), tuple(splits)
        self.n, self.scorer, self.ks, self.ties, self.batch_size = n_candidates, scorer, ks, ties, batch_size
        self.metric, self._loss = metric, loss
        for name, sp in self.data.items():
            for ids in [*sp.relevant, *(sp.excluded or ()), *(sp.candidates or ())]:
                if len(ids) and (int(np.min(ids)) < 0 or int(np.max(ids)) >= n_candidates):
                    raise ValueError(f"split {name!r}: candidate ids must be in [0, {n_candidates})")

    def loss(self, model: nn.Module, batch: object) -> tuple[Tensor, float]:
        if self._loss is None:
            raise NotImplementedError("this Ranking task is evaluation-only (no loss given)")
        return self._loss(model, batch)

    def query_metrics(self, model: nn.Module, split: str) -> Iterator[dict[str, Tensor]]:
        sp = self.data[split]
        for a in range(0, len(sp), self.batch_size):
            q = torch.arange(a, min(a + self.batch_size, len(sp)))
            scores = self.scorer(model, split, q).float().cpu()  # (b, n)
            if scores.shape != (len(q), self.n):
                raise ValueError(f"the scorer returned {tuple(scores.shape)} scores for {len(q)} queries and "
                                 f"{self.n} candidates")
            relevant = _mask(sp.relevant[a: a + len(q)], self.n)
            candidates = (~_mask(sp.excluded[a: a + len(q)], self.n) if sp.excluded is not None
                          else _mask(sp.candidates[a: a + len(q)], self.n) if sp.candidates is not None else None)
            yield multi_positive_metrics(scores, relevant, None if candidates is None else candidates | relevant,
                                         self.ks, self.ties)


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
    task = NextItemRanking(ex, ex, ks, mask_history, ties, batch_size)
    return {k.removeprefix("valid_"): v for k, v in task.evaluate(model, "valid").items()}


class NextItemRanking(RankingTask):
    """Rows: training examples or windows (`train_rows`, batches drawn by the recipe); splits valid / test. The
    one relevant candidate is the next item; the rank is `metrics.ranking.target_ranks`' (history items stay
    candidates unless `mask_history`); extra metrics: the target's NLL (`loss`) and the history mass."""

    unit = "targets"  # next_item_loss counts the scored positions

    def __init__(self, valid: Examples, test: Examples, ks: tuple[int, ...] = (10,), mask_history: bool = False,
                 ties: str = "pessimistic", batch_size: int = 1024):
        self.data = {"valid": valid, "test": test}
        self.splits = ("valid", "test")
        self.ks, self.mask_history, self.ties, self.batch_size = ks, mask_history, ties, batch_size
        self.metric = f"ndcg@{ks[0]}"

    def loss(self, model: torch.nn.Module, batch: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, float]:
        return next_item_loss(model, batch)

    def query_metrics(self, model: nn.Module, split: str) -> Iterator[dict[str, Tensor]]:
        """Batches of examples: the (B, n_items) scores of a split are never held at once."""
        ex = self.data[split]
        device = next(model.parameters()).device
        for a in range(0, len(ex), self.batch_size):
            hist, length, target = (torch.from_numpy(x[a: a + self.batch_size]).to(device)
                                    for x in (ex.history, ex.length, ex.target))
            logp = model(hist, length)  # (B, n_items + 1)
            ranks = target_ranks(logp, target, (0,), hist, self.mask_history, self.ties)  # (B,)
            yield ranking_metrics_from_ranks(ranks, self.ks) | {
                "loss": -logp.gather(1, target[:, None]).squeeze(1), "history_mass": history_mass(logp, hist)}
