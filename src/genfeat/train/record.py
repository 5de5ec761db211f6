"""One run record: what every recipe leaves in its run directory, written by one function.

    config.yaml          the resolved config and preset (the CLI)
    metrics.jsonl        training rows every log_every steps and evaluation rows (`train.fit`)
    loss_curve.png       from metrics.jsonl (`train.fit`)
    model.safetensors    the kept weights of every trained network, by name (`train.fit`)
    checkpoints/         weights + trainer state of the last checkpoints (`train.fit`)
    summary.json         the fixed keys below, then the recipe's own (`write_record`)
    report.md            title, the metrics table, one line on the run, the loss curve, the recipe's notes

Fixed keys of summary.json: every measured metric as `{split}_{metric}` (split: train, valid, dev or test;
`valid_accuracy`, `test_ppl`, `test_errors`), `params`, `steps`, `best_step` (None when nothing was selected),
`wall_s` (this invocation, from its start or its resume to the record), `train_s` (inside the last phase's training
steps, over the whole run, resumes included), `world_size`, `device`, `versions` (genfeat, torch,
python) and `machine` (CPU model, cores, threads, GPU name).
"""

from __future__ import annotations

import json
import platform
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from genfeat.config import atomic_write_text
from genfeat.train import distributed as D
from genfeat.train.logging import machine_info
from genfeat.train.loop import FitResult

SPLITS = ("train", "valid", "dev", "test")
_METRIC = re.compile(rf"^({'|'.join(SPLITS)})_\S+$")


def versions() -> dict[str, str]:
    from genfeat import __version__

    return {"genfeat": __version__, "torch": torch.__version__, "python": platform.python_version()}


def _rounded(v: float) -> float:
    """5 decimals; a value under 0.01 keeps 4 significant digits instead (a loss of -4.3e-05 is not -4e-05)."""
    v = float(v)
    return round(v, 5) if abs(v) >= 0.01 or v == 0 or v != v else float(f"{v:.4g}")


def write_record(run_dir: str | Path, title: str, metrics: Mapping[str, float], *, params: int, steps: int,
                 best_step: int | None, wall_s: float, train_s: float, details: Mapping[str, Any] | None = None,
                 notes: Sequence[str] = ()) -> dict[str, Any]:
    """Write summary.json and report.md (rank 0) and return the summary. `metrics` are the final numbers, named
    `{split}_{metric}`; `details` are the recipe's own keys (they may not shadow a fixed key); `notes` are
    markdown paragraphs for the report."""
    bad = [k for k in metrics if not _METRIC.match(k)]
    if bad:
        raise ValueError(f"metric names must be {{split}}_{{metric}} with split in {SPLITS}: {bad}")
    info = D.current()
    summary: dict[str, Any] = {k: (_rounded(v) if isinstance(v, float) else v) for k, v in metrics.items()}
    summary |= {"params": int(params), "steps": int(steps), "best_step": best_step, "wall_s": round(wall_s, 1),
                "train_s": round(train_s, 1), "world_size": info.world_size, "device": str(info.device),
                "versions": versions()}
    clash = sorted(set(details or {}) & (set(summary) | {"machine"}))
    if clash:
        raise ValueError(f"details may not replace the fixed summary keys {clash}")
    summary |= dict(details or {})
    summary["machine"] = machine_info(info.device)
    if info.is_main:
        run_dir = Path(run_dir)
        atomic_write_text(run_dir / "summary.json", json.dumps(summary, indent=1) + "\n")
        atomic_write_text(run_dir / "report.md", report(run_dir, title, summary, metrics, notes))
    return summary


def record_fit(run_dir: str | Path, title: str, metrics: Mapping[str, float], *, fit: FitResult, started: float,
               params: int, last_weights: bool = False, details: Mapping[str, Any] | None = None,
               notes: Sequence[str] = ()) -> dict[str, Any]:
    """`write_record` for a run trained by `train.fit`: its steps and training time from `fit`, the wall time since
    `started` (`time.perf_counter()` at the run's start), and the step whose weights the metrics are of (None with
    `last_weights`: no model selection)."""
    return write_record(run_dir, title, metrics, params=params, steps=fit.step,
                        best_step=None if last_weights else fit.best_step, wall_s=time.perf_counter() - started,
                        train_s=fit.train_time, details=details, notes=notes)


def report(run_dir: Path, title: str, summary: Mapping[str, Any], metrics: Mapping[str, float],
           notes: Sequence[str]) -> str:
    names = sorted({k.split("_", 1)[1] for k in metrics})
    splits = [s for s in SPLITS if any(f"{s}_{n}" in metrics for n in names)]
    lines = [f"# {title}", ""]
    if metrics:
        lines += ["| split | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        for s in splits:
            cells = [_cell(metrics.get(f"{s}_{n}")) for n in names]
            lines.append(f"| {s} | " + " | ".join(cells) + " |")
        lines.append("")
    machine = summary["machine"]
    threads = machine["torch_threads"]
    where = machine.get("gpu") or f"{machine['cpu']} ({threads} thread{'s' if threads != 1 else ''})"
    best = f", weights of step {summary['best_step']}" if summary["best_step"] is not None else ""
    lines += [f"{summary['params']:,} parameters, {summary['steps']:,} steps{best}; {summary['wall_s']} s "
              f"({summary['train_s']} s in training steps) on {where}, world size {summary['world_size']}; "
              f"torch {summary['versions']['torch']}.", ""]
    if (run_dir / "loss_curve.png").is_file():
        lines += ["![loss curve](loss_curve.png)", ""]
    for note in notes:
        lines += [note, ""]
    return "\n".join(lines)


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4f}"
    return str(v)
