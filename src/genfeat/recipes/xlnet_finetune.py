"""XLNet fine-tuning recipes (thesis Y §2.2.3; spec xlnet.md §2.12): the query stream dropped, the content stream a
bidirectional encoder, starting from an `xlnet_pretrain` run (its tokenizer, network and weights; `init scratch`:
the same network with random weights, the no-pretraining baseline).

    genfeat run xlnet_classify --preset bbc_100 --pretrained runs/xlnet-plm         # BBC News, 100 labels (real)
    genfeat run xlnet_classify --task SST-2 --data_dir glue/SST-2 --pretrained ...   # any GLUE task's TSVs
    genfeat run xlnet_classify --task dir:my_data --pretrained ...                  # your own train/valid/test files
    genfeat run xlnet_race --data_dir RACE --pretrained ...                          # RACE JSON (train/dev/test)
    genfeat run xlnet_squad --train_file train-v2.0.json --dev_file dev-v2.0.json --pretrained ...

One fine-tuning method for all (`finetune`, trained by `train.fit`: checkpoints, exact `--resume`): AdamW, linear
warm-up then linear decay, gradient clipping 1.0, evaluation every `train.eval_every` steps on a validation set,
the best validation checkpoint evaluated once on the test set.
Validation / test per task: BBC News - the stratified validation / test splits (labels_per_class labeled
training articles); your own files (`dir:PATH`, `data/labelled.py`) - valid / test (valid: a stratified 10% of
train when absent); GLUE - a stratified 10% of train.tsv / dev.tsv (GLUE's test labels are hidden); RACE -
dev / test; SQuAD - no selection (the last checkpoint), dev EM / F1 with the null threshold 0 and with the
threshold that maximises dev F1 (the reference's reported setting).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from genfeat.config import atomic_write_text
from genfeat.data.batches import StreamBatches
from genfeat.data.labelled import check_options, load_labelled
from genfeat.data.pair_inputs import pair_inputs
from genfeat.data.race import load_race, race_inputs
from genfeat.data.squad import load_squad_json, squad_features
from genfeat.data.tokenizers import SentencePieceTokenizer
from genfeat.errors import ConfigError
from genfeat.models.xlnet.heads import XLNetClassifier, XLNetForSquad, XLNetMultipleChoice
from genfeat.models.xlnet.inference import load_pretrained
from genfeat.paradigms import fit_task
from genfeat.tasks.base import Task
from genfeat.tasks.classification import MultipleChoice, SequenceClassification
from genfeat.tasks.span_qa import SpanQA
from genfeat.train import distributed as D
from genfeat.train.checkpoint import load_weights
from genfeat.train.loop import FitResult, TrainConfig, effective_warmup
from genfeat.train.optim import finetune_optimizer
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything
from genfeat.train.step import OneLoss

Batch = dict[str, torch.Tensor]


@dataclass(frozen=True)
class FinetuneConfig:
    max_steps: int = 400
    batch_size: int = 16
    lr: float = 1e-4
    warmup_steps: int = 40
    weight_decay: float = 0.01  # not on LayerNorm parameters and biases (the reference's exclusion)
    layer_decay: float = 1.0  # layer l trains at lr * layer_decay ** (N - 1 - l) (reference: 0.75 for SQuAD)
    adam_eps: float = 1e-8
    dropout: float = 0.1  # dropout and attention dropout (the reference's fine-tuning values)
    eval_every: int = 50
    device: str = "auto"  # under torchrun: one rank per device, each with its share of every batch (DDP)
    reschedule: bool = False  # a resume with another max_steps: accept the decay recomputed over it (TrainConfig's)

    def __post_init__(self) -> None:
        if min(self.max_steps, self.batch_size, self.eval_every) < 1 or self.lr <= 0:
            raise ConfigError("train.max_steps, batch_size and eval_every must be >= 1 and lr > 0")
        if not 0.0 < self.layer_decay <= 1.0:
            raise ConfigError(f"train.layer_decay must be in (0, 1], got {self.layer_decay}")
        if self.warmup_steps < 0 or self.weight_decay < 0 or self.adam_eps <= 0:
            raise ConfigError("train.warmup_steps and weight_decay must be >= 0 and adam_eps > 0")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"train.dropout must be in [0, 1), got {self.dropout}")


INITS = ("pretrained", "scratch", "body")  # what `build` loads: everything, nothing, all but the word embeddings


def _check_init(init: str) -> None:
    if init not in INITS:  # `build` treats anything but pretrained / body as scratch: a typo must not get there
        raise ConfigError(f"init must be {', '.join(INITS)}, got {init!r}")


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
        _check_init(self.init)
        if self.pool not in ("last", "mean"):
            raise ConfigError(f"pool must be last or mean, got {self.pool!r}")
        check_options(self.task, self.data_dir, self.columns)

    @property
    def columns(self) -> tuple[str, str, str]:
        return self.text_column, self.text_b_column, self.label_column


@dataclass(frozen=True)
class XLNetRaceConfig:
    seed: int = 0
    pretrained: str = ""
    init: str = "pretrained"
    data_dir: str = ""  # RACE/ with train/, dev/, test/ (each middle/ and high/)
    max_len: int = 512
    max_qa: int = 128
    train: FinetuneConfig = field(default_factory=lambda: FinetuneConfig(batch_size=8, lr=2e-5, max_steps=12000,
                                                                         warmup_steps=1000, eval_every=1000,
                                                                         weight_decay=0.0, adam_eps=1e-6))

    def __post_init__(self) -> None:
        _check_init(self.init)


@dataclass(frozen=True)
class XLNetSquadConfig:
    seed: int = 0
    pretrained: str = ""
    init: str = "pretrained"
    train_file: str = ""
    dev_file: str = ""
    max_len: int = 512
    doc_stride: int = 128
    max_query: int = 64
    max_answer: int = 64
    train: FinetuneConfig = field(default_factory=lambda: FinetuneConfig(batch_size=48, lr=3e-5, max_steps=8000,
                                                                         warmup_steps=1000, eval_every=8000,
                                                                         layer_decay=0.75, adam_eps=1e-6))

    def __post_init__(self) -> None:
        _check_init(self.init)


def bbc_100() -> XLNetClassifyConfig:
    """BBC News topic classification with 100 labels (20 per class), from an `xlnet_pretrain` run (--pretrained)."""
    return XLNetClassifyConfig()


def classify_tiny() -> XLNetClassifyConfig:
    """Seconds; for tests."""
    return XLNetClassifyConfig(labels_per_class=2, max_len=32, limit_docs=40,
                               train=FinetuneConfig(max_steps=4, batch_size=4, eval_every=2, warmup_steps=1))


CLASSIFY_PRESETS = {"bbc_100": bbc_100, "tiny": classify_tiny}


def race() -> XLNetRaceConfig:
    """RACE multiple choice with the reference's fine-tuning settings (512 tokens, batch 8, lr 2e-5, 12k steps)."""
    return XLNetRaceConfig()


