"""Multi-CLS BERT (thesis C §5.2): continued pretraining of a BERT checkpoint with K facet CLS tokens, and
few-shot fine-tuning with the mean-subtracted facet aggregation.

    genfeat data fetch minilm-l6 bbc-news
    genfeat run multi_cls_pretrain --preset minilm_bbc --model.k 5 --out runs/mcls-k5    # MLM+TF-IDF+SO+MCQT
    genfeat run multi_cls_pretrain --preset minilm_bbc --model.k 1 --out runs/mcls-k1    # Ours, K = 1
    genfeat run multi_cls_pretrain --preset minilm_bbc --objective mtl --out runs/mtl     # Table 5.1's MTL baseline
    genfeat run multi_cls_classify --preset bbc --pretrained runs/mcls-k5 --labels 100 --seed 0
    genfeat run multi_cls_classify --preset bbc --pretrained minilm-l6 --labels 100       # the released encoder

Pretraining (paradigm: one phase, the unweighted sum of four losses, `models/multi_cls/pretrain.py`): documents of
the BBC News training split (the fine-tuning test articles are never read) or any genfeat corpus, batches of
N triples [A; P; H] (`data/multi_cls.py`). Validation: MCQT loss and how often the positive is ranked first
among the 2N candidates on fixed held-out triples (chance: 1 / 2N).

Fine-tuning (paradigm: pretrain -> fine-tune, `paradigms.fit_task` on a `SequenceClassification` task):
`labels` training examples (100, 1000, or 0 for the full training split), each seed drawing its own subset (every
model sees the same subset for the same seed); model selection on the validation split; test accuracy, macro-F1
and ECE (App. D.1, Eq. D.1) of the selected weights. `pretrained`: a `multi_cls_pretrain` run (its K, inserted
maps and facet heads), or an HF BERT directory / `minilm-l6` fine-tuned as plain BERT ([CLS] -> Linear -> tanh ->
classifier; the "Pretrained" row of Table 5.1).

Deviations (CPU scale): MiniLM-L6-H384 instead of BERT-Base (inserted maps after blocks 2 and 4 of 6), the
inserted maps start at I + N(0, 0.01²) (spec §4.2 [I]: the checkpoint had no Multi-CLS pretraining), AdamW with
bias correction in pretraining (the reference's Adam has none), far fewer pretraining tokens.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from genfeat.data.batches import EpochBatches
from genfeat.data.few_labels import random_subset
from genfeat.data.labelled import check_options, load_labelled
from genfeat.data.multi_cls import TripleBatches
from genfeat.data.sentences import bbc_documents
from genfeat.errors import ConfigError
from genfeat.models.bert import BertModel, bert_dir, from_pretrained
from genfeat.models.bert.hf import mlm_head_from_pretrained
from genfeat.models.bert.tokenizer import load_wordpiece
from genfeat.models.multi_cls import (
    MultiCLSConfig,
    check_facet_tokens,
)
from genfeat.models.multi_cls.inference import build_pretrainer, load_classifier
from genfeat.models.multi_cls.model import AGGREGATIONS
from genfeat.paradigms import fit_task
from genfeat.tasks.classification import SequenceClassification, encode_rows
from genfeat.tasks.pretraining import MultiCLSPretraining
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig, build_optimizer, check_early_stop_metric
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


# ----------------------------------------------------------------------------------------- pretraining
@dataclass(frozen=True)
class PretrainData:
    corpus: str = "bbc-news"  # the BBC News training-split articles
    split_seed: int = 0  # the BBC split shared with multi_cls_classify
    max_len: int = 128  # total, with [CLS], the K facets and the [SEP]s
    n_triples: int = 10  # N: 3N sequences per batch (the thesis's BERT-Base batch of 30)
    hard_negatives: bool = True
    batch_groups: int = 1  # the loss on this many groups of a batch's triples, averaged (a torchrun rank's share is
    # one: one process with W groups trains what W ranks do)
    valid_batches: int = 8
    limit_docs: int = 0  # > 0: the first N documents (tests)

    def __post_init__(self) -> None:
        if self.batch_groups < 1 or self.n_triples % self.batch_groups:
            raise ConfigError(f"data.batch_groups must be >= 1 and divide data.n_triples={self.n_triples}, got "
                              f"{self.batch_groups}")


@dataclass(frozen=True)
class MultiCLSPretrainConfig:
    seed: int = 0
    init: str = "minilm-l6"  # the BERT checkpoint to continue from (an HF directory, or minilm-l6)
    data: PretrainData = field(default_factory=PretrainData)
    model: MultiCLSConfig = field(default_factory=lambda: MultiCLSConfig(insert_init="identity"))
    train: TrainConfig = field(default_factory=lambda: TrainConfig(
        max_steps=2000, lr=2e-5, warmup_steps=2, schedule="linear", min_lr_ratio=0.0, weight_decay=0.02,
        clip_norm=1.0, precision="fp32", log_every=20, eval_every=250, keep_last=1, early_stop_metric="valid_loss"))
    heads_lr: float = 0.0  # > 0: what the checkpoint lacks (inserted maps, the four heads) trains at this rate,
    #   the checkpoint's BERT at train.lr (a deviation for short CPU runs; the thesis: one rate, 2e9 tokens)
    train_inserted_layers_in_pretraining: bool = True  # the thesis; False: the released script, whose optimizer
    #   leaves out the inserted maps and the SO projection L^SO (they stay at their initial values; spec §4.2)
    objective: str = "multi_cls"  # multi_cls (K facets, `model`) | mtl (Table 5.1's MTL baseline: QT and SO on
    #   the tanh-pooled [CLS] of plain BERT, no facets: the facet options under `model` are not read)

    def __post_init__(self) -> None:
        if self.objective not in ("multi_cls", "mtl"):
            raise ConfigError(f"objective must be multi_cls or mtl, got {self.objective!r}")
        if self.objective == "mtl" and not self.train_inserted_layers_in_pretraining:
            raise ConfigError("objective=mtl has no inserted layers: train_inserted_layers_in_pretraining does not "
                              "apply to it")


def minilm_bbc() -> MultiCLSPretrainConfig:
    """MiniLM-L6 continued on the BBC News training articles: 2,000 steps of 10 triples (CPU: about an hour)."""
    return MultiCLSPretrainConfig()


def pretrain_tiny() -> MultiCLSPretrainConfig:
    """Seconds; for tests (pass `init` a small BERT directory and a small corpus)."""
    return MultiCLSPretrainConfig(data=PretrainData(max_len=48, n_triples=2, valid_batches=2),
                                  model=MultiCLSConfig(k=2, insert_init="identity"),
                                  train=dataclasses.replace(MultiCLSPretrainConfig().train, max_steps=6, eval_every=3,
                                                            log_every=2, keep_last=2))


PRETRAIN_PRESETS = {"minilm_bbc": minilm_bbc, "tiny": pretrain_tiny}


PRETRAIN_METRICS = tuple(f"valid_{k}" for k in MultiCLSPretraining.metrics)


def check_max_len(name: str, max_len: int, positions: int) -> None:
    if max_len > positions:
        raise ConfigError(f"{name} {max_len} is longer than the pretrained encoder's {positions} positions "
                          f"(max_position_embeddings): give at most {positions}")


def run_pretrain(cfg: MultiCLSPretrainConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    check_early_stop_metric(cfg.train, PRETRAIN_METRICS)
    info = D.setup(cfg.train.device)
    t0 = time.perf_counter()
    seed_everything(cfg.seed)
    src = bert_dir(cfg.init)
    bert, bcfg = from_pretrained(src)
    check_max_len("data.max_len", cfg.data.max_len, bcfg.max_len)
    tok = load_wordpiece(src)
    k = 0 if cfg.objective == "mtl" else cfg.model.k  # facet tokens in the input
    if k:
        check_facet_tokens(tok.id_to_token, cfg.model.first_facet_id, k)
    pre = build_pretrainer(cfg.objective, cfg.model, bert.train(), cfg.data.hard_negatives, cfg.data.batch_groups)
    head = mlm_head_from_pretrained(src)
    if head is not None:
        pre.load_mlm_head(*head)
    pre = pre.to(info.device)
    docs = bbc_documents(cfg.data.split_seed, cfg.data.limit_docs, cfg.data.corpus)
    budget = cfg.data.max_len - k

    def make(d: list[list[str]], seed: int, rank: int = 0, world: int = 1) -> TripleBatches:
        return TripleBatches(d, tok, cfg.data.n_triples, budget, seed, cfg.data.hard_negatives, rank, world)
    valid_it = make(docs["valid"], 12_345)
    valid = [next(valid_it) for _ in range(cfg.data.valid_batches)]
    n_params = sum(p.numel() for p in pre.parameters())
    if info.is_main:
        print(f"multi_cls_pretrain {cfg.objective} K={k} λ={pre.lam}: {n_params / 1e6:.2f}M parameters, "
              f"{len(docs['train'])} documents, {3 * cfg.data.n_triples} sequences per batch, from {src} (MLM head: "
              f"{'the checkpoint' if head is not None else 'fresh, the checkpoint has none'})")
    train = make(docs["train"], cfg.seed, info.rank, info.world_size)
    if not cfg.train_inserted_layers_in_pretraining:
        pre.encoder.inserted.requires_grad_(False)
        pre.so_proj.requires_grad_(False)
    bert_ids = {id(p) for p in pre.bert.parameters()}
    opt = build_optimizer(pre, cfg.train, [p for p in pre.parameters() if id(p) not in bert_ids and p.requires_grad],
                          cfg.heads_lr)
    task = MultiCLSPretraining(valid, cfg.train.early_stop_metric.removeprefix("valid_"), cfg.train.early_stop_mode)
    res, final = fit_task(D.wrap(pre, info), task, train, cfg.train, run_dir, optimizer=opt,
                          resume_from=resume_from, desc="mtl" if k == 0 else f"multi-cls K={k}")
    title = "MTL pretraining (pooled [CLS])" if k == 0 else f"Multi-CLS BERT pretraining (K={k}, λ={pre.lam})"
    return record_fit(run_dir, title, final,
                      fit=res, started=t0, params=n_params, details={"k": k, "objective": cfg.objective, "lam": pre.lam,
                                                       "init": str(src), "hard_negatives": cfg.data.hard_negatives,
                                                       "heads_lr": cfg.heads_lr,
                                                       "mlm_head": "checkpoint" if head is not None else "fresh"},
                      notes=[f"Validation: {len(valid)} fixed batches of held-out articles; positive-first is the "
                             f"share of anchors whose next sequence scores highest among {2 * cfg.data.n_triples} "
                             f"(chance {1 / (2 * cfg.data.n_triples):.3f})."])


# ----------------------------------------------------------------------------------------- fine-tuning
@dataclass(frozen=True)
class MultiCLSClassifyConfig:
    seed: int = 0  # the fine-tuning seed: initialisation, batch order and the labeled subset
    pretrained: str = "minilm-l6"  # a multi_cls_pretrain run, or an HF BERT directory / minilm-l6 (plain BERT)
    task: str = "bbc"  # bbc (BBC News topic, 5 classes); a built task (debian-sections, wordnet-lexnames,
    #   wordnet-wic: `genfeat data build`); dir:PATH (your own train / valid / test .tsv, .csv or .jsonl files,
    #   `data/labelled.py`); a GLUE task (SST-2, MRPC, STS-B, ...) or a SuperGLUE pair task (BoolQ, CB, RTE, WiC)
    data_dir: str = ""  # GLUE / SuperGLUE only: the folder with the task's train / dev files
    text_column: str = "text"  # dir:PATH only: the column names
    text_b_column: str = "text_b"
    label_column: str = "label"
    split_seed: int = 0
    labels: int = 100  # training examples drawn per seed; 0: the whole training split
    max_len: int = 128  # total, with [CLS], the K facets and the [SEP]s
    aggregation: str = "reparam"  # reparam (Eq. 5.4) | sum (the Table 5.2 ablation)
    k: int = 0  # from a BERT directory: 0 fine-tunes plain BERT; K > 0 builds K facets on it (identity-initialised
    #   inserted maps, pooler W_O = I + N(0, 0.02²): no Multi-CLS pretraining needed); a pretraining run sets its own
    insert_bias: bool = False  # true: the reference's zero-initialised trainable bias on the inserted maps at
    #   fine-tuning; false (a deviation, the setting of every recorded page): the maps as pretrained, no bias
    dropout: float = 0.1
    train: TrainConfig = field(default_factory=lambda: TrainConfig(
        max_steps=500, lr=3e-5, warmup_steps=50, schedule="linear", min_lr_ratio=0.0, weight_decay=0.0,
        clip_norm=1.0, precision="fp32", log_every=10, eval_every=50, keep_last=1))
    batch_size: int = 4  # the thesis: 4 for 100 examples, 8 for 1k, 16 for full

    def __post_init__(self) -> None:
        if self.labels < 0 or self.batch_size < 1 or self.k < 0:
            raise ConfigError("labels must be >= 0, batch_size >= 1 and k >= 0")
        check_options(self.task, self.data_dir, self.columns)
        if self.aggregation not in AGGREGATIONS:  # here too: a plain-BERT run never builds the facet pooler
            raise ConfigError(f"aggregation must be one of {', '.join(AGGREGATIONS)}, got {self.aggregation!r}")


    @property
    def columns(self) -> tuple[str, str, str]:
        return self.text_column, self.text_b_column, self.label_column


def classify_bbc() -> MultiCLSClassifyConfig:
    """BBC News topic with 100 training examples (GLUE-100 style), batch 4, up to 500 updates."""
    return MultiCLSClassifyConfig()


def classify_tiny() -> MultiCLSClassifyConfig:
    """Seconds; for tests."""
    return MultiCLSClassifyConfig(labels=10, max_len=32, batch_size=2, train=dataclasses.replace(
        MultiCLSClassifyConfig().train, max_steps=4, eval_every=2, warmup_steps=1, log_every=2))


CLASSIFY_PRESETS = {"bbc": classify_bbc, "tiny": classify_tiny}


def run_classify(cfg: MultiCLSClassifyConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    info = D.setup(cfg.train.device)
    t0 = time.perf_counter()
    data, regression, _, data_sha256 = load_labelled(cfg.task, cfg.data_dir, cfg.split_seed, cfg.columns)
    seed_everything(cfg.seed)
    n_labels = 1 if regression else int(max(int(y.max()) for _, y in data.values())) + 1
    model, tok, k = load_classifier(cfg.pretrained, n_labels, cfg.dropout, cfg.k, cfg.aggregation, cfg.insert_bias)
    check_max_len("max_len", cfg.max_len, next(m for m in model.modules() if isinstance(m, BertModel)).cfg.max_len)
    model.to(info.device)
    sub = random_subset(len(data["train"][1]), cfg.labels, cfg.seed)
    rows = {name: encode_rows(tok, pairs, y, sub if name == "train" else np.arange(len(y)), cfg.max_len - k)
            for name, (pairs, y) in data.items()}
    if k:
        for r in rows.values():
            check_facet_tokens(tok.id_to_token, model.encoder.cfg.first_facet_id, k, tok.token_to_id("[CLS]"),
                               r["input_ids"])
    task = SequenceClassification(rows, trim_padding=True)  # BERT rows are right-padded
    batch = min(cfg.batch_size, len(sub))
    batches = EpochBatches(task.train_rows, batch, np.random.default_rng(cfg.seed), info.rank, info.world_size)
    res, scores = fit_task(D.wrap(model, info), task, batches, cfg.train, run_dir, resume_from=resume_from,
                           desc=f"multi_cls K={k}" if k else "bert")
    summary = record_fit(
        run_dir, f"{'Multi-CLS K=' + str(k) if k else 'BERT'} fine-tuned on {cfg.task} ({len(sub)} examples)",
        scores, fit=res, started=t0, params=sum(p.numel() for p in model.parameters()),
        details={"task": cfg.task, "data_sha256": data_sha256, "k": k, "labels": int(len(sub)),
                 "test_examples": int(len(rows["test"]["labels"])),
                 "pretrained": cfg.pretrained,
                 "aggregation": cfg.aggregation if k else None},
        notes=[f"Selected on the validation {task.metric}; test metrics (and ECE, Eq. D.1, 10 equal-width bins, "
               f"percent, for classification) of the selected weights over {len(rows['test']['labels'])} test "
               "examples."])
    if info.is_main:
        print(f"test {task.metric} {scores['test_' + task.metric]:.4f} (valid {scores['valid_' + task.metric]:.4f}, "
              f"{len(sub)} examples) -> {run_dir}")
    return summary
