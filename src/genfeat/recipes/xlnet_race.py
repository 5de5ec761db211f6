"""XLNet fine-tuned for RACE multiple choice (thesis Y §2.2.3, Table 2.2; spec xlnet.md §2.12), from an
`xlnet_pretrain` run (`init scratch`: the same network with random weights).

    genfeat run xlnet_race --data_dir RACE --pretrained runs/xlnet-plm          # RACE JSON (train/dev/test)

    data        `data.race`: RACE/{train,dev,test}/{middle,high}; each option as [passage, <sep>, question + option,
                <sep>, <cls>] (`race_inputs`, question + option cut to `max_qa` tokens)
    task        `tasks.classification.MultipleChoice`: accuracy, selected on dev; test accuracy over all and by
                middle / high school
    network     `models.xlnet.heads.XLNetMultipleChoice` on the pretrained run (`models.xlnet.inference`)
    paradigm    the reference's fine-tuning (`paradigms.finetune`; its RACE settings are the `race` preset)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genfeat.data.race import load_race, race_inputs
from genfeat.errors import ConfigError
from genfeat.models.xlnet.heads import XLNetMultipleChoice
from genfeat.models.xlnet.inference import check_init, finetune_network
from genfeat.paradigms.finetune import FinetuneConfig, finetune
from genfeat.tasks.classification import MultipleChoice
from genfeat.train import distributed as D
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


@dataclass(frozen=True)
class XLNetRaceConfig:
    seed: int = 0
    pretrained: str = ""  # an xlnet_pretrain run directory
    init: str = "pretrained"  # pretrained | scratch | body (the pretrained layers, fresh word embeddings)
    data_dir: str = ""  # RACE/ with train/, dev/, test/ (each middle/ and high/)
    max_len: int = 512
    max_qa: int = 128
    train: FinetuneConfig = field(default_factory=lambda: FinetuneConfig(batch_size=8, lr=2e-5, max_steps=12000,
                                                                         warmup_steps=1000, eval_every=1000,
                                                                         weight_decay=0.0, adam_eps=1e-6))

    def __post_init__(self) -> None:
        check_init(self.init)


def race() -> XLNetRaceConfig:
    """RACE multiple choice with the reference's fine-tuning settings (512 tokens, batch 8, lr 2e-5, 12k steps)."""
    return XLNetRaceConfig()


def tiny() -> XLNetRaceConfig:
    """Seconds; for tests."""
    return XLNetRaceConfig(max_len=48, max_qa=16,
                           train=FinetuneConfig(max_steps=3, batch_size=2, eval_every=3, warmup_steps=1))


PRESETS = {"race": race, "tiny": tiny}


def run(cfg: XLNetRaceConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    if not cfg.data_dir:
        raise ConfigError("xlnet_race needs data_dir (RACE/ with train/, dev/ and test/)")
    seed_everything(cfg.seed)  # before the task head is initialised
    model, tok = finetune_network(XLNetMultipleChoice, cfg.pretrained, cfg.init, cfg.train.dropout,
                                  dropout=cfg.train.dropout)
    model.to(D.setup(cfg.train.device).device)
    split = {k: load_race(Path(cfg.data_dir) / k) for k in ("train", "dev", "test")}
    task = MultipleChoice({k: race_inputs(v, tok, cfg.max_len, cfg.max_qa) for k, v in split.items()})
    res, _ = finetune(model, task, cfg.train, cfg.seed, run_dir, f"xlnet_race ({cfg.init})", resume_from,
                      final_splits=())
    pred = task.predict(model, "test")
    test = {"test_acc": task.score(pred, "test")["accuracy"]}
    test |= {f"test_acc_{lv}": acc for lv, acc in task.accuracy_by(pred, "test", [e.level for e in split["test"]])
             .items() if lv in ("middle", "high")}
    summary = record_fit(run_dir, f"XLNet on RACE (init {cfg.init})", {"dev_acc": res.best_metric, **test},
                         fit=res, started=t0, params=sum(p.numel() for p in model.parameters()),
                         details={"init": cfg.init, "pretrained": str(cfg.pretrained)})
    if D.current().is_main:
        print(f"RACE test accuracy {test['test_acc']:.4f} (dev {res.best_metric:.4f}) -> {run_dir}")
    return summary
