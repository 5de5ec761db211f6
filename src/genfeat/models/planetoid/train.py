"""Algorithm 3 of thesis Y §3.3.3: warm-up on the context loss, then alternate T1 supervised and T2
context steps (plain SGD, separate learning rates), model selection on the validation split.

Defaults (spec `planetoid.md` §3.3): N1 = N2 = 200, T1 = T2 = 1, supervised lr 0.1 on the mean
cross-entropy, context lr 0.025 (T, G) / 0.01 (I) on the *sum* over the N2 triples (pitfall 4),
2000 warm-up context steps. The thesis tunes r2, T1, T2 and the learning rates on an extra split.

Budget rule (`context_budget`): the context loss trains one embedding per node, so the number of sampled
triples must grow with the graph. Unset `warmup_steps` / `rounds` take the defaults above (2,000 and 3,000
steps of 200 triples, about 330 triples per node at 3,000 nodes: Cora, Citeseer and the kernel-docs graph) and
scale them by N / 3,000 on larger graphs (Pubmed 19.7k nodes: x6.6). A run whose budget samples fewer than
`MIN_TRIPLES_PER_NODE` triples per node warns. (Issue #21 reports the case: on a 57k-node graph the unscaled
budget, 17 triples per node, left GraphEmb and Planetoid-T's embedding branch at chance, and 10x the budget
brought Planetoid-T to 0.56 against label propagation's 0.57.)
"""

from __future__ import annotations

import copy
import math
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from genfeat.data.planetoid import GraphData
from genfeat.errors import ConfigError
from genfeat.losses.graph_context import context_loss
from genfeat.models.planetoid.model import Planetoid
from genfeat.models.planetoid.sampler import ContextSampler
from genfeat.nn.sparse_linear import SparseRows


@dataclass(frozen=True)
class PlanetoidTrainConfig:
    n1: int = 200  # supervised batch (the whole labeled set when smaller)
    n2: int = 200  # context triples per step
    t1: float = 1.0  # supervised steps per round; a fraction f adds one more step with probability f
    t2: float = 1.0  # context steps per round
    lr_sup: float = 0.1
    lr_ctx: float | None = None  # None: 0.025 for T and G, 0.01 for I
    warmup_steps: int | None = None  # None: 2000, scaled with the graph (`context_budget`)
    rounds: int | None = None  # None: 3000, scaled with the graph
    eval_every: int = 50  # rounds
    patience: int = 0  # stop after this many evaluations without a better validation accuracy (0: never)
    progress: bool = True

    def __post_init__(self) -> None:
        if self.t1 < 0 or self.t2 < 0 or self.t1 + self.t2 == 0:
            raise ConfigError(f"train.t1, train.t2 must be >= 0 and not both 0, got {self.t1}, {self.t2}")
        if self.n1 < 1 or self.n2 < 1 or self.eval_every < 1:
            raise ConfigError("train.n1, train.n2 and train.eval_every must be >= 1")
        if (self.warmup_steps is not None and self.warmup_steps < 0) or (self.rounds is not None and self.rounds < 1):
            raise ConfigError("train.warmup_steps must be >= 0 and train.rounds >= 1")


BASE_WARMUP, BASE_ROUNDS, BASE_NODES = 2000, 3000, 3000
MIN_TRIPLES_PER_NODE = 100


def context_budget(cfg: PlanetoidTrainConfig, num_nodes: int) -> tuple[int, int]:
    """(warm-up steps, rounds): the configured ones, or the defaults scaled by max(1, N / 3000)."""
    scale = max(1.0, num_nodes / BASE_NODES)
    warmup = cfg.warmup_steps if cfg.warmup_steps is not None else math.ceil(BASE_WARMUP * scale)
    rounds = cfg.rounds if cfg.rounds is not None else math.ceil(BASE_ROUNDS * scale)
    per_node = (warmup + rounds * cfg.t2) * cfg.n2 / max(1, num_nodes)
    if 0 < per_node < MIN_TRIPLES_PER_NODE:
        print(f"genfeat: warning: the context budget samples {per_node:.0f} triples per node (< "
              f"{MIN_TRIPLES_PER_NODE}); node embeddings may stay untrained. Leave train.warmup_steps / train.rounds "
              f"unset to scale them with the graph, or raise them.", file=sys.stderr)
    return warmup, rounds


class AlternatingSchedule:
    """One round = floor(t1) (+1 with probability frac(t1)) supervised steps, then the same for t2
    context steps, as Algorithm 3 (and the code's fractional iteration counts)."""

    def __init__(self, t1: float, t2: float, generator: torch.Generator) -> None:
        self.t1, self.t2, self.gen = t1, t2, generator

    def _count(self, t: float) -> int:
        whole = math.floor(t)
        return whole + int(torch.rand((), generator=self.gen).item() < t - whole)

    def round(self) -> list[str]:
        return ["sup"] * self._count(self.t1) + ["ctx"] * self._count(self.t2)


def accuracy(pred: torch.Tensor, labels: np.ndarray, idx: np.ndarray) -> float:
    return float((pred[torch.from_numpy(idx)].numpy() == labels[idx]).mean()) if len(idx) else float("nan")


