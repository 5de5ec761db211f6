"""Recipe `universal_schema`: multi-facet universal schema and its baselines (thesis C §3.3; spec
multi-facet-universal-schema.md).

    genfeat run universal_schema --preset tiny                                 # spec §10 synthetic, about a minute
    genfeat run universal_schema --preset tiny --model.k 1 --model.k_rel 1     # the single-facet ablation
    genfeat run universal_schema --preset tiny --model.kind uschema            # or cuschema
    genfeat data fetch bbc-news gensim-testdata glove-6b-50d
    genfeat run universal_schema --preset news                                 # the entailment model (Table 3.7)
    genfeat eval entailment RUN --pairs RE_entailment_labels_val.tsv [--compare RUN2 ...]
    genfeat data fetch debian-packages wordnet     # after `apt-get update -o Acquire::Languages=en`
    genfeat run universal_schema --preset debian                               # relation extraction (Table 3.5)
    genfeat run universal_schema --preset wordnet

    data -> task    a `data.universal_schema.SchemaMatrix`: the spec §10.1 generator (`data.schema_synthetic`),
                    news patterns (`data.news_patterns`), the Debian archive (`data.debian_schema`) or WordNet
                    (`data.wordnet_schema`), the last two with KB rows and held-out heads;
                    `tasks.universal_schema.SchemaTraining`: instances of at most 5 pairs of one row, 5 % held out
                    for the validation loss; relation extraction on the held-out heads
                    (`tasks.relation_extraction`) and the synthetic claims are evaluated after training
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

Deviations on real data (the presets' docstrings): GloVe 6B 50d instead of 840B 300d (not offline), so the network
is 50 wide and 2 + 2 layers instead of 300 and 3 + 3; Adam 1e-3 for 3,000 steps instead of 1e-4 for 50 epochs;
p(w) of Ω counted on the matrix's rows; Ω in the reference code's form (normalised targets, the clipped-η
distance); USchema's width = the pair table's (the thesis does not give it). A run keeps `schema_vocab.json` (its
tokens) for `genfeat eval entailment`.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from genfeat.analysis.facet_scores import sif_bag_vectors
from genfeat.config import atomic_write_text
from genfeat.data.debian_schema import debian_schema
from genfeat.data.news_patterns import news_patterns
from genfeat.data.schema_synthetic import SyntheticSchema, SyntheticSchemaConfig, synthetic_schema
from genfeat.data.universal_schema import SPECIALS, SchemaMatrix
from genfeat.data.word_vectors import load_glove, read_word_vectors, vocab_table
from genfeat.data.wordnet_schema import wordnet_schema
from genfeat.errors import ConfigError
from genfeat.models.universal_schema import VOCAB, UniversalSchemaConfig, build_model
from genfeat.paradigms import copy_parameters, fit_phase, fit_task
from genfeat.tasks.relation_extraction import RelationExtraction
from genfeat.tasks.universal_schema import (
    FacetObjective,
    LogisticObjective,
    SchemaTraining,
    relation_scores,
    synthetic_claims,
)
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig, build_optimizer, lr_lambda
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything
from genfeat.train.step import SharedLoss

PAIR_INITS = ("data", "uschema", "random")


@dataclass(frozen=True)
class SchemaDataConfig:
    source: str = "synthetic"  # synthetic (spec §10.1) | news (`data.news_patterns` over `corpus`) | debian
    #                            (`data.debian_schema`) | wordnet (`data.wordnet_schema`): KB rows, held-out heads
    #                            drawn by `split_seed`
    split_seed: int = 0
    synthetic: SyntheticSchemaConfig = field(default_factory=SyntheticSchemaConfig)
    synthetic_vectors: int = 16  # synthetic: the width of the random word vectors Ω reads (with gamma > 0)
    corpus: str = "bbc-news+wiki"  # news: `data.sentences.documents`' corpora
    min_pairs: int = 1  # news: a pattern's fewest distinct entity pairs
    vectors: str = "glove-6b-50d"  # news: the fixed word vectors (encoder start, Ω): glove-6b-50d or a file
    batch_size: int = 64  # instances (each up to max_pairs pairs of one row); the reference: 200
    max_pairs: int = 5
    valid_share: float = 0.05
    batch_groups: int = 1  # negative pools per batch: one process with G trains what G torchrun ranks do
    pair_init: str = "data"  # data (the synthetic generator's USchema-like start) | uschema | random

    def __post_init__(self) -> None:
        if self.source not in ("synthetic", "news", "debian", "wordnet"):
            raise ConfigError(f"data.source must be synthetic, news, debian or wordnet, got {self.source!r}")
        if self.pair_init not in PAIR_INITS:
            raise ConfigError(f"data.pair_init must be one of {', '.join(PAIR_INITS)}, got {self.pair_init!r}")
        if self.pair_init == "data" and self.source != "synthetic":
            raise ConfigError("data.pair_init=data is the synthetic generator's start; use uschema or random")


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


def news() -> UniversalSchemaRunConfig:
    """The entailment model of Table 3.7 at CPU width: patterns between capitalised mentions in BBC News and the
    Wikipedia dump (`data.news_patterns`), a 2 + 2-layer transformer of width 50 started from GloVe 6B 50d (the
    reference: 3 + 3 layers of width 300 from GloVe 840B, not offline), K = 5 facets in R^50, Ω with γ = 0.2, the
    entity-pair table from a USchema phase and trained by SGD at lr 1 (H at 0.1), Adam 1e-3 for the network
    (the reference: 1e-4 for 50 epochs), batches of 200 instances, lr ÷ 4 after a validation without improvement."""
    model = UniversalSchemaConfig(d_model=50, d_target=50, n_head=5, d_inner=200, n_enc=2, n_dec=2, dropout=0.1,
                                  attn_dropout=0.0)
    train = train_config(max_steps=3000, lr=1e-3, eval_every=500, plateau_factor=0.25, clip_norm=1.0)
    return UniversalSchemaRunConfig(
        data=SchemaDataConfig(source="news", batch_size=200, pair_init="uschema"), model=model, gamma=0.2,
        optim=SchemaOptimConfig(pair_optimizer="sgd"), train=train,
        uschema=train_config(max_steps=3000, lr=1e-3, eval_every=500, plateau_factor=0.25))


def debian() -> UniversalSchemaRunConfig:
    """`news`'s network and schedule on the Debian matrix (`data.debian_schema`), K = 5 pattern facets and
    K_rel = 11 relation facets (the thesis's), the held-out heads' KB cells kept out of training."""
    cfg = news()
    return dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, source="debian"))


def wordnet() -> UniversalSchemaRunConfig:
    """`debian` on the WordNet matrix (`data.wordnet_schema`: 26 pointer types as KB rows)."""
    cfg = debian()
    return dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, source="wordnet"))


PRESETS = {"tiny": tiny, "news": news, "debian": debian, "wordnet": wordnet}


def objective(cfg: UniversalSchemaRunConfig, n_pairs: int, seed: int) -> FacetObjective:
    groups = cfg.data.batch_groups
    if cfg.model.kind == "multi_facet":
        return FacetObjective(cfg.gamma, cfg.model.assign, seed, groups)
    return LogisticObjective(n_pairs, seed, groups)


def method(model: torch.nn.Module, objective: FacetObjective, optim: SchemaOptimConfig, train: TrainConfig
           ) -> SharedLoss:
    """AdamW over the network (`train`'s rate and schedule) and, with optim.pair_optimizer=sgd, SGD over the pair
    table (and H): one forward and backward a step."""
    net = D.unwrap(model)
    if optim.pair_optimizer == "adam":
        return SharedLoss(objective, {"model": build_optimizer(model, train)}, {"model": lr_lambda(train)})
    own = [net.pairs.weight] + ([net.H.weight] if getattr(net, "H", None) is not None else [])
    opts = {"model": build_optimizer(model, train, exclude=own),
            "pairs": torch.optim.SGD([net.pairs.weight], lr=optim.pair_lr)}
    if len(own) > 1:
        opts["H"] = torch.optim.SGD([net.H.weight], lr=optim.h_lr)
    return SharedLoss(objective, opts, {"model": lr_lambda(train)})


def load_data(cfg: UniversalSchemaRunConfig) -> tuple[SchemaMatrix, SyntheticSchema | None, np.ndarray | None]:
    """(the matrix, the synthetic generator's output or None, word vectors of the matrix's vocabulary or None):
    synthetic words get seeded random vectors (`data.synthetic_vectors` wide), news words GloVe's (zeros where it
    has none)."""
    if cfg.data.source == "synthetic":
        syn = synthetic_schema(dataclasses.replace(cfg.data.synthetic, seed=cfg.data.synthetic.seed + cfg.seed))
        rng = np.random.default_rng([cfg.data.synthetic.seed + cfg.seed, 1])
        vecs = rng.standard_normal((len(syn.matrix.vocab), cfg.data.synthetic_vectors)) if cfg.gamma else None
        return syn.matrix, syn, vecs
    matrix = news_patterns(cfg.data.corpus, cfg.data.min_pairs) if cfg.data.source == "news" else \
        debian_schema(seed=cfg.data.split_seed) if cfg.data.source == "debian" else \
        wordnet_schema(seed=cfg.data.split_seed)
    words, vecs = load_glove() if cfg.data.vectors == "glove-6b-50d" else \
        read_word_vectors(cfg.data.vectors, vocab=set(matrix.vocab))
    table, found = vocab_table(matrix.vocab, words, vecs)
    print(f"word vectors: {int(found.sum()):,} of {len(matrix.vocab):,} tokens ({cfg.data.vectors})")
    return matrix, None, table


def token_probs(matrix: SchemaMatrix) -> np.ndarray:
    """p(w) of Eq. B.2 counted on the matrix's rows (the spec's fallback for corpus frequencies)."""
    counts = np.bincount(np.concatenate([np.asarray(r) for r in matrix.rows]), minlength=len(matrix.vocab))
    return counts / counts.sum()


def run(cfg: UniversalSchemaRunConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    matrix, syn, vectors = load_data(cfg)
    print(matrix.summary())
    sif = None
    if cfg.gamma and vectors is not None and cfg.model.kind == "multi_facet":  # Eq. B.2's s^aw of every row
        sif = sif_bag_vectors(matrix.input_ids(), vectors, token_probs(matrix), first_word=len(SPECIALS))

    def task_for(kind_cfg: UniversalSchemaRunConfig) -> SchemaTraining:
        return SchemaTraining(matrix, objective(kind_cfg, matrix.n_pairs, cfg.seed), sif, cfg.data.max_pairs,
                              cfg.data.valid_share, cfg.seed)

    task = task_for(cfg)
    info = D.setup(cfg.train.device)
    seed_everything(cfg.seed)
    mcfg = dataclasses.replace(cfg.model, vocab_size=len(matrix.vocab), max_len=matrix.max_len)
    init = None
    if vectors is not None and vectors.shape[1] == mcfg.d_model:  # the input table starts from the word vectors
        init = torch.randn(len(matrix.vocab), mcfg.d_model) * 0.02
        has = torch.from_numpy(np.abs(vectors).sum(1) > 0)
        init[has] = torch.from_numpy(vectors).float()[has]
    model = build_model(mcfg, matrix.n_rows, matrix.n_pairs, 0 if sif is None else sif.shape[1], init)
    model = model.to(info.device)
    if cfg.data.pair_init == "data":
        with torch.no_grad():
            model.pairs.weight.copy_(torch.from_numpy(syn.pair_init))
    uschema = None  # the USchema phase's model (Algorithm 2), kept for the "USchema + X" ensemble
    if cfg.data.pair_init == "uschema" and mcfg.kind != "uschema":  # Algorithm 2: start from a USchema run
        us_cfg = dataclasses.replace(cfg, model=dataclasses.replace(mcfg, kind="uschema"))
        uschema = build_model(us_cfg.model, matrix.n_rows, matrix.n_pairs).to(info.device)
        us_task = task_for(us_cfg)
        us_batches = us_task.batches(cfg.data.batch_size, cfg.seed, info.rank, info.world_size)
        fit_phase("uschema", D.wrap(uschema, info), us_task, us_batches, cfg.uschema, run_dir,
                  method=method(uschema, us_task.objective, cfg.optim, cfg.uschema))
        copy_parameters(model, uschema, ["pairs.weight"])
    if info.is_main:
        atomic_write_text(Path(run_dir) / VOCAB, json.dumps({"vocab": matrix.vocab}) + "\n")
    n_params = sum(p.numel() for p in model.parameters())
    wrapped = D.wrap(model, info)
    name = f"{mcfg.kind} K={mcfg.k} K_rel={mcfg.k_rel} {mcfg.encoder}"
    res, scores = fit_task(wrapped, task, task.batches(cfg.data.batch_size, cfg.seed, info.rank, info.world_size),
                           cfg.train, run_dir, method=method(wrapped, task.objective, cfg.optim, cfg.train),
                           resume_from=resume_from,
                           desc=f"universal_schema {name}")
    notes = [matrix.summary()]
    details: dict[str, Any] = {}
    if matrix.pair_split is not None:  # relation extraction on the held-out heads (Table 3.5's protocol)
        re_task = RelationExtraction(matrix)
        sim = relation_scores(model, matrix)
        scores |= {f"{k.split('_')[0]}_re_{k.split('_')[1]}": v for k, v in re_task.evaluate(sim).items()}
        details["relation_extraction"] = re_task.stats()
        if uschema is not None:  # USchema alone and "USchema + this model" (the max ensemble)
            us_sim = relation_scores(uschema, matrix)
            scores |= {f"{k.split('_')[0]}_uschema_re_{k.split('_')[1]}": v
                       for k, v in re_task.evaluate(us_sim).items()}
            scores |= {f"{k.split('_')[0]}_ensemble_re_{k.split('_')[1]}": v
                       for k, v in re_task.ensemble(us_sim, sim).items()}
        notes.append("re_*: relation extraction on the held-out heads, per-relation thresholds tuned on valid "
                     "(`tasks.relation_extraction`); uschema_re_* the USchema phase alone, ensemble_re_* the max "
                     "of both.")
    if syn is not None:
        scores |= {f"valid_{k}": v for k, v in synthetic_claims(model, syn).items()}
        notes.append("valid_u*: the spec §10.2 claims on 300 held-out probe patterns "
                     "(`tasks.universal_schema.synthetic_claims`).")
    return record_fit(run_dir, f"Universal schema, {name} on {matrix.name}", scores, fit=res, started=t0,
                      params=n_params, notes=notes,
                      details=details | {"model": name, "dataset": matrix.stats() | {
                          "name": matrix.name, "sha256": matrix.checksum()}})
