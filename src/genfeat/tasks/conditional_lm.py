"""Conditional language modelling with leaked future words (thesis C §4.2.2.2, Figure 4.4a; spec
interactive-generation.md §4.3 and §9 test 8): the conditional generator learns to use inserted hints because
the hints are words that really follow.

For each training sequence x_0 .. x_L (the reference's layout):
    points      `n_points` (5) insertion locations, distinct, sorted, drawn from [0, L - min_rest)  (min_rest 20)
    hints       at each point p an independent n ~ U{0 .. max_n} (10) words drawn with replacement from the
                O (25) non-stop words after x_p (`data.future_words`), as unit word vectors, inserted before x_p
    loss        the next-token NLL of every real token (`lm(x[:, :-1], targets=x[:, 1:], inserts=...)`: the
                inserted slots have null labels, `models.gpt.insertion`)

Rows: input_ids (N, L + 1), future (N, L, O) table rows (-1 padded) and row_id (N,) (what a row's hints are
drawn from). Evaluation: the validation NLL with hints
drawn from a fixed seed (`loss`, the primary metric: what the reference selects on) and without any
(`plain_loss`, the unconditioned LM the same weights are).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.losses import nll
from genfeat.metrics import perplexity
from genfeat.models.gpt.insertion import Insertions
from genfeat.tasks.base import Task


@dataclass(frozen=True)
class HintConfig:
    """HintSampler's settings as a run config section (`hints.*`): insertion points per sequence, the most words
    inserted at one, the fewest tokens left after the last."""

    n_points: int = 5
    max_n: int = 10
    min_rest: int = 20


class HintSampler:
    """Draws the training insertions of a batch (module docstring). Each row's draw is a function of the seed, the
    row's id and the call count alone, so a batch split over ranks draws what one process draws; the call count
    is the checkpointed state."""

    def __init__(self, table: Tensor, seed: int, n_points: int = 5, max_n: int = 10, min_rest: int = 20):
        if n_points < 1 or max_n < 0 or min_rest < 0:
            raise ValueError("n_points must be >= 1, max_n and min_rest >= 0")
        self.table = F.normalize(table.float(), dim=1)  # (V_t, E) unit rows
        self.n_points, self.max_n, self.min_rest = n_points, max_n, min_rest
        self.seed, self.calls = seed, 0

    def _row(self, future: Tensor, row_id: int) -> list[tuple[int, int]]:
        L = future.size(0)
        span = L - self.min_rest
        gen = torch.Generator().manual_seed(hash((self.seed, self.calls, row_id)) & (2**62 - 1))
        points = torch.randperm(span, generator=gen)[: min(self.n_points, span)].sort().values.tolist()
        picks = []
        for p in points:
            n = int(torch.randint(0, self.max_n + 1, (1,), generator=gen))
            pool = future[p][future[p] >= 0]
            if n and len(pool):
                picks += [(p, int(w)) for w in pool[torch.randint(0, len(pool), (n,), generator=gen)]]
        return picks

    def __call__(self, future: Tensor, row_ids: Tensor) -> Insertions:
        """future (B, L, O), row_ids (B,) -> insertions (B, N, E) with their locations in [0, L - min_rest)."""
        B, L, _ = future.shape
        if L - self.min_rest < 1:
            raise ValueError(f"sequences of {L} tokens leave no insertion point with min_rest={self.min_rest}")
        rows = [self._row(future[b], int(row_ids[b])) for b in range(B)]
        self.calls += 1
        N = max(len(r) for r in rows)
        loc = torch.full((B, N), -1, dtype=torch.long)
        idx = torch.zeros((B, N), dtype=torch.long)
        for b, picks in enumerate(rows):
            if picks:
                loc[b, : len(picks)] = torch.tensor([p for p, _ in picks])
                idx[b, : len(picks)] = torch.tensor([w for _, w in picks])
        vectors = self.table[idx] * (loc >= 0)[..., None]  # (B, N, E); unused slots zero
        return Insertions(vectors, loc)

    def state_dict(self) -> dict[str, Any]:
        return {"calls": self.calls}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.calls = int(state["calls"])


class HintedLMLoss:
    """`train.fit`'s loss: the mean NLL of a batch with hints from `sampler` (its stream checkpointed)."""

    def __init__(self, sampler: HintSampler):
        self.sampler = sampler

    def __call__(self, model: nn.Module, batch: Mapping[str, Tensor]) -> tuple[Tensor, int]:
        device = next(model.parameters()).device
        ids = batch["input_ids"].to(device)  # (B, L + 1)
        ins = self.sampler(batch["future"], batch["row_id"])
        ins = Insertions(ins.vectors.to(device), ins.locations.to(device))
        out, _ = model(ids[:, :-1], targets=ids[:, 1:], inserts=ins)
        return nll(out, ids[:, 1:]), ids[:, 1:].numel()

    def state_dict(self) -> dict[str, Any]:
        return self.sampler.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.sampler.load_state_dict(state)


class HintedLanguageModeling(Task):
    metric = "loss"
    mode = "min"
    unit = "tokens"

    def __init__(self, splits: Mapping[str, Mapping[str, Tensor]], table: Tensor, seed: int,
                 check_seed: int = 12_345, batch_size: int = 32, **sampler: int):
        """splits: {"train": rows, "valid": rows, ...} (module docstring); `sampler`: HintSampler's settings."""
        self.rows = dict(splits)
        self.train_rows = self.rows.get("train")
        self.splits = tuple(s for s in self.rows if s != "train")
        self.table, self.check_seed, self.batch_size, self.sampler_cfg = table, check_seed, batch_size, sampler
        self.objective = HintedLMLoss(HintSampler(table, seed, **sampler))

    @property
    def loss(self) -> HintedLMLoss:
        return self.objective

    @torch.no_grad()
    def predict(self, model: nn.Module, split: str) -> dict[str, float]:
        was = model.training
        model.eval()
        check = HintedLMLoss(HintSampler(self.table, self.check_seed, **self.sampler_cfg))  # the same hints each time
        rows = self.rows[split]
        total, plain, count = 0.0, 0.0, 0
        device = next(model.parameters()).device
        for a in range(0, len(rows["input_ids"]), self.batch_size):
            batch = {k: v[a: a + self.batch_size] for k, v in rows.items()}
            loss, n = check(model, batch)
            ids = batch["input_ids"].to(device)
            out, _ = model(ids[:, :-1], targets=ids[:, 1:])
            total, plain, count = total + float(loss) * n, plain + float(nll(out, ids[:, 1:])) * n, count + n
        model.train(was)
        return {"nll": total, "plain_nll": plain, "count": count}

    def score(self, pred: dict[str, float], split: str) -> dict[str, float]:
        n = pred["count"]
        return {"loss": pred["nll"] / n, "ppl": perplexity(pred["nll"], n), "plain_loss": pred["plain_nll"] / n,
                "plain_ppl": perplexity(pred["plain_nll"], n)}
