"""torchrun --standalone --nproc_per_node=2 on CPU (gloo): ranks stay identical and match one process
with the same global batch."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from genfeat.train.loop import TrainConfig, fit
from tests.train.helpers import lm_loss, make

ROOT = Path(__file__).resolve().parents[2]


def launch(out: Path, strategy: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "GENFEAT_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           str(ROOT / "tests/train/dist_worker.py"), str(out), strategy]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def losses(run_dir: Path) -> list[float]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [r["loss"] for r in rows if "loss" in r]


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    out = tmp_path_factory.mktemp("single")
    lm, data = make(dropout=0.0, batch=4)
    cfg = TrainConfig(max_steps=6, lr=3e-3, warmup_steps=2, eval_every=3, log_every=1)
    fit(lm, lm_loss, data, cfg, out, evaluate=lambda m: {"valid_loss": 0.0})
    return out, {k: v.clone() for k, v in lm.state_dict().items()}


@pytest.mark.dist
@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_two_ranks_match_single_process(tmp_path, single, strategy):
    launch(tmp_path, strategy)
    w0 = torch.load(tmp_path / "weights_rank0.pt", weights_only=True)
    w1 = torch.load(tmp_path / "weights_rank1.pt", weights_only=True)
    for k in w0:
        assert torch.equal(w0[k], w1[k]), f"ranks differ at {k}"
    single_dir, single_w = single
    assert losses(tmp_path / "run") == pytest.approx(losses(single_dir), rel=1e-5)
    for k, v in single_w.items():
        torch.testing.assert_close(w0[k], v, rtol=1e-4, atol=1e-5)
    assert (tmp_path / "run/checkpoints/step_00000006/model.safetensors").is_file()  # rank 0 wrote it
    state = torch.load(tmp_path / "run/checkpoints/step_00000006/trainer_state.pt", weights_only=True)
    assert len(state["rng"]) == 2 and state["count"] == 6 * 4 * 16
    resumed = torch.load(tmp_path / "resumed_rank0.pt", weights_only=True)  # steps 4-6 again from step 3
    for k in w0:
        assert torch.equal(resumed[k], w0[k]), f"resumed run differs at {k}"
