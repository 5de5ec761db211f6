"""Next-item recommendation with SASRec / GRU4Rec and every output head, or RepeatNet (thesis C §2.5).

    genfeat data fetch ml-100k
    genfeat run seqrec --preset sasrec_ml100k                      # SASRec + Softmax (Table 2.7's first row)
    genfeat run seqrec --preset sasrec_ml100k --model.head c+mi    # any head of genfeat.heads.config.HEADS
    genfeat run seqrec --preset gru4rec_ml100k --model.head clr20,100,500
    genfeat run seqrec --preset repeatnet_ml100k

Framework (specs/framework.md): `OnePhase(L)` with L the cross-entropy of the next item under the head's
distribution over all items, one target per example (the history's read-out position). Training as the thesis
(RecBole defaults): Adam lr 1e-3, no weight decay, no clipping, batch 128 (SASRec) / 64 (GRU4Rec, RepeatNet),
evaluation on the validation users after every epoch, early stopping after `train.patience` epochs without a
better validation NDCG@10 (the issue's criterion; the reference uses MRR@10), test metrics with the best weights.

Data (`data.dataset`): `ml-100k` (the recbole wheel's MovieLens-100K), `atomic:PATH` (any RecBole `.inter`
file; `data.user_field` / `item_field` / `time_field` name its columns), `ml1m:PATH` (GroupLens `ratings.dat`).
Split: leave-one-out in time order with prefix augmentation (`genfeat.data.seqrec`); `data.stride k` trains on
windows that score many targets each instead (`training_windows`: k = 1 keeps every history exact, larger k
shortens some histories to >= max_len - k + 1 items and cuts the rows about k-fold).
Metrics: full ranking over all items, history items not masked (`eval.mask_history` to mask), pessimistic ties
(`genfeat.metrics.ranking`).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genfeat.data.seqrec_sources import SeqRecDataConfig, load_seqdata, training_batches
from genfeat.errors import ConfigError
from genfeat.heads.config import head_name
from genfeat.metrics.ranking import TIES
from genfeat.models.seqrec import SeqRecConfig, build_seqrec
from genfeat.paradigms import fit_task
from genfeat.tasks.ranking import NextItemRanking
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


@dataclass(frozen=True)
class SeqRecEvalConfig:
    ks: tuple[int, ...] = (10,)
    mask_history: bool = False  # thesis: history items stay candidates
    ties: str = "pessimistic"  # | optimistic (`metrics.ranking`)

    def __post_init__(self) -> None:  # here, not at the first evaluation an epoch later
        if self.ties not in TIES:
            raise ConfigError(f"eval.ties must be one of {', '.join(TIES)}, got {self.ties!r}")
        if not self.ks or min(self.ks) < 1:
            raise ConfigError(f"eval.ks must be cut-offs >= 1, got {self.ks}")


def train_config(**kw: Any) -> TrainConfig:
    """The thesis's RecBole training settings (Adam 1e-3, no decay, no clipping, patience 10; the task selects on
    valid NDCG@K);
    `kw` overrides fields. `max_steps` None: the budget is `epochs` x steps per epoch (a given train.max_steps is
    the budget instead); `eval_every` counts epochs."""
    base = {"max_steps": None, "lr": 1e-3, "warmup_steps": 0, "schedule": "constant", "weight_decay": 0.0,
            "clip_norm": 0.0, "log_every": 50, "eval_every": 1, "patience": 10, "keep_last": 1}
    return TrainConfig(**(base | kw))


@dataclass(frozen=True)
class SeqRecRunConfig:
    seed: int = 0
    epochs: int = 300  # upper bound; early stopping usually ends the run sooner
    data: SeqRecDataConfig = field(default_factory=SeqRecDataConfig)
    model: SeqRecConfig = field(default_factory=SeqRecConfig)
    train: TrainConfig = field(default_factory=train_config)  # eval_every in epochs; max_steps None: from epochs
    eval: SeqRecEvalConfig = field(default_factory=SeqRecEvalConfig)

    def __post_init__(self) -> None:
        if self.epochs < 1:
            raise ConfigError("epochs must be >= 1")
        if not 0 <= self.data.stride <= self.model.max_len:
            raise ConfigError(f"data.stride must be in [0, model.max_len={self.model.max_len}], got {self.data.stride}")
        if self.data.stride and self.model.readout != "last_valid":
            raise ConfigError("data.stride (training windows) needs model.readout=last_valid")


# ----------------------------------------------------------------------------------------- presets
def sasrec_ml100k() -> SeqRecRunConfig:
    """SASRec (2 layers, 2 heads, d=64, dropout 0.2 as the thesis) on MovieLens-100K, batch 128."""
    return SeqRecRunConfig(model=SeqRecConfig(encoder="sasrec"))


def gru4rec_ml100k() -> SeqRecRunConfig:
    """GRU4Rec (embedding 64, GRU 128, dropout 0.3) on MovieLens-100K, batch 64."""
    return SeqRecRunConfig(data=SeqRecDataConfig(batch_size=64), model=SeqRecConfig(encoder="gru4rec", dropout=0.3))


def repeatnet_ml100k() -> SeqRecRunConfig:
    """RepeatNet (embedding = hidden = 64, dropout 0.5) on MovieLens-100K, batch 64."""
    return SeqRecRunConfig(data=SeqRecDataConfig(batch_size=64), model=SeqRecConfig(encoder="repeatnet", dropout=0.5))


def tiny() -> SeqRecRunConfig:
    """Seconds; for tests (pass a small `data.dataset atomic:PATH`)."""
    return SeqRecRunConfig(epochs=3, data=SeqRecDataConfig(batch_size=16, min_user_inter=3),
                           model=SeqRecConfig(max_len=10, d=16, d_inner=32, gru_hidden=16),
                           train=train_config(patience=2, log_every=5))


PRESETS = {"sasrec_ml100k": sasrec_ml100k, "gru4rec_ml100k": gru4rec_ml100k, "repeatnet_ml100k": repeatnet_ml100k,
           "tiny": tiny}


def run(cfg: SeqRecRunConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    """Train on data.train with early stopping on validation, evaluate the best weights; summary.json + report.md."""
    data = load_seqdata(cfg.data, cfg.model.max_len)
    print(data.summary())
    info = D.setup(cfg.train.device)
    t0 = time.perf_counter()
    seed_everything(cfg.seed)
    model = build_seqrec(cfg.model, data.n_items).to(info.device)
    n_params = sum(p.numel() for p in model.parameters())
    rows, per_batch, batches = training_batches(data, cfg.data, cfg.model.max_len, cfg.seed, info.rank,
                                                info.world_size)
    spe = batches.steps_per_epoch
    budget = cfg.train.max_steps if cfg.train.max_steps is not None else cfg.epochs * spe
    tc = dataclasses.replace(cfg.train, max_steps=budget, eval_every=spe * cfg.train.eval_every,
                             log_every=min(cfg.train.log_every, spe))
    name = cfg.model.encoder if cfg.model.encoder == "repeatnet" else \
        f"{cfg.model.encoder}+{head_name(cfg.model.head) or 'custom head'}"
    rows_desc = (f"{len(rows):,} windows (stride {cfg.data.stride}, {per_batch} per batch)" if cfg.data.stride
                 else f"{len(rows):,} examples")
    task = NextItemRanking(data.valid, data.test, cfg.eval.ks, cfg.eval.mask_history, cfg.eval.ties,
                           cfg.data.eval_batch_size)
    span = f"up to {cfg.epochs} epochs" if cfg.train.max_steps is None else \
        f"{budget:,} steps (train.max_steps: {budget / spe:.3g} epochs)"
    print(f"genfeat seqrec {name}: {n_params / 1e6:.3f}M parameters, {rows_desc}, {spe} steps per epoch, {span}, "
          f"early stopping on valid_{task.metric} (patience {tc.patience})")
    result, final = fit_task(D.wrap(model, info), task, batches, tc, run_dir, resume_from=resume_from, desc=name)
    epochs = result.step / spe
    details = {"model": name, "dataset": data.stats() | {"name": data.name}, "stride": cfg.data.stride,
               "train_rows": len(rows), "rows_per_batch": per_batch, "epochs": round(epochs, 2),
               "best_epoch": round((result.best_step or 0) / spe, 2),
               "epoch_train_s": round(result.train_time * spe / max(result.step, 1), 2),
               "train_wall_s": round(result.wall_time, 1)}
    k = cfg.eval.ks[0]
    summary = record_fit(
        run_dir, f"{name} on {data.name}", final, fit=result, started=t0, params=n_params, details=details,
        notes=[data.summary(), f"{details['epochs']} epochs (best {details['best_epoch']}), "
               f"{details['epoch_train_s']} s of training per epoch; full ranking, metrics at K = {cfg.eval.ks}."])
    print(f"valid Hit@{k} {final[f'valid_hit@{k}']:.4f} NDCG@{k} {final[f'valid_ndcg@{k}']:.4f}   test Hit@{k} "
          f"{final[f'test_hit@{k}']:.4f} NDCG@{k} {final[f'test_ndcg@{k}']:.4f}   ({summary['epochs']} epochs, "
          f"{summary['epoch_train_s']} s/epoch) -> {run_dir}")
    return summary
