"""Recipe `xlnet_dependency`: XLNet's mechanism on synthetic data with analytic optima (thesis Y §2.2; spec
xlnet.md §6.2 D1 "New York" and D2 right context). The permutation LM against a masked LM (D1) or a left-to-right
LM (D2) on the same backbone (spec §6.1: 2 layers, d 128, 4 heads of 32, d_ff 512, dropout 0.1).

    data -> task    fresh batches each step (`data.plm_synthetic.DependencyBatches`, batch 64, 12 tokens);
                    2,000 held-out sequences (`tasks.plm_dependency.DependencyStudy`)
    network         `XLNetLM`
    paradigm        one phase (`paradigms.fit_task`): Adam at 1e-3 with linear decay, the last weights

`benchmarks/xlnet_dependency.py` runs the four models of the page over seeds.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from genfeat.data.plm_synthetic import STUDIES, DependencyBatches, study_vocab
from genfeat.errors import ConfigError
from genfeat.models.xlnet import XLNetConfig, XLNetLM
from genfeat.paradigms import fit_task
from genfeat.tasks.plm_dependency import DependencyStudy
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


@dataclass(frozen=True)
class XLNetDependencyConfig:
    seed: int = 0
    study: str = "new_york"  # new_york (D1) | right_context (D2)
    objective: str = "plm"  # new_york: plm | mlm; right_context: plm | ar
    seq_len: int = 12
    batch_size: int = 64
    test_sequences: int = 2000
    model: XLNetConfig = field(default_factory=lambda: XLNetConfig(vocab_size=0, n_layer=2, d_model=128, n_head=4,
                                                                   d_head=32, d_inner=512))
    train: TrainConfig = field(default_factory=lambda: TrainConfig(
        max_steps=1500, lr=1e-3, warmup_steps=0, schedule="linear", min_lr_ratio=0.0, weight_decay=0.0,
        clip_norm=0.0, eval_every=0, log_every=50, precision="fp32"))

    def __post_init__(self) -> None:
        if self.objective not in DependencyBatches.OBJECTIVES.get(self.study, ()):
            raise ConfigError(f"study must be one of {', '.join(STUDIES)} with objective plm | mlm (new_york) or "
                              f"plm | ar (right_context), got {self.study!r} with {self.objective!r}")


def spec() -> XLNetDependencyConfig:
    """Spec §6.2: 1,500 steps of batch 64, 2,000 held-out sequences (D1 "New York" PLM; --study / --objective)."""
    return XLNetDependencyConfig()


def tiny() -> XLNetDependencyConfig:
    """8 steps of batch 16, 64 held-out sequences (tests)."""
    cfg = spec()
    return dataclasses.replace(cfg, test_sequences=64, batch_size=16,
                               train=dataclasses.replace(cfg.train, max_steps=8, log_every=2))


PRESETS = {"spec": spec, "tiny": tiny}


def run(cfg: XLNetDependencyConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    held_out_seed = {"new_york": 10_000, "right_context": 20_000}[cfg.study] + cfg.seed
    test = STUDIES[cfg.study][0](cfg.test_sequences, cfg.seq_len, np.random.default_rng(held_out_seed))
    task = DependencyStudy(cfg.study, cfg.objective, test)
    info = D.setup(cfg.train.device)
    batches = DependencyBatches(cfg.study, cfg.objective, cfg.batch_size, cfg.seq_len, cfg.seed, info.rank,
                                info.world_size)
    seed_everything(cfg.seed)
    model = XLNetLM(dataclasses.replace(cfg.model, vocab_size=study_vocab(cfg.study))).to(info.device)
    for name, p in model.named_parameters():  # no segment ids here: the segment terms never get a gradient
        if name.endswith(("seg_embed", "r_s_bias")):
            p.requires_grad_(False)
    res, scores = fit_task(D.wrap(model, info), task, batches, cfg.train, run_dir, resume_from=resume_from,
                           desc=f"xlnet_dependency {cfg.study} {cfg.objective}", select=False)
    return record_fit(run_dir, f"XLNet dependency study: {cfg.study}, {cfg.objective}", scores,
                      fit=res, started=t0, params=sum(p.numel() for p in model.parameters()), last_weights=True,
                      details={"study": cfg.study, "objective": cfg.objective})
