"""Launched by test_distributed.py under torchrun: trains the tiny LM with DDP or FSDP2 on gloo, then trains a
fresh copy again from the step-3 checkpoint (resume under the same strategy)."""

import json
import sys
from pathlib import Path

import torch

from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig, fit
from tests.train.helpers import lm_loss, make

out, strategy = Path(sys.argv[1]), sys.argv[2]
info = D.setup("cpu")
lm, data = make(dropout=0.0, batch=4, rank=info.rank, world=info.world_size)  # same seed: same init
model = D.wrap(lm, info, strategy)
cfg = TrainConfig(max_steps=6, lr=3e-3, warmup_steps=2, eval_every=3, log_every=1, distributed=strategy,
                  keep_last=10)
fit(model, lm_loss, data, cfg, out / "run", evaluate=lambda m: {"valid_loss": 0.0})


def full(lm):  # every rank's own view of the full weights (FSDP2 shards are DTensors: gather them, collectively)
    return {k: (v.full_tensor() if hasattr(v, "full_tensor") else v).detach().clone()
            for k, v in lm.state_dict().items()}


torch.save(full(lm), out / f"weights_rank{info.rank}.pt")
lm2, data2 = make(seed=7, dropout=0.0, batch=4, rank=info.rank, world=info.world_size)
fit(D.wrap(lm2, info, strategy), lm_loss, data2, cfg, out / "run", evaluate=lambda m: {"valid_loss": 0.0},
    resume_from=out / "run/checkpoints/step_00000003")
torch.save(full(lm2), out / f"resumed_rank{info.rank}.pt")
(out / f"done_rank{info.rank}.json").write_text(json.dumps({"rank": info.rank, "world": info.world_size}))
D.teardown()