def context_nodes_for(data: GraphData, variant: str) -> np.ndarray | None:
    """Planetoid-I never sees the test nodes in training (pitfall 9); T and G see every node."""
    if variant != "I":
        return None
    return np.setdiff1d(np.arange(data.num_nodes), data.test_idx)


def fit_planetoid(model: Planetoid, data: GraphData, sampler: ContextSampler, cfg: PlanetoidTrainConfig,
                  seed: int = 0, log: Any = None, context_only: bool = False) -> dict[str, Any]:
    """Train `model` on `data` by Algorithm 3; returns accuracies of the best-validation state.

    `context_only` trains only the context loss for warmup_steps + rounds * t2 steps (GraphEmb).
    `log(record)` receives each evaluation record."""
    gen = torch.Generator().manual_seed(seed)
    warmup_steps, rounds = context_budget(cfg, data.num_nodes)
    x = SparseRows(data.features) if model.feat_branch is not None or model.cfg.variant == "I" else None
    lr_ctx = cfg.lr_ctx if cfg.lr_ctx is not None else (0.01 if model.cfg.variant == "I" else 0.025)
    opt_sup = torch.optim.SGD(model.supervised_parameters(), lr=cfg.lr_sup)
    opt_ctx = torch.optim.SGD(model.context_parameters(), lr=lr_ctx)
    train = torch.from_numpy(data.train_idx)
    y_all = torch.from_numpy(data.labels)
    all_ids = torch.arange(data.num_nodes)

    def sup_step() -> float:
        ids = train if cfg.n1 >= len(train) else train[torch.randperm(len(train), generator=gen)[:cfg.n1]]
        opt_sup.zero_grad(set_to_none=True)
        loss = model.supervised_loss(ids, y_all[ids], x)
        loss.backward()
        opt_sup.step()
        return loss.item()

    def ctx_step() -> float:
        i, c, gamma, _ = sampler.sample(cfg.n2)
        opt_ctx.zero_grad(set_to_none=True)
        loss = context_loss(model.context_embed(i, x), model.context(c), gamma, reduction="sum")
        loss.backward()
        opt_ctx.step()
        return loss.item() / cfg.n2

    t0 = time.perf_counter()
    history: list[dict[str, Any]] = []
    model.train()
    for _ in tqdm(range(warmup_steps), desc="warm-up (context loss)", disable=not cfg.progress, leave=False):
        ctx_step()
    if context_only:
        for _ in tqdm(range(int(rounds * cfg.t2)), desc="context", disable=not cfg.progress, leave=False):
            ctx_step()
        return {"train_seconds": time.perf_counter() - t0, "history": history}
    schedule = AlternatingSchedule(cfg.t1, cfg.t2, gen)
    best: dict[str, Any] = {"val_acc": -1.0}
    best_state, stale = None, 0
    sup_loss = ctx_loss = float("nan")
    bar = tqdm(range(1, rounds + 1), desc="Planetoid", disable=not cfg.progress, leave=False)
    for r in bar:
        for kind in schedule.round():
            if kind == "sup":
                sup_loss = sup_step()
            else:
                ctx_loss = ctx_step()
        if r % cfg.eval_every == 0 or r == rounds:
            model.eval()
            pred = model.predict(all_ids, x)
            model.train()
            rec = {"round": r, "sup_loss": sup_loss, "ctx_loss": ctx_loss,
                   "train_acc": accuracy(pred, data.labels, data.train_idx),
                   "val_acc": accuracy(pred, data.labels, data.val_idx),
                   "test_acc": accuracy(pred, data.labels, data.test_idx)}
            history.append(rec)
            if log is not None:
                log(rec)
            bar.set_postfix(sup=f"{sup_loss:.3f}", ctx=f"{ctx_loss:.3f}", val=f"{rec['val_acc']:.3f}")
            if rec["val_acc"] > best["val_acc"] or math.isnan(rec["val_acc"]):  # no val split: keep the last
                best, best_state, stale = rec, copy.deepcopy(model.state_dict()), 0
            else:
                stale += 1
                if cfg.patience and stale >= cfg.patience:
                    break
    if best_state is not None:
        model.load_state_dict(best_state)
    return {"best_round": best["round"], "train_acc": best["train_acc"], "val_acc": best["val_acc"],
            "test_acc": best["test_acc"], "branch_test_acc": branch_accuracy(model, data, x),
            "train_seconds": time.perf_counter() - t0, "history": history}


@torch.no_grad()
def branch_accuracy(model: Planetoid, data: GraphData, x: SparseRows | None) -> dict[str, float]:
    """Test accuracy of each branch alone (argmax of its own class layer; softmax branches only), a
    diagnostic of which source of information carries the prediction."""
    if model.cfg.branch_activation != "softmax":
        return {}
    model.eval()
    ids = torch.from_numpy(data.test_idx)
    _, z = model(ids, x)
    names = ["features h^k(x)", "embedding h^l(e)"] if len(z) == 2 else ["embedding h^l(e)"]
    y = data.labels[data.test_idx]
    return {n: float((t.argmax(-1).numpy() == y).mean()) for n, t in zip(names, z, strict=True)}
