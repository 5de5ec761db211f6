"""The next-item data sets by name (thesis C §2.5; spec sequential-recommendation.md), as a run config's `data.*`
section names them, and the training batches a run draws from them.

    load_seqdata(SeqRecDataConfig, max_len) -> SeqData
        ml-100k         the recbole wheel's MovieLens-100K (`genfeat data fetch ml-100k`)
        atomic:PATH     any RecBole `.inter` file (`user_field` / `item_field` / `time_field` name its columns)
        ml1m:PATH       GroupLens `ratings.dat`
        synthetic:A|B[:SEED]    spec §11's worlds with known next-item distributions (`data.seqrec_synthetic`)
    training_batches(SeqData, SeqRecDataConfig, max_len, seed, rank, world_size) -> (rows, rows per batch, batches)
        prefix examples (stride 0: RecBole's, the thesis's) or training windows (stride k >= 1,
        `data.seqrec.training_windows`), in `ExampleBatches`
"""

from __future__ import annotations

from dataclasses import dataclass

from genfeat.data.seqrec import (
    ExampleBatches,
    Examples,
    SeqData,
    Windows,
    load_atomic_inter,
    load_ml1m_ratings,
    load_ml100k,
    make_seqdata,
    training_windows,
)
from genfeat.data.seqrec_synthetic import synthetic_world
from genfeat.errors import ConfigError


@dataclass(frozen=True)
class SeqRecDataConfig:
    dataset: str = "ml-100k"  # ml-100k | atomic:PATH | ml1m:PATH | synthetic:A[:SEED] | synthetic:B[:SEED] (spec §11's
    #   worlds with known next-item distributions, `data.seqrec_synthetic`; SEED draws the world, default 0)
    user_field: str = "user_id"
    item_field: str = "item_id"
    time_field: str = "timestamp"
    min_user_inter: int = 5
    batch_size: int = 128  # targets per batch (windows: as many windows as hold this many targets on average)
    eval_batch_size: int = 1024
    stride: int = 0  # 0: one prefix example per target (RecBole, the thesis); k >= 1: training windows
    #                  (`genfeat.data.seqrec.training_windows`; 1 keeps every history exact, k cuts the rows ~k-fold)


def load_seqdata(cfg: SeqRecDataConfig, max_len: int) -> SeqData:
    """Users' item sequences split leave-one-out in time order (`data.seqrec.make_seqdata`)."""
    name = cfg.dataset
    if name == "ml-100k":
        inter = load_ml100k()
    elif name.startswith("atomic:"):
        inter = load_atomic_inter(name[7:], cfg.user_field, cfg.item_field, cfg.time_field)
    elif name.startswith("ml1m:"):
        inter = load_ml1m_ratings(name[5:])
    elif name.startswith("synthetic:"):
        return synthetic_world(name, max_len)[0]
    else:
        raise ConfigError(f"data.dataset must be ml-100k, atomic:PATH, ml1m:PATH or synthetic:A|B[:SEED], got {name!r}")
    return make_seqdata(inter, max_len, cfg.min_user_inter)


def training_batches(data: SeqData, cfg: SeqRecDataConfig, max_len: int, seed: int, rank: int = 0,
                     world_size: int = 1) -> tuple[Examples | Windows, int, ExampleBatches]:
    """(training rows, rows per batch, their endless batches). Windows hold several targets each: as many windows
    a batch as give the same number of updates per epoch as prefix training, about `batch_size` targets each."""
    rows = training_windows(data.sequences, max_len, cfg.stride) if cfg.stride else data.train
    per_batch = cfg.batch_size
    if cfg.stride:
        per_batch = max(1, round(per_batch * len(rows) / max(rows.n_targets, 1)))
    return rows, per_batch, ExampleBatches(rows, per_batch, seed, rank, world_size)
