"""Multi²SPE (thesis C §5.3, Eqs. 5.5-5.7; spec multi2spe.md): a multi-CLS paper encoder trained on citation
triplets, evaluated by citation ranking.

    genfeat run multi2spe --preset tiny --out runs/m2spe-tiny                      # spec §13.2, about a minute
    genfeat run multi2spe --preset tiny --model.k 1 --model.insert_after [] --model.activation none   # single CLS

    data        the spec §13.2 synthetic multi-domain graph (`data.paper_synthetic`): 480 papers of 4 domains x 3
                topics, 30 % with a secondary topic from another domain; the first 80 % are training queries (the
                last `data.valid_fraction` of them held out for model selection), the rest test queries
    task        SPECTER's triplets of the training queries (`data.paper_triplets.specter_triplets`: 5 per query,
                30 % hard negatives); ranking each held-out query's cited papers (up to 5) among `data.n_neg`
                (50) random papers it does not cite by the cosine of summed embeddings (`tasks.paper_ranking`):
                MAP, nDCG (whole list), also on the cross-domain test queries
    network     `models.multi_cls.PaperEncoder` over a BERT body: [CLS] as facet 1 and K - 1 [unused] tokens,
                mean-subtracted maps with bias after `model.insert_after` (the last block: the output map), tanh;
                K = 1 without maps and activation is the SPECTER-style single-CLS baseline
    paradigm    one phase (`paradigms.fit_task`), Eq. 5.6 (`loss.lam`, `loss.lambda_mode`) or SPECTER's margin
                loss (`loss.kind margin`), model selection on the validation MAP

Deviations: a tiny random BERT with token ids generated directly (spec §13.2) instead of SciBERT on S2ORC; AdamW
with weight decay 0 (the reference's `transformers.AdamW`).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from genfeat.data.batches import EpochBatches
from genfeat.data.paper_synthetic import SyntheticPapersConfig, synthetic_papers
from genfeat.data.paper_triplets import cite_queries, specter_triplets
from genfeat.errors import ConfigError
from genfeat.models.bert import BertConfig, BertModel
from genfeat.models.multi_cls import MultiCLSConfig, MultiCLSEncoder
from genfeat.models.multi_cls.model import facet_token_ids
from genfeat.models.multi_cls.paper import PaperEncoder
from genfeat.paradigms import fit_task
from genfeat.tasks.paper_ranking import PaperTable, TripletLoss, citation_task, embed_papers
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything

BERT_UNUSED = {f"[unused{j}]": 1 + j for j in range(994)}  # bert-base-uncased: [unused0] = 1 ..


@dataclass(frozen=True)
class PaperDataConfig:
    source: str = "synthetic"
    synthetic: SyntheticPapersConfig = field(default_factory=SyntheticPapersConfig)
    valid_fraction: float = 0.1  # of the training queries, held out for model selection
    per_query: int = 5  # triplets per training query
    hard_fraction: float = 0.3  # SPECTER's hard negatives
    n_pos: int = 5  # positives per ranked query
    n_neg: int = 50  # sampled negatives per ranked query (Multi-SciDocs: 500; SciDocs: 25)
    batch_size: int = 16

    def __post_init__(self) -> None:
        if self.source != "synthetic":
            raise ConfigError(f"data.source must be synthetic, got {self.source!r}")
        if not 0 < self.valid_fraction < 1 or not 0 <= self.hard_fraction <= 1:
            raise ConfigError("data.valid_fraction must be in (0, 1) and data.hard_fraction in [0, 1]")
        if min(self.per_query, self.n_pos, self.n_neg, self.batch_size) < 1:
            raise ConfigError("data.per_query, n_pos, n_neg and batch_size must be >= 1")


@dataclass(frozen=True)
class PaperModelConfig:
    bert: BertConfig = field(default_factory=lambda: BertConfig(
        vocab_size=30522, d_model=64, n_layer=3, n_head=2, d_inner=256, max_len=64))
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


PRESETS = {"tiny": tiny}


def build_encoder(mc: PaperModelConfig, token_to_id) -> PaperEncoder:
    bert = BertModel(mc.bert)
    cfg = MultiCLSConfig(k=mc.k, insert_after=tuple(mc.insert_after), cls_facet=True, insert_bias=True,
                         mean_subtract=mc.mean_subtract, insert_init="eye",
                         facet_ids=facet_token_ids(token_to_id, mc.k - 1))
    return PaperEncoder(MultiCLSEncoder(bert, cfg), mc.activation)


def run(cfg: Multi2SPERunConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    info = D.setup(cfg.train.device)
    seed_everything(cfg.seed)
    dc = cfg.data
    graph = synthetic_papers(dataclasses.replace(dc.synthetic, seed=dc.synthetic.seed + cfg.seed))
    N = len(graph.ids)
    if max(len(p) for p in graph.ids) + cfg.model.k - 1 > cfg.model.bert.max_len:
        raise ConfigError(f"papers of {max(len(p) for p in graph.ids)} tokens + {cfg.model.k - 1} facet tokens "
                          f"exceed model.bert.max_len={cfg.model.bert.max_len}")
    table = PaperTable.build([np.asarray(p) for p in graph.ids])
    rng = np.random.default_rng(cfg.seed)
    n_valid = max(1, int(round(len(graph.train_queries) * dc.valid_fraction)))
    train_q, valid_q = graph.train_queries[:-n_valid], graph.train_queries[-n_valid:]
    splits = {"valid": cite_queries(graph.cites, valid_q, N, rng, dc.n_pos, dc.n_neg),
              "test": cite_queries(graph.cites, graph.test_queries, N, rng, dc.n_pos, dc.n_neg)}
    cross = graph.cross_domain[splits["test"].queries]
    splits["test_cross"] = dataclasses.replace(
        splits["test"], queries=splits["test"].queries[cross],
        positives=[p for p, c in zip(splits["test"].positives, cross, strict=True) if c],
        candidates=[p for p, c in zip(splits["test"].candidates, cross, strict=True) if c])
    triplets = specter_triplets(graph.cites, train_q, N, rng, dc.per_query, dc.hard_fraction)

    model = build_encoder(cfg.model, BERT_UNUSED.get).to(info.device)
    lc = cfg.loss
    task = citation_task(table, splits, TripletLoss(table, lc.lam, lc.lambda_mode, lc.kind, lc.margin), lc.score)
    batches = EpochBatches({"triplet": torch.as_tensor(triplets)}, dc.batch_size, np.random.default_rng(cfg.seed),
                           info.rank, info.world_size)
    untrained = {k.replace("test_", "test_untrained_", 1): v  # the seed's initial weights, resumed or not
                 for split in ("test", "test_cross") for k, v in task.evaluate(model, split).items()}
    res, scores = fit_task(D.wrap(model, info), task, batches, cfg.train, run_dir, resume_from=resume_from,
                           desc="multi2spe")
    enc = model.encoder
    with torch.no_grad():
        sums = [float(enc.map_weight(a).sum(0).abs().max()) for a in enc.insert_after] if cfg.model.k > 1 else []
    s1 = {"effective_weight_sum_max": max(sums, default=0.0),
          "embedding_std_min": float(embed_papers(model, table).std(0).min())}
    scores = scores | untrained
    n_params = sum(p.numel() for p in model.parameters())
    return record_fit(run_dir, f"Multi²SPE (K={cfg.model.k}) on the synthetic multi-domain graph", scores, fit=res,
                      started=t0, params=n_params,
                      details={"k": cfg.model.k, "triplets": len(triplets), "score": lc.score, **s1,
                               "queries": {k: len(v) for k, v in splits.items()}, "negatives_per_query": dc.n_neg},
                      notes=[f"valid_* / test_*: ranking each query's cited papers (up to {dc.n_pos}) among "
                             f"{dc.n_neg} random papers it does not cite by the {lc.score} of summed embeddings "
                             "(AP, NDCG over the whole list); test_cross_*: the cross-domain test queries; "
                             "test_untrained_*: the same encoder before training (spec §13.2's baseline).",
                             "effective_weight_sum_max: the largest |Σ_k (W_k - W̄)| entry over the inserted "
                             "layers (S1: zero); embedding_std_min: the smallest per-dimension std of the summed "
                             "embeddings over the papers (S1: not constant)."])
