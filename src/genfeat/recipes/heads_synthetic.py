"""Recipe `heads_synthetic`: an output head's capacity for a multimodal next-word distribution on the planted
parallelogram (thesis C §2.2-2.4; spec multi-facet-softmax.md §11 S2). `data.parallelogram` plants frozen
output embeddings where a single softmax cannot put ½ : ½ on a diagonal pair (CE >= log 4) and a multi-facet,
mixture or partitioned head can (optimum log 2); a causal bag-of-words backbone (`models.bag`) gives each head
its hidden states, and the head trains on every context at once.

    data -> task    the 144 contexts (132 diagonal, 12 edge pairs) as `tasks.token_sets.NextTokenSet` rows
    network         BagBackbone -> the configured head, reading the frozen output embeddings
    paradigm        one phase (`paradigms.fit_task`): Adam at 3e-3, full batches, the last weights

Reported: train_ce_group (diagonal pairs), train_top_s_group (both candidates ranked first), train_ce_other (edge
pairs). `benchmarks/heads_synthetic.py` runs every head of the page.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from torch import nn

from genfeat.data import parallelogram as P
from genfeat.data.batches import EpochBatches
from genfeat.errors import ConfigError
from genfeat.heads.config import HeadConfig, build_head
from genfeat.models.bag import BagBackbone
from genfeat.models.lm import CausalLM
from genfeat.paradigms import fit_task
from genfeat.tasks.token_sets import NextTokenSet
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


@dataclass(frozen=True)
class HeadsSyntheticConfig:
    seed: int = 0  # the planted vocabulary's and the network's
    layout: str = "A"  # A: parallelogram words at ids 0..23; B: at 0, 4, ... (one partition of 4)
    width: int = 64  # the bag backbone's embedding width
    head: HeadConfig = field(default_factory=lambda: HeadConfig(facet_proj=True))
    train: TrainConfig = field(default_factory=lambda: TrainConfig(
        max_steps=3000, lr=3e-3, warmup_steps=0, schedule="constant", weight_decay=0.0, clip_norm=0.0,
        eval_every=0, log_every=100, precision="fp32"))

    def __post_init__(self) -> None:
        if self.layout not in ("A", "B"):
            raise ConfigError(f"layout must be A or B, got {self.layout!r}")


def s2() -> HeadsSyntheticConfig:
    """The spec's study: 3,000 Adam steps on all contexts."""
    return HeadsSyntheticConfig()


def tiny() -> HeadsSyntheticConfig:
    """60 steps (tests)."""
    return dataclasses.replace(s2(), train=dataclasses.replace(s2().train, max_steps=60, log_every=10))


PRESETS = {"s2": s2, "tiny": tiny}


def run(cfg: HeadsSyntheticConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    W, table = P.vocabulary(cfg.seed, cfg.layout)  # (V, D) frozen output embeddings
    task = NextTokenSet(P.contexts(table), group="diagonal")
    seed_everything(cfg.seed)
    frozen = nn.Embedding(P.V, P.D)
    frozen.weight.data.copy_(W)
    frozen.weight.requires_grad_(False)
    model = CausalLM(BagBackbone(P.V, P.D, cfg.width), build_head(cfg.head, P.D, P.V, frozen))
    info = D.setup(cfg.train.device)
    model.to(info.device)
    rows = len(task.train_rows["input_ids"])
    batches = EpochBatches(task.train_rows, rows, np.random.default_rng(cfg.seed), info.rank, info.world_size)
    res, scores = fit_task(D.wrap(model, info), task, batches, cfg.train, run_dir, resume_from=resume_from,
                           desc=f"heads_synthetic layout {cfg.layout}", select=False)
    return record_fit(run_dir, f"Output head on the planted parallelogram (layout {cfg.layout})", scores,
                      fit=res, started=t0, params=sum(p.numel() for p in model.parameters() if p.requires_grad),
                      last_weights=True,
                      details={"layout": cfg.layout, "contexts": rows},
                      notes=["The last weights; CE >= log 4 = 1.386 for a single softmax on the diagonal pairs, "
                             "the optimum log 2 = 0.693."])
