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

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from genfeat.data.planetoid import GraphData
from genfeat.errors import ConfigError
from genfeat.losses.graph_context import context_loss
from genfeat.models.planetoid.model import Planetoid
from genfeat.models.planetoid.sampler import ContextSampler, SamplerConfig
from genfeat.nn.sparse_linear import SparseRows
from genfeat.train.loop import TrainConfig
from genfeat.train.step import Step, Update


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
    max_steps: int | None = None  # the whole step budget (warm-up steps + rounds); None: warm-up + rounds
    eval_every: int = 50  # rounds
    patience: int = 0  # stop after this many evaluations without a better validation accuracy (0: never)

    def __post_init__(self) -> None:
        if self.t1 < 0 or self.t2 < 0 or self.t1 + self.t2 == 0:
            raise ConfigError(f"train.t1, train.t2 must be >= 0 and not both 0, got {self.t1}, {self.t2}")
        if self.n1 < 1 or self.n2 < 1 or self.eval_every < 1:
            raise ConfigError("train.n1, train.n2 and train.eval_every must be >= 1")
        if (self.warmup_steps is not None and self.warmup_steps < 0) or (self.rounds is not None and self.rounds < 1):
            raise ConfigError("train.warmup_steps must be >= 0 and train.rounds >= 1")
        if self.max_steps is not None and self.max_steps < 1:
            raise ConfigError("train.max_steps must be >= 1")


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


def context_nodes_for(data: GraphData, variant: str, unseen: str = "test") -> np.ndarray | None:
    """Planetoid-I never sees the test nodes in training (pitfall 9); with `unseen="valid+test"` the validation
    nodes are held out of the graph too, so that model selection is made on unseen nodes like the test's. T and G
    see every node."""
    if variant != "I":
        return None
    held = data.test_idx if unseen == "test" else np.union1d(data.test_idx, data.val_idx)
    return np.setdiff1d(np.arange(data.num_nodes), held)


def make_sampler(data: GraphData, cfg: SamplerConfig, variant: str, seed: int) -> ContextSampler:
    """Algorithm 2's sampler for the variant's context nodes (`context_nodes_for`)."""
    return ContextSampler(data.adj, data.labels, data.train_idx, cfg,
                          context_nodes=context_nodes_for(data, variant, cfg.unseen), seed=seed)


