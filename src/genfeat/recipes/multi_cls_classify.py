"""Recipe `multi_cls_classify`: few-shot fine-tuning of Multi-CLS BERT with the mean-subtracted facet aggregation
(thesis C §5.2, Eq. 5.4), or of plain BERT (the "Pretrained" row of Table 5.1).

    genfeat run multi_cls_classify --preset bbc --pretrained runs/mcls-k5 --labels 100 --seed 0
    genfeat run multi_cls_classify --preset bbc --pretrained minilm-l6 --labels 100       # the released encoder
    genfeat run multi_cls_classify --preset bbc --task dir:DATA --pretrained minilm-l6 --k 5   # your own files

    data -> task    a labelled task (`data.labelled`: BBC News, built tasks, GLUE / SuperGLUE, dir:PATH), `labels`
                    training examples (100, 1000, or 0 for the full training split), each seed drawing its own
                    subset (every model sees the same subset for the same seed); `tasks.classification.
                    SequenceClassification`: test accuracy, macro-F1 and ECE (App. D.1, Eq. D.1)
    network         `pretrained`: a `multi_cls_pretrain` run (its K, inserted maps and facet heads), or an HF BERT
                    directory / `minilm-l6` fine-tuned as plain BERT ([CLS] -> Linear -> tanh -> classifier), or K
                    facets built on it (`k`; `models.multi_cls.inference.load_classifier`)
    paradigm        pretrain -> fine-tune: one phase (`paradigms.fit_task`), selection on the validation split
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
from genfeat.errors import ConfigError
from genfeat.models.bert import BertModel
from genfeat.models.bert.config import check_max_len
from genfeat.models.multi_cls import check_facet_tokens
from genfeat.models.multi_cls.inference import load_classifier
from genfeat.models.multi_cls.model import AGGREGATIONS
from genfeat.paradigms import fit_task
from genfeat.tasks.classification import SequenceClassification, encode_rows
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


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


PRESETS = {"bbc": classify_bbc, "tiny": classify_tiny}


def run(cfg: MultiCLSClassifyConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
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
