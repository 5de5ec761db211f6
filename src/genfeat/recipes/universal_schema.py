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

import torch

from genfeat.analysis.facet_scores import sif_bag_vectors
from genfeat.config import atomic_write_text
from genfeat.data.schema_sources import SchemaDataConfig, load_schema, token_probs
from genfeat.data.universal_schema import SPECIALS
from genfeat.models.facets import input_table_start
from genfeat.models.universal_schema import (
    VOCAB,
    SchemaOptimConfig,
    UniversalSchemaConfig,
    build_model,
    schema_method,
)
from genfeat.paradigms import copy_parameters, fit_phase, fit_task
from genfeat.tasks.universal_schema import SchemaTraining, extraction_scores, objective_for, synthetic_claims
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


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


def run(cfg: UniversalSchemaRunConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    matrix, syn, vectors = load_schema(cfg.data, cfg.seed, vectors_wanted=bool(cfg.gamma))
    print(matrix.summary())
    sif = None
    if cfg.gamma and vectors is not None and cfg.model.kind == "multi_facet":  # Eq. B.2's s^aw of every row
        sif = sif_bag_vectors(matrix.input_ids(), vectors, token_probs(matrix), first_word=len(SPECIALS))

    def task_for(kind: str) -> SchemaTraining:
        objective = objective_for(kind, matrix.n_pairs, cfg.gamma, cfg.model.assign, cfg.seed, cfg.data.batch_groups)
        return SchemaTraining(matrix, objective, sif, cfg.data.max_pairs, cfg.data.valid_share, cfg.seed)

    task = task_for(cfg.model.kind)
    info = D.setup(cfg.train.device)
    seed_everything(cfg.seed)
    mcfg = dataclasses.replace(cfg.model, vocab_size=len(matrix.vocab), max_len=matrix.max_len)
    init = input_table_start(vectors, mcfg.d_model)  # the input table starts from the word vectors
    model = build_model(mcfg, matrix.n_rows, matrix.n_pairs, 0 if sif is None else sif.shape[1], init)
    model = model.to(info.device)
    if cfg.data.pair_init == "data":
        with torch.no_grad():
            model.pairs.weight.copy_(torch.from_numpy(syn.pair_init))
    uschema = None  # the USchema phase's model (Algorithm 2), kept for the "USchema + X" ensemble
    if cfg.data.pair_init == "uschema" and mcfg.kind != "uschema":  # Algorithm 2: start from a USchema run
        uschema = build_model(dataclasses.replace(mcfg, kind="uschema"), matrix.n_rows, matrix.n_pairs).to(info.device)
        us_task = task_for("uschema")
        us_batches = us_task.batches(cfg.data.batch_size, cfg.seed, info.rank, info.world_size)
        fit_phase("uschema", D.wrap(uschema, info), us_task, us_batches, cfg.uschema, run_dir,
                  method=schema_method(uschema, us_task.objective, cfg.optim, cfg.uschema))
        copy_parameters(model, uschema, ["pairs.weight"])
    if info.is_main:
        atomic_write_text(Path(run_dir) / VOCAB, json.dumps({"vocab": matrix.vocab}) + "\n")
    n_params = sum(p.numel() for p in model.parameters())
    wrapped = D.wrap(model, info)
    name = f"{mcfg.kind} K={mcfg.k} K_rel={mcfg.k_rel} {mcfg.encoder}"
    res, scores = fit_task(wrapped, task, task.batches(cfg.data.batch_size, cfg.seed, info.rank, info.world_size),
                           cfg.train, run_dir, method=schema_method(wrapped, task.objective, cfg.optim, cfg.train),
                           resume_from=resume_from,
                           desc=f"universal_schema {name}")
    notes = [matrix.summary()]
    details: dict[str, Any] = {}
    if matrix.pair_split is not None:  # relation extraction on the held-out heads (Table 3.5's protocol)
        extraction, details["relation_extraction"] = extraction_scores(model, matrix, uschema)
        scores |= extraction
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
