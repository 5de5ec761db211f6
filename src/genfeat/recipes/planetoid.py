"""Graph-based semi-supervised node classification: Planetoid-T/I/G (thesis Y §3.3) and baselines.

    genfeat run planetoid --preset linuxdoc                       # Planetoid-T on the kernel-docs graph
    genfeat run planetoid --preset linuxdoc --method planetoid_i  # inductive
    genfeat run planetoid --preset linuxdoc --method gcn          # or feat_lr, feat_mlp, lp, graphemb, manireg_t,
                                                                  #   manireg_i, semiemb_t, semiemb_i, tsvm_t, tsvm_i

Framework (specs/framework.md §4.5): `Warmup(L_u)` then `AlternatingJoint(T1, T2)`, with
L_u the context loss (Eq. 3.12) and L_s the label cross-entropy (Eqs. 3.13/3.14).

Data (`data.name`):
    linuxdoc            the Linux kernel documentation graph, built offline from Debian linux-doc-6.1
                        (`genfeat data fetch linux-doc` first); see genfeat.data.kernel_docs
    cora|citeseer|pubmed the Planetoid files from `data.root` (default $GENFEAT_DATA/planetoid/<name>),
                        downloaded from kimiyoung/planetoid on first use when a network is available
    any other name      `ind.<name>.*` files in `data.root`
    sbm_a | sbm_b       the synthetic feature-rich / graph-rich graphs of spec §5.1 (`data.seed`)

Presets: tiny (seconds, tests), linuxdoc, linuxdoc_i, cora (T, the thesis's best there),
citeseer and pubmed (I), sbm_a, sbm_b.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from genfeat.data.planetoid import (
    PLANETOID_NAMES,
    GraphData,
    check_planetoid_files,
    download_planetoid,
    read_planetoid,
    standard_split,
)
from genfeat.data.sources import data_home
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
from genfeat.models.planetoid.train import branch_accuracy, context_nodes_for
from genfeat.paradigms import fit_task
from genfeat.tasks.node_classification import NodeClassification
from genfeat.train import distributed as D
from genfeat.train.loop import fit
from genfeat.train.record import write_record
from genfeat.train.seed import seed_everything

METHODS = ("planetoid_t", "planetoid_i", "planetoid_g", "graphemb", "feat_lr", "feat_mlp", "lp", "gcn", "manireg_t",
           "manireg_i", "semiemb_t", "semiemb_i", "tsvm_t", "tsvm_i")


@dataclass(frozen=True)
class GraphDataConfig:
    name: str = "linuxdoc"
    root: str | None = None  # directory with ind.<name>.* (Planetoid format)
    seed: int = 0  # synthetic graphs only
    split_seed: int | None = None  # re-draw a standard-style split (20 per class / 500 / 1000) with this seed
    download: bool = True  # cora/citeseer/pubmed: fetch from kimiyoung/planetoid if missing


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
def load_graph(cfg: GraphDataConfig) -> GraphData:
    data = _load_graph(cfg)
    if cfg.split_seed is not None:
        n_test = min(1000, len(data.test_idx))
        data = dataclasses.replace(data, name=f"{data.name}-split{cfg.split_seed}")
        data.train_idx, data.val_idx, data.test_idx = standard_split(
            data.labels, 20, len(data.val_idx), n_test, seed=cfg.split_seed)
    return data


def _load_graph(cfg: GraphDataConfig) -> GraphData:
    from genfeat.data.graph_synthetic import make_sbm_bow

    if cfg.name == "sbm_a":
        return make_sbm_bow(cfg.seed, deg=4, h=0.7, rho=0.3)
    if cfg.name == "sbm_b":
        return make_sbm_bow(cfg.seed, deg=5, h=0.8, rho=0.25)
    if cfg.name == "linuxdoc" and cfg.root is None:
        from genfeat.data.kernel_docs import load_kernel_docs

        return load_kernel_docs()
    root = Path(cfg.root) if cfg.root else data_home() / "planetoid" / cfg.name
    if not (root / f"ind.{cfg.name}.graph").exists():
        others = sorted(p.name[len("ind."):-len(".graph")] for p in root.glob("ind.*.graph"))
        if others:
            raise ConfigError(f"no ind.{cfg.name}.* files in {root}, but it holds the Planetoid graph(s) "
                              f"{', '.join(others)}: add --data.name {others[0]}")
        if cfg.name in PLANETOID_NAMES and cfg.download:
            download_planetoid(cfg.name, root)
        else:
            raise ConfigError(f"no Planetoid files ind.{cfg.name}.* in {root} (set data.root)")
    check_planetoid_files(root, cfg.name)  # Cora, Citeseer and Pubmed against their published files
    return read_planetoid(root, cfg.name)


def make_sampler(data: GraphData, cfg: SamplerConfig, variant: str, seed: int) -> ContextSampler:
    return ContextSampler(data.adj, data.labels, data.train_idx, cfg,
                          context_nodes=context_nodes_for(data, variant, cfg.unseen), seed=seed)


def sampler_throughput(sampler: ContextSampler, batch: int = 200, repeats: int = 200) -> float:
    """Triples per second drawn by Algorithm 2 in batches of `batch`."""
    sampler.sample(batch)
    t0 = time.perf_counter()
    for _ in range(repeats):
        sampler.sample(batch)
    return batch * repeats / (time.perf_counter() - t0)


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


def run_method(cfg: PlanetoidRunConfig, data: GraphData, run_dir: str | Path | None = None,
               resume_from: str | Path | None = None) -> dict[str, Any]:
    """Train and evaluate `cfg.method` on `data`; returns accuracies (best validation state) and time. The
    training runs' files (checkpoints, metrics.jsonl, weights) go to `run_dir` (None: a temporary directory,
    for benchmarks that keep only the numbers); `resume_from` continues a Planetoid checkpoint."""
    if run_dir is None:
        with tempfile.TemporaryDirectory() as tmp:
            return run_method(cfg, data, tmp)
    run_dir = Path(run_dir)
    seed_everything(cfg.seed)
    m = cfg.method
    if resume_from is not None and not (m.startswith("planetoid_") or m == "graphemb"):
        raise ConfigError(f"method {m} trains in seconds and does not resume; start a new run")
    if m.startswith("planetoid_"):
        variant = m[-1].upper()
        model = Planetoid(dataclasses.replace(cfg.model, variant=variant), data.num_nodes, data.num_features,
                          data.num_classes)
        sampler = make_sampler(data, cfg.sampler, variant, cfg.seed)
        out = train_planetoid(model, data, sampler, cfg.train, run_dir, cfg.seed, resume_from)
        return out | {"sampler_triples_per_s": sampler_throughput(sampler, cfg.train.n2)}
    if m == "graphemb":  # two phases: context-only embeddings (resumable), then logistic regression on them
        model = Planetoid(dataclasses.replace(cfg.model, variant="G"), data.num_nodes, 0, data.num_classes)
        sampler = make_sampler(data, dataclasses.replace(cfg.sampler, r2=1.0), "G", cfg.seed)
        method = planetoid_method(model, data, sampler, cfg.train, cfg.seed, context_only=True)
        emb = fit(model, method.step, method.batches, method.loop, run_dir, resume_from=resume_from,
                  desc="Planetoid (context only)", unit="nodes")  # the classifier (seconds) is trained again
        out = B.logistic_regression(model.embedding.weight.detach(), data, cfg.baseline, run_dir / "classifier")
        out["train_seconds"] += emb.wall_time
        out["params"] += sum(p.numel() for p in model.parameters())
        out["steps"] += emb.step
        return out
    if m == "feat_lr":
        from genfeat.nn.sparse_linear import SparseRows

        return B.logistic_regression(SparseRows(data.features), data, cfg.baseline, run_dir)
    if m == "feat_mlp":
        return B.feature_mlp(data, cfg.baseline, run_dir)
    if m.startswith("manireg_"):
        return B.manireg(data, cfg.baseline, run_dir, inductive=m.endswith("_i"))
    if m.startswith("semiemb_"):
        return B.feature_mlp(data, cfg.baseline, run_dir, embedding_loss=True, inductive=m.endswith("_i"),
                             seed=cfg.seed)
    if m.startswith("tsvm_"):
        return B.tsvm(data, cfg.baseline, inductive=m.endswith("_i"), seed=cfg.seed)
    if m == "lp":
        return B.label_propagation(data)
    return B.gcn(data, cfg.baseline, run_dir)


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
