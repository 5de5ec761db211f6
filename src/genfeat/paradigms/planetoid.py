"""Graph-based semi-supervised node classification as a paradigm (thesis Y §3.3; specs/framework.md §4.5:
`Warmup(L_u)` then `AlternatingJoint(T1, T2)`, L_u the context loss of Eq. 3.12, L_s the label cross-entropy of
Eqs. 3.13 / 3.14), and the baselines it is compared with, each trained and scored on
`tasks.node_classification.NodeClassification`:

    run_method(cfg, data, run_dir, resume_from) -> {train_acc, valid_acc, test_acc, params, steps, best_step,
                                                    train_seconds, ...}
        `cfg.method` (one of METHODS) on `data` with `cfg.seed`, `cfg.model`, `cfg.sampler`, `cfg.train` and
        `cfg.baseline` (a planetoid run config)
    train_planetoid     Algorithm 3 (`models.planetoid.planetoid_method`) as one `fit_task` phase
    train_baseline      a baseline's full-graph network and Step (`models.planetoid.baselines.baseline_method`)
    train_graphemb      GraphEmb: its embeddings an earlier phase (`fit_phase`), then logistic regression on them
LP and the TSVM stand-in are solves, scored by the same task.
"""

from __future__ import annotations

import dataclasses
import itertools
import tempfile
from pathlib import Path
from typing import Any

import torch

from genfeat.data.planetoid import GraphData
from genfeat.errors import ConfigError
from genfeat.models.planetoid import ContextSampler, Planetoid, PlanetoidTrainConfig, planetoid_method
from genfeat.models.planetoid import baselines as B
from genfeat.models.planetoid.train import branch_accuracy, make_sampler
from genfeat.paradigms.one_phase import fit_task
from genfeat.paradigms.phases import fit_phase, phase_record
from genfeat.tasks.node_classification import NodeClassification
from genfeat.train.seed import seed_everything

METHODS = ("planetoid_t", "planetoid_i", "planetoid_g", "graphemb", "feat_lr", "feat_mlp", "lp", "gcn", "manireg_t",
           "manireg_i", "semiemb_t", "semiemb_i", "tsvm_t", "tsvm_i")


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


def train_graphemb(cfg: Any, data: GraphData, task: NodeClassification, run_dir: Path,
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


def run_method(cfg: Any, data: GraphData, run_dir: str | Path | None = None,
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
