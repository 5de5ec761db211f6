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

Network and paradigm: Planetoid's Algorithm 3 (`models.planetoid.planetoid_method`) or a baseline's full-graph
network and Step (`models.planetoid.baselines.baseline_method`), each one `fit_task` phase on
`tasks.node_classification`; GraphEmb's embeddings are an earlier phase (`paradigms.fit_phase`); LP and the TSVM
stand-in are solves, scored by the same task.

Presets: tiny (seconds, tests), linuxdoc, linuxdoc_i, cora (T, the thesis's best there),
citeseer and pubmed (I), sbm_a, sbm_b.
"""

from __future__ import annotations

import dataclasses
import itertools
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from genfeat.data.graphs import GraphDataConfig, load_graph
from genfeat.data.planetoid import GraphData
from genfeat.errors import ConfigError
from genfeat.models.planetoid import (
    ContextSampler,
    Planetoid,
    PlanetoidConfig,
    PlanetoidTrainConfig,
    SamplerConfig,
    planetoid_method,
)
from genfeat.models.planetoid import baselines as B
from genfeat.models.planetoid.train import branch_accuracy, make_sampler
from genfeat.paradigms import fit_phase, fit_task, phase_record
from genfeat.tasks.node_classification import NodeClassification
from genfeat.train import distributed as D
from genfeat.train.record import write_record
from genfeat.train.seed import seed_everything

METHODS = ("planetoid_t", "planetoid_i", "planetoid_g", "graphemb", "feat_lr", "feat_mlp", "lp", "gcn", "manireg_t",
           "manireg_i", "semiemb_t", "semiemb_i", "tsvm_t", "tsvm_i")


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


# --------------------------------------------------------------------------------------------- run
def train_planetoid(model: Planetoid, data: GraphData, sampler: ContextSampler, train: PlanetoidTrainConfig,
                    run_dir: str | Path, seed: int = 0, resume_from: str | Path | None = None) -> dict[str, Any]:
    """Algorithm 3 (`models.planetoid.planetoid_method`) as one `fit_task` phase on the graph's node
    classification: selection on valid_acc, the best-validation weights loaded back; returns their accuracies,
    the best round, each branch's test accuracy and the evaluations (`history`)."""
    method = planetoid_method(model, data, sampler, train, seed)
    all_ids = torch.arange(data.num_nodes)
    task = NodeClassification(data.labels, data.split_idx, predictor=lambda m: m.predict(all_ids, method.step.x))
    res, scores = fit_task(model, task, method.batches, method.loop, run_dir, method=method.step,
                           resume_from=resume_from, desc="Planetoid")
    return {**scores, "best_round": res.best_step - method.warmup, "best_step": res.best_step,
            "branch_test_acc": branch_accuracy(model, data, method.step.x), "history": res.evals,
            "params": sum(p.numel() for p in model.parameters()), "steps": res.step, "train_seconds": res.wall_time}


def train_baseline(method: B.BaselineMethod, task: NodeClassification, run_dir: str | Path,
                   resume_from: str | Path | None = None) -> dict[str, Any]:
    """A full-graph baseline (`baselines.baseline_method`) as one `fit_task` phase: every labeled node in each
    step, the best-validation weights kept."""
    res, scores = fit_task(method.net, task, itertools.repeat(None), method.loop, run_dir, method=method.step,
                           resume_from=resume_from, desc="full batch")
    return {**scores, "best_step": res.best_step, "steps": res.step, "train_seconds": res.wall_time,
            "params": sum(p.numel() for p in method.net.parameters())}


def train_graphemb(cfg: PlanetoidRunConfig, data: GraphData, task: NodeClassification, run_dir: Path,
                   resume_from: str | Path | None = None) -> dict[str, Any]:
    """GraphEmb in two phases: the context-only embeddings (Planetoid-G's sampler with r2 = 1, Algorithm 3's
    context updates) as the earlier phase `embeddings`, then logistic regression on the frozen embeddings."""
    model = Planetoid(dataclasses.replace(cfg.model, variant="G"), data.num_nodes, 0, data.num_classes)
    sampler = make_sampler(data, dataclasses.replace(cfg.sampler, r2=1.0), "G", cfg.seed)
    method = planetoid_method(model, data, sampler, cfg.train, cfg.seed, context_only=True)
    fit_phase("embeddings", model, task, method.batches, method.loop, run_dir, method=method.step,
              desc="Planetoid (context only)", select=False, final_splits=())
    phase = phase_record(run_dir, "embeddings")
    classifier = B.baseline_method("feat_lr", data, cfg.baseline, task.labeled_loss, cfg.seed,
                                   inputs=model.embedding.weight.detach())
    out = train_baseline(classifier, task, run_dir, resume_from)
    return out | {"train_seconds": out["train_seconds"] + phase["train_seconds"],
                  "steps": out["steps"] + phase["steps"],
                  "params": out["params"] + sum(p.numel() for p in model.parameters())}


def run_method(cfg: PlanetoidRunConfig, data: GraphData, run_dir: str | Path | None = None,
               resume_from: str | Path | None = None) -> dict[str, Any]:
    """Train and evaluate `cfg.method` on `data`; returns accuracies (best validation state) and time. The
    training runs' files (checkpoints, metrics.jsonl, weights) go to `run_dir` (None: a temporary directory);
    `resume_from` continues a checkpoint of Planetoid or GraphEmb."""
    if run_dir is None:
        with tempfile.TemporaryDirectory() as tmp:
            return run_method(cfg, data, tmp)
    run_dir = Path(run_dir)
    seed_everything(cfg.seed)
    m = cfg.method
    if resume_from is not None and not (m.startswith("planetoid_") or m == "graphemb"):
        raise ConfigError(f"method {m} trains in seconds and does not resume; start a new run")
    task = NodeClassification(data.labels, data.split_idx)
    if m.startswith("planetoid_"):
        variant = m[-1].upper()
        model = Planetoid(dataclasses.replace(cfg.model, variant=variant), data.num_nodes, data.num_features,
                          data.num_classes)
        sampler = make_sampler(data, cfg.sampler, variant, cfg.seed)
        out = train_planetoid(model, data, sampler, cfg.train, run_dir, cfg.seed, resume_from)
        return out | {"sampler_triples_per_s": sampler.throughput(cfg.train.n2)}
    if m == "graphemb":
        return train_graphemb(cfg, data, task, run_dir, resume_from)
    if m in B.TRAINED:
        return train_baseline(B.baseline_method(m, data, cfg.baseline, task.labeled_loss, cfg.seed), task, run_dir)
    pred, details = B.label_propagation(data) if m == "lp" else B.tsvm(data, cfg.baseline, m.endswith("_i"), cfg.seed)
    return task.scores(torch.from_numpy(pred)) | details


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
