"""Graph-based semi-supervised node classification: Planetoid-T/I/G (thesis Y §3.3) and baselines.

    genfeat run planetoid --preset linuxdoc                       # Planetoid-T on the kernel-docs graph
    genfeat run planetoid --preset linuxdoc --method planetoid_i  # inductive
    genfeat run planetoid --preset linuxdoc --method gcn          # or feat_lr, feat_mlp, lp, graphemb, manireg_t,
                                                                  #   manireg_i, semiemb_t, semiemb_i, tsvm_t, tsvm_i

Framework (specs/framework.md §4.5): `Warmup(L_u)` then `AlternatingJoint(T1, T2)`, with
L_u the context loss (Eq. 3.12) and L_s the label cross-entropy (Eqs. 3.13/3.14).

Data (`data.name`, `genfeat.data.graphs`): linuxdoc (the kernel-docs graph, `genfeat data fetch linux-doc` first),
cora | citeseer | pubmed (the Planetoid files, downloaded on first use), sbm_a | sbm_b (the spec's synthetic
graphs, `data.seed`), sbm (the same model with `data.sbm`'s parameters), or `ind.<name>.*` files in `data.root`.

Network and paradigm (`paradigms.planetoid.run_method`): Planetoid's Algorithm 3 (`models.planetoid.
planetoid_method`) or a baseline's full-graph network and Step (`models.planetoid.baselines.baseline_method`), each
one `fit_task` phase on `tasks.node_classification`; GraphEmb's embeddings are an earlier phase
(`paradigms.fit_phase`); LP and the TSVM stand-in are solves, scored by the same task.

Presets: tiny (seconds, tests), linuxdoc, linuxdoc_i, cora (T, the thesis's best there),
citeseer and pubmed (I), sbm_a, sbm_b.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genfeat.data.graphs import GraphDataConfig, load_graph
from genfeat.errors import ConfigError
from genfeat.models.planetoid import PlanetoidConfig, PlanetoidTrainConfig, SamplerConfig
from genfeat.models.planetoid import baselines as B
from genfeat.paradigms.planetoid import METHODS, run_method
from genfeat.train import distributed as D
from genfeat.train.record import write_record


@dataclass(frozen=True)
class PlanetoidRunConfig:
    seed: int = 0
    method: str = "planetoid_t"
    data: GraphDataConfig = field(default_factory=GraphDataConfig)
    model: PlanetoidConfig = field(default_factory=PlanetoidConfig)
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    train: PlanetoidTrainConfig = field(default_factory=PlanetoidTrainConfig)
    baseline: B.BaselineConfig = field(default_factory=B.BaselineConfig)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")


# ----------------------------------------------------------------------------------------- presets
def tiny() -> PlanetoidRunConfig:
    """Seconds: the 1,000-node synthetic graph-rich graph B, short schedules."""
    return PlanetoidRunConfig(
        data=GraphDataConfig(name="sbm_b"),
        train=PlanetoidTrainConfig(warmup_steps=1000, rounds=500, eval_every=50),
        baseline=B.BaselineConfig(lr_steps=50, epochs=20, eval_every=5),
    )


def linuxdoc() -> PlanetoidRunConfig:
    """Planetoid-T on the kernel-docs graph (2,149 nodes, 17 classes), library defaults (spec §3.3)."""
    return PlanetoidRunConfig(data=GraphDataConfig(name="linuxdoc"))


def linuxdoc_i() -> PlanetoidRunConfig:
    """Planetoid-I (inductive: test nodes unseen in training) on the kernel-docs graph."""
    return dataclasses.replace(linuxdoc(), method="planetoid_i")


def cora() -> PlanetoidRunConfig:
    """Cora, Planetoid-T (thesis Table 3.6: 0.757)."""
    return PlanetoidRunConfig(data=GraphDataConfig(name="cora"))


def citeseer() -> PlanetoidRunConfig:
    """Citeseer, Planetoid-I (thesis Table 3.6: 0.647)."""
    return PlanetoidRunConfig(method="planetoid_i", data=GraphDataConfig(name="citeseer"))


def pubmed() -> PlanetoidRunConfig:
    """Pubmed, Planetoid-I (thesis Table 3.6: 0.772)."""
    return PlanetoidRunConfig(method="planetoid_i", data=GraphDataConfig(name="pubmed"))


def sbm_a() -> PlanetoidRunConfig:
    """Synthetic feature-rich graph (spec §5.1 config A)."""
    return PlanetoidRunConfig(data=GraphDataConfig(name="sbm_a"))


def sbm_b() -> PlanetoidRunConfig:
    """Synthetic graph-rich graph (spec §5.1 config B)."""
    return PlanetoidRunConfig(data=GraphDataConfig(name="sbm_b"))


PRESETS = {"tiny": tiny, "linuxdoc": linuxdoc, "linuxdoc_i": linuxdoc_i, "cora": cora, "citeseer": citeseer,
           "pubmed": pubmed, "sbm_a": sbm_a, "sbm_b": sbm_b}


def run(cfg: PlanetoidRunConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    if D.launched_ranks() > 1:
        raise ConfigError(f"planetoid trains in one process (Algorithm 2 draws one batch at a time; a graph of "
                          f"this size trains in seconds on a CPU), but torchrun launched {D.launched_ranks()} "
                          "ranks: run it without torchrun")
    data = load_graph(cfg.data)
    print(data.summary())
    out = run_method(cfg, data, run_dir, resume_from)
    metrics = {k: out.pop(k) for k in ("train_acc", "valid_acc", "test_acc")}
    fixed = {k: out.pop(k) for k in ("params", "steps", "best_step")}
    train_s = out.pop("train_seconds")
    out.pop("history", None)
    summary = write_record(run_dir, f"{cfg.method} on {cfg.data.name}", metrics, **fixed,
                           wall_s=time.perf_counter() - t0, train_s=train_s,
                           details={"method": cfg.method, "dataset": data.summary(), **out},
                           notes=["Accuracies of the validation-selected state (label propagation: the solve)."])
    print(f"{cfg.method}: valid acc {summary['valid_acc']:.4f}, test acc {summary['test_acc']:.4f} "
          f"({train_s:.1f} s) -> {run_dir}")
    return summary
