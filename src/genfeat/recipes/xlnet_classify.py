"""XLNet fine-tuned for sequence (pair) classification and regression (thesis Y §2.2.3, Table 2.5; spec xlnet.md
§2.12): the query stream dropped, the content stream a bidirectional encoder, the <cls> state (or the mean of the
real tokens) into a task head, from an `xlnet_pretrain` run (its tokenizer, network and weights; `init scratch`:
the same network with random weights, the no-pretraining baseline).

    genfeat run xlnet_classify --preset bbc_100 --pretrained runs/xlnet-plm         # BBC News, 100 labels (real)
    genfeat run xlnet_classify --task SST-2 --data_dir glue/SST-2 --pretrained ...   # any GLUE task's TSVs
    genfeat run xlnet_classify --task dir:my_data --pretrained ...                  # your own train/valid/test files

    data        `data.labelled` (every task it names), `labels_per_class` training examples a class drawn with
                the run's seed (0: all), `limit_docs` examples a split (quick looks); the XLNet pair layout
                (`data.pair_inputs.encode_pairs`)
    task        `tasks.classification.SequenceClassification` (accuracy, GLUE's metric, ECE; Pearson for STS-B)
    network     `models.xlnet.heads.XLNetClassifier` on the pretrained run (`models.xlnet.inference`)
    paradigm    the reference's fine-tuning (`paradigms.finetune`), the best validation weights evaluated on test

Validation / test: BBC News - the stratified validation / test splits; your own files (`dir:PATH`) - valid / test
(valid: a stratified 10% of train when absent); GLUE - a stratified 10% of train.tsv / dev.tsv (GLUE's test labels
are hidden).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from genfeat.data.few_labels import per_class_subset
from genfeat.data.labelled import check_options, evenly_limited, load_labelled
from genfeat.data.pair_inputs import encode_pairs
from genfeat.errors import ConfigError
from genfeat.models.xlnet.heads import XLNetClassifier
from genfeat.models.xlnet.inference import check_init, finetune_network, load_pretrained
from genfeat.paradigms.finetune import FinetuneConfig, finetune
from genfeat.tasks.classification import SequenceClassification
from genfeat.train import distributed as D
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


@dataclass(frozen=True)
class XLNetClassifyConfig:
    seed: int = 0
    pretrained: str = ""  # an xlnet_pretrain run directory
    init: str = "pretrained"  # pretrained | scratch | body (the pretrained layers, fresh word embeddings)
    task: str = "bbc"  # bbc | a built task | dir:PATH (your own files, `data/labelled.py`) | a GLUE task (SST-2,
    #   MRPC, STS-B, ...) or a SuperGLUE pair task with data_dir
    data_dir: str = ""  # GLUE / SuperGLUE only: the folder with the task's train / dev files
    text_column: str = "text"  # dir:PATH only: the column names
    text_b_column: str = "text_b"
    label_column: str = "label"
    labels_per_class: int = 20  # labeled training examples per class (0: all); BBC: 20 x 5 classes = 100 labels
    split_seed: int = 0
    max_len: int = 256
    limit_docs: int = 0  # > 0: this many documents per split, spread evenly over it (tests, quick looks)
    pool: str = "last"  # the sequence summary: last (<cls>, the reference) | mean (of the real tokens)
    train: FinetuneConfig = field(default_factory=FinetuneConfig)

    def __post_init__(self) -> None:
        check_init(self.init)
        if self.pool not in ("last", "mean"):
            raise ConfigError(f"pool must be last or mean, got {self.pool!r}")
        check_options(self.task, self.data_dir, self.columns)

    @property
    def columns(self) -> tuple[str, str, str]:
        return self.text_column, self.text_b_column, self.label_column


def bbc_100() -> XLNetClassifyConfig:
    """BBC News topic classification with 100 labels (20 per class), from an `xlnet_pretrain` run (--pretrained)."""
    return XLNetClassifyConfig()


def tiny() -> XLNetClassifyConfig:
    """Seconds; for tests."""
    return XLNetClassifyConfig(labels_per_class=2, max_len=32, limit_docs=40,
                               train=FinetuneConfig(max_steps=4, batch_size=4, eval_every=2, warmup_steps=1))


PRESETS = {"bbc_100": bbc_100, "tiny": tiny}


def run(cfg: XLNetClassifyConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    load_pretrained(cfg.pretrained)  # fail fast, before any data is read
    seed_everything(cfg.seed)
    splits, regression, _, _ = load_labelled(cfg.task, cfg.data_dir, cfg.split_seed, cfg.columns)
    data = evenly_limited(splits, cfg.limit_docs)
    ytr = data["train"][1]
    idx = per_class_subset(ytr, 0 if regression else cfg.labels_per_class, cfg.seed)

    model, tok = finetune_network(XLNetClassifier, cfg.pretrained, cfg.init, cfg.train.dropout,
                                  1 if regression else int(ytr.max()) + 1, cfg.train.dropout, cfg.pool)
    model.to(D.setup(cfg.train.device).device)
    rows = {"train": encode_pairs(tok, [data["train"][0][i] for i in idx], cfg.max_len)
            | {"labels": torch.from_numpy(ytr[idx])}}
    rows |= {k: encode_pairs(tok, data[k][0], cfg.max_len) | {"labels": torch.from_numpy(data[k][1])}
             for k in ("valid", "test")}
    task = SequenceClassification(rows, glue_task=cfg.task)
    res, scores = finetune(model, task, cfg.train, cfg.seed, run_dir, f"xlnet_classify {cfg.task} ({cfg.init})",
                           resume_from)
    n_test, key = len(rows["test"]["labels"]), task.metric
    summary = record_fit(
        run_dir, f"XLNet fine-tuned on {cfg.task} ({len(idx)} labels, init {cfg.init})",
        {f"valid_{key}": res.best_metric, **scores}, fit=res, started=t0,
        params=sum(p.numel() for p in model.parameters()),
        details={"task": cfg.task, "init": cfg.init, "pretrained": str(cfg.pretrained), "labels": int(len(idx)),
                 "test_examples": n_test},
        notes=[f"Test metrics of the best-validation weights ({n_test:,} test examples)."])
    if D.current().is_main:
        print(f"test {key} {scores['test_' + key]:.4f} (valid {res.best_metric:.4f} at step {res.best_step}; "
              f"{len(idx)} labels) -> {run_dir}")
    return summary