def race_tiny() -> XLNetRaceConfig:
    """Seconds; for tests."""
    return XLNetRaceConfig(max_len=48, max_qa=16,
                           train=FinetuneConfig(max_steps=3, batch_size=2, eval_every=3, warmup_steps=1))


def squad2() -> XLNetSquadConfig:
    """SQuAD 2.0 with the reference's settings (512 tokens, stride 128, batch 48, lr 3e-5, layer decay 0.75)."""
    return XLNetSquadConfig()


def squad_tiny() -> XLNetSquadConfig:
    """Seconds; for tests."""
    return XLNetSquadConfig(max_len=64, doc_stride=32, max_query=16,
                            train=FinetuneConfig(max_steps=3, batch_size=4, eval_every=3, warmup_steps=1))


RACE_PRESETS = {"race": race, "tiny": race_tiny}
SQUAD_PRESETS = {"squad2": squad2, "tiny": squad_tiny}


# ----------------------------------------------------------------------------------------- shared
def build(cls: Callable[..., nn.Module], cfg: Any, *args, **kwargs) -> tuple[nn.Module, SentencePieceTokenizer]:
    """The task model on the pretrained run's network (fine-tuning mode: no memory, bi attention), its weights
    loaded unless init=scratch (init=body: all but the word embeddings, which keep their fresh initialisation --
    a diagnostic separating what the pretrained layers and the pretrained tied embeddings contribute)."""
    tok, model_cfg, weights = load_pretrained(cfg.pretrained)
    ft = dataclasses.replace(model_cfg, dropout=cfg.train.dropout, dropatt=cfg.train.dropout, mem_len=0,
                             reuse_len=0, bi_data=False, attn_type="bi")
    model = cls(ft, *args, **kwargs)
    if cfg.init in ("pretrained", "body"):
        state = {k[len("transformer."):]: v for k, v in load_weights(weights).items() if k.startswith("transformer.")}
        if cfg.init == "body":  # keep this model's freshly initialised (tied) word embeddings
            state["word_embedding.weight"] = model.transformer.word_embedding.weight.detach().clone()
        model.transformer.load_state_dict(state)
    model.transformer.mask_emb.requires_grad_(False)  # the query stream's input: unused without a perm mask
    return model, tok


