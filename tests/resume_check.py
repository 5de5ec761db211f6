"""The recipe-level exact-resume check: finish a run, copy it without its last checkpoint, `genfeat run --resume`
the copy from the checkpoint before, and compare the last checkpoints' weights and the summaries."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

from genfeat.cli import main
from genfeat.train.checkpoint import latest_checkpoint, load_weights


def assert_resume_is_exact(run_args: list[str], root: Path, metric: str) -> None:
    """`run_args`: `genfeat run` arguments without --out; `metric`: a summary.json key that must agree."""
    a, b = root / "a", root / "b"
    assert main(["run", *run_args, "--out", str(a)]) == 0
    shutil.copytree(a, b)
    last = latest_checkpoint(b)
    assert len([d for d in (b / "checkpoints").iterdir() if d.name.startswith("step_")]) >= 2, "one checkpoint"
    shutil.rmtree(last)
    assert main(["run", "--resume", str(b)]) == 0
    wa, wb = load_weights(a / last.relative_to(b) / "model.safetensors"), load_weights(last / "model.safetensors")
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    assert json.loads((a / "summary.json").read_text())[metric] == json.loads((b / "summary.json").read_text())[metric]
