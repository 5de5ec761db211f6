"""Multi²SPE (thesis C §5.3, Eqs. 5.5-5.7; spec multi2spe.md): a multi-CLS paper encoder trained on citation
triplets, evaluated by citation ranking.

    genfeat run multi2spe --preset tiny --out runs/m2spe-tiny                      # spec §13.2, about a minute
    genfeat run multi2spe --preset tiny --model.k 1 --model.insert_after [] --model.activation none   # single CLS

    genfeat data fetch minilm-l6 debian-packages     # after `apt-get update -o Acquire::Languages=en`
    genfeat run multi2spe --preset debian --out runs/m2spe-debian                  # MiniLM on the Debian packages
    genfeat run multi2spe --preset debian --data.train_field libs                  # single-domain training queries

    data        `data.paper_sources`: the spec §13.2 synthetic multi-domain graph (480 papers of 4 domains x 3
                topics, 30 % with a secondary topic from another domain), or the Debian packages as papers (title
                [SEP] description, citing what they depend on, Section as the field) with multi-domain test and
                validation queries, single- or multi-domain training queries, no held-out query or candidate in
                training
    task        SPECTER's triplets of the training queries (`data.paper_triplets.specter_triplets`: 5 per query,
                30 % hard negatives); ranking each held-out query's cited (and, on Debian, co-cited) papers (up to
                5) among random papers it does not cite (synthetic: 50; Debian: 500 and SciDocs' 25) by the cosine
                of summed embeddings (`tasks.paper_ranking`): MAP, nDCG (whole list), also on the cross-domain
                test queries (synthetic); field classification macro-F1 (Debian; SciDocs' linear-SVM protocol)
    network     `models.multi_cls.PaperEncoder` over a BERT body: [CLS] as facet 1 and K - 1 [unused] tokens,
                mean-subtracted maps with bias after `model.insert_after` (the last block: the output map), tanh;
                K = 1 without maps and activation is the SPECTER-style single-CLS baseline
    paradigm    one phase (`paradigms.fit_task`), Eq. 5.6 (`loss.lam`, `loss.lambda_mode`) or SPECTER's margin
                loss (`loss.kind margin`), model selection on the validation MAP

Deviations: a tiny random BERT with token ids generated directly (spec §13.2), or MiniLM-L6 on Debian package
descriptions, instead of SciBERT on S2ORC; AdamW with weight decay 0 (the reference's `transformers.AdamW`); the
field classifier is scikit-learn's LinearSVC (SciDocs: `lightning`'s).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from genfeat.data.batches import EpochBatches
from genfeat.data.paper_sources import PaperDataConfig, PaperWorld, load_papers
from genfeat.errors import ConfigError
from genfeat.models.bert import BertConfig, BertModel, bert_dir, from_pretrained
from genfeat.models.bert.config import check_max_len
from genfeat.models.bert.tokenizer import load_wordpiece
from genfeat.models.multi_cls.inference import save_paper_run_files
from genfeat.models.multi_cls.paper import PaperEncoder, build_paper_encoder
from genfeat.paradigms import fit_task
from genfeat.tasks.paper_ranking import (
    EmbeddingCache,
    PaperTable,
    TripletLoss,
    citation_task,
    encode_papers,
    field_macro_f1,
)
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


@dataclass(frozen=True)
class PaperModelConfig:
    bert: BertConfig = field(default_factory=lambda: BertConfig(
        vocab_size=30522, d_model=64, n_layer=3, n_head=2, d_inner=256, max_len=64))
    init: str = ""  # minilm-l6 or an HF BERT directory (SciBERT, SPECTER): its body, shape and tokenizer; "": `bert`
    #   at random with token ids from the data (the synthetic world)
    k: int = 3
    insert_after: tuple[int, ...] = (1, 2, 3)  # the thesis's 4, 8, 12 of 12: here every block of 3, the last the output
    mean_subtract: bool = True  # Eq. 5.5 (the Table 5.6 ablation: false)
    activation: str = "tanh"  # the reference's; "none": the thesis's equations


@dataclass(frozen=True)
class PaperLossConfig:
    kind: str = "softmax"  # softmax: Eq. 5.6 | margin: SPECTER's triplet loss
    lam: float = 0.1
    lambda_mode: str = "logit"  # logit: Eq. 5.7 (the thesis) | loss: the public code's loss mixture
    margin: float = 1.0
    score: str = "cosine"  # ranking score at evaluation: cosine | dot | l2


@dataclass(frozen=True)
class Multi2SPERunConfig:
    seed: int = 0
    data: PaperDataConfig = field(default_factory=PaperDataConfig)
    model: PaperModelConfig = field(default_factory=PaperModelConfig)
    loss: PaperLossConfig = field(default_factory=PaperLossConfig)
    train: TrainConfig = field(default_factory=lambda: TrainConfig(
        max_steps=400, lr=3e-5, warmup_steps=40, weight_decay=0.0, clip_norm=1.0, eval_every=100, log_every=25))


def tiny() -> Multi2SPERunConfig:
    """Spec §13.2: the synthetic graph on a tiny random BERT, about a minute on 2 cores."""
    return Multi2SPERunConfig()


def debian() -> Multi2SPERunConfig:
    """MiniLM-L6 on the Debian packages (`data.paper_sources`): 4,000 multi-domain training queries drawn (about
    3,000 keep a positive outside the held-out papers: 15,050 triplets at split seed 0), 200 test and 100
    validation queries with negatives from a 10 % evaluation pool, papers of 128 word pieces, K = 3 with maps after
    blocks 3 and 6 of 6, batches of 8 triplets, 1,500 steps at 3e-5 (0.8 epoch; about 1.6 s a step on 2 cores)."""
    return Multi2SPERunConfig(
        data=PaperDataConfig(source="debian", batch_size=8, n_neg=25),
        model=PaperModelConfig(init="minilm-l6", insert_after=(3, 6)),
        train=TrainConfig(max_steps=1500, lr=3e-5, warmup_steps=150, weight_decay=0.0, clip_norm=1.0,
                          eval_every=500, log_every=25))


PRESETS = {"tiny": tiny, "debian": debian}


def build_encoder(mc: PaperModelConfig, max_len: int) -> tuple[PaperEncoder, Any, BertConfig]:
    """(the encoder, the tokenizer of `mc.init` or None, the BERT shape): the checkpoint's BERT body, or `mc.bert`
    at random (facet tokens at bert-base-uncased's [unused] ids)."""
    if not mc.init:
        bert = BertModel(mc.bert)
        return build_paper_encoder(bert, mc.k, mc.insert_after, mc.mean_subtract, mc.activation), None, mc.bert
    src = bert_dir(mc.init)
    bert, bcfg = from_pretrained(src)
    check_max_len("data.max_len", max_len, bcfg.max_len)
    tok = load_wordpiece(src)
    return build_paper_encoder(bert, mc.k, mc.insert_after, mc.mean_subtract, mc.activation, tok.token_to_id), tok, \
        bcfg


def field_scores(world: PaperWorld, embeddings: EmbeddingCache, model: torch.nn.Module, prefix: str = ""
                 ) -> dict[str, float]:
    """{test_{prefix}field_f1, ..._C} of SciDocs' field classification on the embeddings (debian worlds)."""
    if world.field_split is None:
        return {}
    fit, score = world.field_split
    emb = embeddings(model, np.concatenate([fit, score])).numpy()
    f = field_macro_f1(emb[fit], world.fields[fit], emb[score], world.fields[score])
    return {f"test_{prefix}field_f1": f["f1"], f"test_{prefix}field_C": f["C"]}


def protocol(dc: PaperDataConfig, score: str) -> dict[str, Any]:
    """Every evaluation setting stored beside the numbers (the benchmarks differ silently in these)."""
    return {"score": score, "positives_per_query": dc.n_pos, "valid_negatives": dc.n_neg,
            "test_negatives": list(dc.test_negatives) if dc.source == "debian" else [dc.n_neg],
            "classifier": "LinearSVC (squared hinge), C in 1e-4..1e2 (7), 3-fold CV, macro-F1",
            "missing_embedding": "none: every candidate is embedded"}


def run(cfg: Multi2SPERunConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    info = D.setup(cfg.train.device)
    seed_everything(cfg.seed)
    dc = cfg.data
    budget = (dc.max_len if cfg.model.init else cfg.model.bert.max_len) - (cfg.model.k - 1)  # room for the facets
    model, tok, bert_cfg = build_encoder(cfg.model, dc.max_len)
    if info.is_main:  # what `genfeat embed` reads beside the weights
        save_paper_run_files(run_dir, bert_cfg, tok)
    encode = None if tok is None else lambda titles, abstracts: encode_papers(tok, titles, abstracts, budget)
    world = load_papers(dc, cfg.seed, encode)
    print(f"{world.name}: {world.describe()}")
    if max(len(p) for p in world.papers) > budget:  # the synthetic world's ids come as they are
        raise ConfigError(f"papers of {max(len(p) for p in world.papers)} tokens + {cfg.model.k - 1} facet tokens "
                          f"exceed model.bert.max_len={cfg.model.bert.max_len}")
    table = PaperTable.build(world.papers)
    model = model.to(info.device)
    lc = cfg.loss
    embeddings = EmbeddingCache(table)  # the ranking splits' papers and the field papers, once per weights
    task = citation_task(table, world.splits, TripletLoss(table, lc.lam, lc.lambda_mode, lc.kind, lc.margin),
                         lc.score, cache=embeddings)
    batches = EpochBatches({"triplet": torch.as_tensor(world.triplets)}, dc.batch_size,
                           np.random.default_rng(cfg.seed), info.rank, info.world_size)
    tests = [s for s in world.splits if s.startswith("test")]
    untrained = {k.replace("test_", "test_untrained_", 1): v  # the seed's initial weights, resumed or not
                 for split in tests for k, v in task.evaluate(model, split).items()}
    untrained |= field_scores(world, embeddings, model, "untrained_")
    res, scores = fit_task(D.wrap(model, info), task, batches, cfg.train, run_dir, resume_from=resume_from,
                           desc="multi2spe")
    enc = model.encoder
    with torch.no_grad():
        sums = [float(enc.map_weight(a).sum(0).abs().max()) for a in enc.insert_after] if cfg.model.k > 1 else []
    read = np.unique(np.concatenate([q.papers() for q in world.splits.values()]))
    s1 = {"effective_weight_sum_max": max(sums, default=0.0),
          "embedding_std_min": float(embeddings(model, read)[read].std(0).min())}
    scores = scores | untrained | field_scores(world, embeddings, model)
    n_params = sum(p.numel() for p in model.parameters())
    return record_fit(run_dir, f"Multi²SPE (K={cfg.model.k}) on {world.name}", scores, fit=res,
                      started=t0, params=n_params,
                      details={"k": cfg.model.k, "score": lc.score, **s1, **world.describe(),
                               "protocol": protocol(dc, lc.score)},
                      notes=[f"valid_* / test_*: ranking each query's cited (test_cocite_*: co-cited) papers (up to "
                             f"{dc.n_pos}) among random papers it does not cite ({dc.n_neg} for valid; test_*_N: N) "
                             f"by the {lc.score} of summed embeddings (AP, NDCG over the whole list); test_cross_*: "
                             "the cross-domain test queries; *untrained_*: the same encoder before training; "
                             "test_field_f1: field (Section) classification macro-F1 by SciDocs' linear SVM "
                             "protocol on frozen embeddings.",
                             "effective_weight_sum_max: the largest |Σ_k (W_k - W̄)| entry over the inserted "
                             "layers (S1: zero); embedding_std_min: the smallest per-dimension std of the summed "
                             "embeddings over the papers the splits read (S1: not constant)."])