def finetune(model: nn.Module, task: Task, ft: FinetuneConfig, seed: int, run_dir: Path, desc: str,
             resume_from: Path | None = None, select: bool = True, final_splits: tuple[str, ...] = ("test",)
             ) -> tuple[FitResult, dict[str, float]]:
    """The reference's fine-tuning as one `fit_task` phase: AdamW with layer-wise decay, linear warm-up then decay,
    clipping at 1, fp32, a checkpoint at every evaluation; batches of `task.train_rows` (under torchrun DDP, each
    rank its share of every batch). Keeps the best weights on the task's selection split (`select`), else the
    last; returns the fit result and the evaluation of `final_splits`."""
    info = D.current()
    opt = finetune_optimizer(model, ft.lr, ft.weight_decay, ft.layer_decay, ft.adam_eps)
    warmup = effective_warmup(ft.warmup_steps, ft.max_steps)
    method = OneLoss(task.loss, opt, lambda s: min(
        (s + 1) / max(1, warmup), max(0.0, (ft.max_steps - s) / max(1, ft.max_steps - warmup))))
    loop = TrainConfig(max_steps=ft.max_steps, clip_norm=1.0, precision="fp32", log_every=10, eval_every=ft.eval_every,
                       ckpt_every=ft.eval_every, reschedule=ft.reschedule)
    batches = StreamBatches(task.train_rows, ft.batch_size, np.random.default_rng(seed), info.rank, info.world_size)
    return fit_task(D.wrap(model, info), task, batches, loop, run_dir, method=method, resume_from=resume_from,
                    desc=desc, select=select, final_splits=final_splits)


# ----------------------------------------------------------------------------------------- classification
def classification_data(cfg: XLNetClassifyConfig) -> tuple[dict[str, tuple[list, np.ndarray]], bool]:
    """{"train", "valid", "test"} -> (texts as (a, b | None) pairs, labels), and whether it is regression
    (`data.labelled`: every task name the recipe takes); `limit_docs` keeps that many examples a split, evenly
    spaced (the splits are ordered by class)."""
    splits, regression, _, _ = load_labelled(cfg.task, cfg.data_dir, cfg.split_seed, cfg.columns)
    out = {}
    for k, (pairs, y) in splits.items():
        idx = np.arange(len(y))
        if 0 < cfg.limit_docs < len(idx):
            idx = idx[np.linspace(0, len(idx) - 1, cfg.limit_docs).round().astype(np.int64)]
        out[k] = ([pairs[i] for i in idx], y[idx])
    return out, regression


