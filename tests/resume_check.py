"""The recipe-level exact-resume check: finish a run, copy it without its last checkpoint, `genfeat run --resume`
the copy from the checkpoint before, and compare the last checkpoints (weights and trainer state: optimizers,
schedules, random streams, data positions, a stateful loss's state) bit for bit and the summaries' numbers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch

from genfeat.cli import main
from genfeat.train.checkpoint import latest_checkpoint, load_trainer_state, load_weights

TIMINGS = ("wall", "_s", "per_s", "seconds", "time")  # summary keys that measure time, not the run


def assert_same(a: Any, b: Any, where: str = "") -> None:
    """Nested states equal, tensors bit for bit (dtype included), NaN equal to NaN."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for k in a:
            assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b or (a != a and b != b), f"{where}: {a!r} != {b!r}"


def summary_numbers(run: Path) -> dict[str, Any]:
    return {k: v for k, v in json.loads((run / "summary.json").read_text()).items()
            if not any(t in k for t in TIMINGS)}


def assert_resume_is_exact(run_args: list[str], root: Path) -> None:
    """`run_args`: `genfeat run` arguments without --out, for a run that writes at least two checkpoints."""
    a, b = root / "a", root / "b"
    assert main(["run", *run_args, "--out", str(a)]) == 0
    shutil.copytree(a, b)
    last = latest_checkpoint(b)
    steps = sorted(d.name for d in (b / "checkpoints").iterdir() if d.name.startswith("step_"))
    assert len(steps) >= 2, f"one checkpoint ({steps}): the run must write two"
    shutil.rmtree(last)
    assert main(["run", "--resume", str(b)]) == 0
    here = last.relative_to(b)
    assert_same(load_weights(a / here / "model.safetensors"), load_weights(last / "model.safetensors"), "weights")
    sa, sb = load_trainer_state(a / here), load_trainer_state(last)
    sa.pop("train_time"), sb.pop("train_time")
    assert_same(sa, sb, "trainer_state")
    assert_same(summary_numbers(a), summary_numbers(b), "summary")
