"""Recipe `universal_schema`: multi-facet universal schema and its baselines (thesis C §3.3; spec
multi-facet-universal-schema.md).

    genfeat run universal_schema --preset tiny                                 # spec §10 synthetic, about a minute
    genfeat run universal_schema --preset tiny --model.k 1 --model.k_rel 1     # the single-facet ablation
    genfeat run universal_schema --preset tiny --model.kind uschema            # or cuschema

    data -> task    a `data.universal_schema.SchemaMatrix` (the spec §10.1 generator, `data.schema_synthetic`);
                    `tasks.universal_schema.SchemaTraining`: instances of at most 5 pairs of one row, 5 % held out
                    for the validation loss
    network         `models.universal_schema`: `model.kind` multi_facet (the facet network, K pattern facets and
                    K_rel relation facets, `model.encoder` transformer | lstm | bow), uschema or cuschema; the
                    entity-pair table starts from the data's USchema-like vectors (`data.pair_init=data`), from a
                    USchema phase trained first in the same run (`uschema`: Algorithm 2) or at random
    paradigm        [USchema phase (`paradigms.fit_phase`)] -> one phase (`fit_task`) on the validation loss, the
                    network under AdamW and the pair table under its own optimizer in one step (`train.SharedLoss`:
                    `optim.pair_optimizer=sgd` is the reference's SGD at lr 1.0, `adam` the spec §10 reference's
                    one Adam for everything); `train.plateau_factor` 0.25 is the reference's lr ÷ 4

The synthetic presets are the spec's §10 reference: a bag-of-words encoder (64 wide) and linear facet heads into
R^16, Adam 3e-3 for everything, batch 64, 1,500 steps, exact η / k_best (Eq. 3.8), no Ω; the summary holds the
§10.2 claims U1-U4 (`tasks.universal_schema.synthetic_claims`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from genfeat.config import atomic_write_text
from genfeat.data.schema_synthetic import SyntheticSchemaConfig, synthetic_schema
from genfeat.errors import ConfigError
from genfeat.models.universal_schema import UniversalSchemaConfig, build_model
from genfeat.paradigms import copy_parameters, fit_phase, fit_task
from genfeat.tasks.universal_schema import FacetObjective, LogisticObjective, SchemaTraining, synthetic_claims
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig, build_optimizer, lr_lambda
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything
from genfeat.train.step import SharedLoss

PAIR_INITS = ("data", "uschema", "random")
VOCAB = "schema_vocab.json"  # the run's tokens, for scoring new patterns (`genfeat eval entailment`)


@dataclass(frozen=True)
class SchemaDataConfig:
    source: str = "synthetic"
    synthetic: SyntheticSchemaConfig = field(default_factory=SyntheticSchemaConfig)
    batch_size: int = 64  # instances (each up to max_pairs pairs of one row); the reference: 200
    max_pairs: int = 5
    valid_share: float = 0.05
    batch_groups: int = 1  # negative pools per batch: one process with G trains what G torchrun ranks do
    pair_init: str = "data"  # data (the synthetic generator's USchema-like start) | uschema | random

    def __post_init__(self) -> None:
        if self.source != "synthetic":
            raise ConfigError(f"data.source must be synthetic, got {self.source!r}")
        if self.pair_init not in PAIR_INITS:
            raise ConfigError(f"data.pair_init must be one of {', '.join(PAIR_INITS)}, got {self.pair_init!r}")


@dataclass(frozen=True)
class SchemaOptimConfig:
    pair_optimizer: str = "adam"  # adam: the pair table in the network's AdamW | sgd: SGD at pair_lr (and H at h_lr)
    pair_lr: float = 1.0
    h_lr: float = 0.1

    def __post_init__(self) -> None:
        if self.pair_optimizer not in ("adam", "sgd"):
            raise ConfigError(f"optim.pair_optimizer must be adam or sgd, got {self.pair_optimizer!r}")


def train_config(**kw: Any) -> TrainConfig:
    base = {"max_steps": 1500, "lr": 3e-3, "warmup_steps": 0, "schedule": "constant", "weight_decay": 0.0,
            "clip_norm": 0.0, "log_every": 100, "eval_every": 500, "precision": "fp32"}
    return TrainConfig(**(base | kw))


def synthetic_model(**kw: Any) -> UniversalSchemaConfig:
    base = {"encoder": "bow", "decoder": "linear", "d_model": 64, "d_target": 16, "k": 3, "k_rel": 5,
            "dropout": 0.0, "n_head": 4, "d_inner": 128, "n_enc": 1, "n_dec": 1}
    return UniversalSchemaConfig(**(base | kw))


@dataclass(frozen=True)
class UniversalSchemaRunConfig:
    seed: int = 0
    data: SchemaDataConfig = field(default_factory=SchemaDataConfig)
    model: UniversalSchemaConfig = field(default_factory=synthetic_model)
    gamma: float = 0.0  # Ω's weight (Appendix B.2; the reference 0.2), when the rows have word vectors
    optim: SchemaOptimConfig = field(default_factory=SchemaOptimConfig)
    train: TrainConfig = field(default_factory=train_config)
    uschema: TrainConfig = field(default_factory=train_config)  # the USchema phase of data.pair_init=uschema


def tiny() -> UniversalSchemaRunConfig:
    """Spec §10: the synthetic matrix with KB rows, K = 3, K_rel = 5, the bag-of-words reference network."""
    return UniversalSchemaRunConfig()


PRESETS = {"tiny": tiny}


def objective(cfg: UniversalSchemaRunConfig, n_pairs: int, seed: int) -> FacetObjective:
    groups = cfg.data.batch_groups
    if cfg.model.kind == "multi_facet":
        return FacetObjective(cfg.gamma, cfg.model.assign, seed, groups)
    return LogisticObjective(n_pairs, seed, groups)


def method(model: torch.nn.Module, objective: FacetObjective, cfg: UniversalSchemaRunConfig) -> SharedLoss:
    """AdamW over the network (cfg.train's schedule) and, with optim.pair_optimizer=sgd, SGD over the pair table
    (and H): one forward and backward a step."""
    net = D.unwrap(model)
    if cfg.optim.pair_optimizer == "adam":
        return SharedLoss(objective, {"model": build_optimizer(model, cfg.train)}, {"model": lr_lambda(cfg.train)})
    own = [net.pairs.weight] + ([net.H.weight] if getattr(net, "H", None) is not None else [])
    opts = {"model": build_optimizer(model, cfg.train, exclude=own),
            "pairs": torch.optim.SGD([net.pairs.weight], lr=cfg.optim.pair_lr)}
    if len(own) > 1:
        opts["H"] = torch.optim.SGD([net.H.weight], lr=cfg.optim.h_lr)
    return SharedLoss(objective, opts, {"model": lr_lambda(cfg.train)})


def run(cfg: UniversalSchemaRunConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    syn = synthetic_schema(dataclasses.replace(cfg.data.synthetic, seed=cfg.data.synthetic.seed + cfg.seed))
    matrix = syn.matrix
    print(matrix.summary())

    def task_for(kind_cfg: UniversalSchemaRunConfig) -> SchemaTraining:
        return SchemaTraining(matrix, objective(kind_cfg, matrix.n_pairs, cfg.seed), None, cfg.data.max_pairs,
                              cfg.data.valid_share, cfg.seed)

    task = task_for(cfg)
    info = D.setup(cfg.train.device)
    seed_everything(cfg.seed)
    mcfg = dataclasses.replace(cfg.model, vocab_size=len(matrix.vocab), max_len=matrix.input_ids().shape[1])
    model = build_model(mcfg, matrix.n_rows, matrix.n_pairs).to(info.device)
    if cfg.data.pair_init == "data":
        with torch.no_grad():
            model.pairs.weight.copy_(torch.from_numpy(syn.pair_init))
    elif cfg.data.pair_init == "uschema" and mcfg.kind != "uschema":  # Algorithm 2: start from a USchema run
        us_cfg = dataclasses.replace(cfg, model=dataclasses.replace(mcfg, kind="uschema"))
        uschema = build_model(us_cfg.model, matrix.n_rows, matrix.n_pairs).to(info.device)
        us_task = task_for(us_cfg)
        us_batches = us_task.batches(cfg.data.batch_size, cfg.seed, info.rank, info.world_size)
        fit_phase("uschema", D.wrap(uschema, info), us_task, us_batches, cfg.uschema, run_dir,
                  method=method(uschema, us_task.objective, us_cfg))
        copy_parameters(model, uschema, ["pairs.weight"])
    if info.is_main:
        atomic_write_text(Path(run_dir) / VOCAB, json.dumps({"vocab": matrix.vocab}) + "\n")
    n_params = sum(p.numel() for p in model.parameters())
    wrapped = D.wrap(model, info)
    name = f"{mcfg.kind} K={mcfg.k} K_rel={mcfg.k_rel} {mcfg.encoder}"
    res, scores = fit_task(wrapped, task, task.batches(cfg.data.batch_size, cfg.seed, info.rank, info.world_size),
                           cfg.train, run_dir, method=method(wrapped, task.objective, cfg), resume_from=resume_from,
                           desc=f"universal_schema {name}")
    claims = synthetic_claims(model, syn)
    return record_fit(run_dir, f"Universal schema, {name} on {matrix.name}", scores | {
        f"valid_{k}": v for k, v in claims.items()}, fit=res, started=t0, params=n_params,
        details={"model": name, "dataset": matrix.stats() | {"name": matrix.name, "sha256": matrix.checksum()}},
        notes=[matrix.summary(), "valid_u*: the spec §10.2 claims on 300 held-out probe patterns "
               "(`tasks.universal_schema.synthetic_claims`)."])


def load_model(run_dir: Path, cfg: UniversalSchemaRunConfig) -> tuple[torch.nn.Module, list[str]]:
    """A finished run's model (eval mode, CPU) and its token vocabulary."""
    from genfeat.train.checkpoint import WEIGHTS, load_model_weights, load_weights

    path = Path(run_dir) / VOCAB
    if not path.is_file():
        raise ConfigError(f"{run_dir} has no {VOCAB} (a universal_schema run writes it when it starts)")
    vocab = json.loads(path.read_text())["vocab"]
    weights = load_weights(Path(run_dir) / WEIGHTS)
    n_pairs, n_rows = weights["pairs.weight"].shape[0], weights.get("rows.weight", weights["pairs.weight"]).shape[0]
    d_word = weights["H.weight"].shape[1] if "H.weight" in weights else 0
    max_len = weights["net.encoder.pos.weight"].shape[0] if "net.encoder.pos.weight" in weights else cfg.model.max_len
    mcfg = dataclasses.replace(cfg.model, vocab_size=len(vocab), max_len=max_len)
    model = build_model(mcfg, n_rows, n_pairs, d_word)
    load_model_weights(model, Path(run_dir) / WEIGHTS)
    return model.eval(), vocab