def run_classify(cfg: XLNetClassifyConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    load_pretrained(cfg.pretrained)  # fail fast, before any data is read
    seed_everything(cfg.seed)
    data, regression = classification_data(cfg)
    ytr = data["train"][1]
    rng = np.random.default_rng(cfg.seed)
    if cfg.labels_per_class and not regression:
        idx = np.sort(np.concatenate([rng.choice(np.flatnonzero(ytr == c), cfg.labels_per_class, replace=False)
                                      for c in np.unique(ytr)]))
    else:
        idx = np.arange(len(ytr))
    model, tok = build(XLNetClassifier, cfg, 1 if regression else int(ytr.max()) + 1, cfg.train.dropout, cfg.pool)
    model.to(D.setup(cfg.train.device).device)
    sep, cls, pad = tok.ids["<sep>"], tok.ids["<cls>"], tok.ids["<pad>"]

    def inputs(pairs: list) -> Batch:
        a = [tok.encode(" ".join(p[0].split())) for p in pairs]
        b = None if pairs and pairs[0][1] is None else [tok.encode(" ".join(p[1].split())) for p in pairs]
        return pair_inputs(a, b, cfg.max_len, sep, cls, pad)
    train = inputs([data["train"][0][i] for i in idx]) | {"labels": torch.from_numpy(ytr[idx])}
    xv, yv = inputs(data["valid"][0]), torch.from_numpy(data["valid"][1])
    xt, yt = inputs(data["test"][0]), torch.from_numpy(data["test"][1])
    task = SequenceClassification({"train": train, "valid": xv | {"labels": yv}, "test": xt | {"labels": yt}},
                                  glue_task=cfg.task)
    key = task.metric
    res, scores = finetune(model, task, cfg.train, cfg.seed, run_dir, f"xlnet_classify {cfg.task} ({cfg.init})",
                           resume_from)
    test = {k.removeprefix("test_"): v for k, v in scores.items()}
    summary = record_fit(
        run_dir, f"XLNet fine-tuned on {cfg.task} ({len(idx)} labels, init {cfg.init})",
        {f"valid_{key}": res.best_metric, **{f"test_{k}": v for k, v in test.items()}},
        fit=res, started=t0, params=sum(p.numel() for p in model.parameters()),
        details={"task": cfg.task, "init": cfg.init, "pretrained": str(cfg.pretrained), "labels": int(len(idx)),
                 "test_examples": int(len(yt))},
        notes=[f"Test metrics of the best-validation weights ({len(yt):,} test examples)."])
    if D.current().is_main:
        print(f"test {key} {test[key]:.4f} (valid {res.best_metric:.4f} at step {res.best_step}; {len(idx)} labels) "
              f"-> {run_dir}")
    return summary


# ----------------------------------------------------------------------------------------- RACE
def run_race(cfg: XLNetRaceConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    if not cfg.data_dir:
        raise ConfigError("xlnet_race needs data_dir (RACE/ with train/, dev/ and test/)")
    seed_everything(cfg.seed)  # before the task head is initialised
    model, tok = build(XLNetMultipleChoice, cfg, dropout=cfg.train.dropout)
    model.to(D.setup(cfg.train.device).device)
    split = {k: load_race(Path(cfg.data_dir) / k) for k in ("train", "dev", "test")}
    x = {k: race_inputs(v, tok, cfg.max_len, cfg.max_qa) for k, v in split.items()}
    task = MultipleChoice(x)
    res, _ = finetune(model, task, cfg.train, cfg.seed, run_dir, f"xlnet_race ({cfg.init})", resume_from,
                      final_splits=())
    pred = task.predict(model, "test")
    levels = np.array([e.level for e in split["test"]])
    test = {"test_acc": task.score(pred, "test")["accuracy"]}
    for lv in ("middle", "high"):
        if (levels == lv).any():
            sel = torch.from_numpy(levels == lv)
            test[f"test_acc_{lv}"] = float((pred[sel].argmax(-1) == x["test"]["labels"][sel]).float().mean())
    summary = record_fit(run_dir, f"XLNet on RACE (init {cfg.init})", {"dev_acc": res.best_metric, **test},
                         fit=res, started=t0, params=sum(p.numel() for p in model.parameters()),
                         details={"init": cfg.init, "pretrained": str(cfg.pretrained)})
    if D.current().is_main:
        print(f"RACE test accuracy {test['test_acc']:.4f} (dev {res.best_metric:.4f}) -> {run_dir}")
    return summary


# ----------------------------------------------------------------------------------------- SQuAD
def run_squad(cfg: XLNetSquadConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    if not cfg.train_file or not cfg.dev_file:
        raise ConfigError("xlnet_squad needs train_file and dev_file (SQuAD JSON)")
    seed_everything(cfg.seed)  # before the task head is initialised
    model, tok = build(XLNetForSquad, cfg, dropout=cfg.train.dropout)
    model.to(D.setup(cfg.train.device).device)
    examples = {k: load_squad_json(f) for k, f in (("train", cfg.train_file), ("dev", cfg.dev_file))}
    task = SpanQA(examples, {k: squad_features(v, tok, cfg.max_len, cfg.doc_stride, cfg.max_query)
                             for k, v in examples.items()}, cfg.max_answer)
    res, _ = finetune(model, task, cfg.train, cfg.seed, run_dir, f"xlnet_squad ({cfg.init})", resume_from,
                      select=False, final_splits=())
    out = task.predict(model, "dev")
    scores = task.score(out, "dev")
    if D.current().is_main:
        atomic_write_text(run_dir / "predictions.json", json.dumps(task.answers(out, "dev")[0], indent=1))
    summary = record_fit(
        run_dir, f"XLNet on SQuAD 2.0 (init {cfg.init})",
        {f"dev_{k}": round(v, 2) for k, v in scores.items() if k != "null_threshold"},
        fit=res, started=t0, params=sum(p.numel() for p in model.parameters()), last_weights=True,
        details={"init": cfg.init, "pretrained": str(cfg.pretrained), "best_threshold": scores["null_threshold"],
                 "dev_questions": len(examples["dev"])},
        notes=["The last weights (no model selection); EM / F1 with the null threshold 0 and with the threshold "
               "that maximises dev F1 (the reference's reported setting)."])
    if D.current().is_main:
        print(f"SQuAD dev EM {scores['exact']:.2f} F1 {scores['f1']:.2f} (best threshold: F1 "
              f"{scores['f1_best_threshold']:.2f}) -> {run_dir}")
    return summary