class Algorithm3(Step):
    """The updates of Algorithm 3 as `train.fit` steps: `warmup` steps of one context update each, then one step
    per round with its supervised and context updates (`AlternatingSchedule`). Plain SGD, one optimizer per loss:
    supervised (lr_sup, on the mean cross-entropy) and context (lr_ctx, on the sum over the N2 triples). The
    schedule's and the supervised batches' random stream (`gen`) is checkpointed with the method."""

    def __init__(self, model: Planetoid, cfg: PlanetoidTrainConfig, warmup: int, gen: torch.Generator,
                 x: SparseRows | None, context_only: bool = False):
        lr_ctx = cfg.lr_ctx if cfg.lr_ctx is not None else (0.01 if model.cfg.variant == "I" else 0.025)
        self.optimizers = {"supervised": torch.optim.SGD(model.supervised_parameters(), lr=cfg.lr_sup),
                           "context": torch.optim.SGD(model.context_parameters(), lr=lr_ctx)}
        self.warmup, self.gen, self.context_only = warmup, gen, context_only
        self.schedule = AlternatingSchedule(cfg.t1, cfg.t2, gen)
        self.x = x  # the node features, for the branches that read them
        self.sup = Update(self.supervised_loss, "supervised", data="labeled", name="sup_loss")
        self.ctx = (Update(self.context_loss, "context", data="triples", name="ctx_loss_sum"),)

    def updates(self, step: int) -> Sequence[Update]:
        if step < self.warmup or self.context_only:
            return self.ctx
        return [self.sup if kind == "sup" else self.ctx[0] for kind in self.schedule.round()]

    def supervised_loss(self, model: Planetoid, batch: tuple[torch.Tensor, torch.Tensor]):
        ids, y = batch
        return model.supervised_loss(ids, y, self.x), len(ids)

    def context_loss(self, model: Planetoid, batch: tuple[torch.Tensor, ...]):
        i, c, gamma, _ = batch
        loss = context_loss(model.context_embed(i, self.x), model.context(c), gamma, reduction="sum")
        return loss, 0, {"ctx_loss": loss.item() / len(i)}

    def state_dict(self) -> dict[str, Any]:
        return {"gen": self.gen.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.gen.set_state(state["gen"])


class LabeledBatches:
    """N1 labeled nodes per supervised update: all of them when N1 covers the labeled set, else a random subset
    drawn from the method's generator (its state is the method's)."""

    def __init__(self, train_idx: np.ndarray, labels: np.ndarray, n1: int, gen: torch.Generator):
        self.ids, self.y, self.n1, self.gen = torch.from_numpy(train_idx), torch.from_numpy(labels), n1, gen

    def __iter__(self):
        return self

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        ids = self.ids if self.n1 >= len(self.ids) else \
            self.ids[torch.randperm(len(self.ids), generator=self.gen)[:self.n1]]
        return ids, self.y[ids]


class Triples:
    """N2 context triples per context update from Algorithm 2's sampler; its generator is checkpointed."""

    def __init__(self, sampler: ContextSampler, n2: int):
        self.sampler, self.n2 = sampler, n2

    def __iter__(self):
        return self

    def __next__(self) -> tuple[torch.Tensor, ...]:
        return self.sampler.sample(self.n2)

    def state_dict(self) -> dict[str, Any]:
        return {"gen": self.sampler.gen.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.sampler.gen.set_state(state["gen"])


@dataclass
class PlanetoidMethod:
    """What `train.fit` (through `paradigms.fit_task`) needs to run Algorithm 3 on a graph: the Step, its two
    batch streams by name, and the loop's settings (evaluation every `eval_every` steps after the warm-up,
    selection on valid_acc, fp32, no clipping)."""

    step: Algorithm3
    batches: dict[str, Any]
    loop: TrainConfig
    warmup: int


def planetoid_method(model: Planetoid, data: GraphData, sampler: ContextSampler, cfg: PlanetoidTrainConfig,
                     seed: int = 0, context_only: bool = False) -> PlanetoidMethod:
    """Algorithm 3 for `model` on `data`; `context_only` trains only the context loss for warmup_steps + rounds * t2
    steps (GraphEmb's embeddings), checkpointed every eval_every steps."""
    gen = torch.Generator().manual_seed(seed)
    warmup, rounds = context_budget(cfg, data.num_nodes)
    x = SparseRows(data.features) if model.feat_branch is not None or model.cfg.variant == "I" else None
    step = Algorithm3(model, cfg, warmup, gen, x, context_only)
    batches = {"labeled": LabeledBatches(data.train_idx, data.labels, cfg.n1, gen),
               "triples": Triples(sampler, cfg.n2)}
    steps = warmup + (int(rounds * cfg.t2) if context_only else rounds)
    if cfg.max_steps is not None and cfg.max_steps <= warmup and not context_only:
        print(f"genfeat: warning: train.max_steps {cfg.max_steps:,} ends within the {warmup:,}-step context warm-up: "
              "no classifier step and no evaluation will run (give more steps, or a shorter train.warmup_steps)",
              file=sys.stderr)
    loop = TrainConfig(max_steps=steps if cfg.max_steps is None else cfg.max_steps, clip_norm=0.0, precision="fp32",
                       log_every=cfg.eval_every, eval_every=cfg.eval_every, eval_from=warmup,
                       ckpt_every=cfg.eval_every if context_only else 0, patience=cfg.patience)
    return PlanetoidMethod(step, batches, loop, warmup)


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
