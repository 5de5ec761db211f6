"""Run logging on rank 0: `metrics.jsonl` always, TensorBoard when installed (`genfeat[track]`),
and a loss-curve PNG at the end."""

from __future__ import annotations

import json
import math
import os
import platform
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

import torch

from genfeat.errors import GenfeatError

T = TypeVar("T")


def machine_info(device: torch.device | str = "cpu") -> dict[str, Any]:
    """What produced a number: CPU model, cores, torch threads, device (GPU name), versions."""
    device = torch.device(device)
    cpu = platform.processor() or "unknown"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    info = {"cpu": cpu, "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "device": str(device), "torch": torch.__version__, "python": platform.python_version(),
            "os": platform.platform()}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


class MetricsLogger:
    def __init__(self, run_dir: str | os.PathLike, enabled: bool = True, tensorboard: bool = True):
        self.path = Path(run_dir) / "metrics.jsonl"
        self.enabled = enabled
        self.tb = None
        if enabled and tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self.tb = SummaryWriter(str(Path(run_dir) / "tb"))
            except ImportError:
                self.tb = None

    def log(self, step: int, **metrics: Any) -> None:
        if not self.enabled:
            return
        row = {"step": step, **{k: (float(v) if isinstance(v, (int, float)) else v) for k, v in metrics.items()}}
        with open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")
        if self.tb is not None:
            for k, v in metrics.items():
                if isinstance(v, (int, float)) and math.isfinite(v):
                    self.tb.add_scalar(k, v, step)

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()


def progress(iterable: Iterable[T], desc: str, total: int | None = None) -> Iterable[T]:
    """A transient progress bar for work that takes seconds to minutes outside the training loop (evaluation
    passes, RECL, density scoring): on rank 0 only, gone when done."""
    from tqdm.auto import tqdm

    from genfeat.train import distributed as D

    return tqdm(iterable, desc=desc, total=total, leave=False, disable=not D.current().is_main, dynamic_ncols=True,
                mininterval=1.0)


def read_metrics(run_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows of metrics.jsonl. A last line cut short (the process was killed while writing it) is dropped; an
    unreadable line before it is an error naming the file and line."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    rows = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break
            raise GenfeatError(f"{path}, line {i + 1}: not a JSON record; the file is corrupt") from None
    return rows


def plot_loss_curve(run_dir: str | os.PathLike, names: Iterable[str] = ("loss",),
                    out_name: str = "loss_curve.png") -> Path | None:
    """The training losses `names` (each update's, e.g. loss_d and loss_g of a GAN) and any `valid_loss` against
    step, from metrics.jsonl."""
    rows = read_metrics(run_dir)
    curves = {name: [(r["step"], r[name]) for r in rows if name in r] for name in (*names, "valid_loss")}
    curves = {k: v for k, v in curves.items() if v}
    if not curves:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    for name, points in curves.items():
        valid = name == "valid_loss"
        ax.plot(*zip(*points, strict=True), "o-" if valid else "-", label=name.replace("_", " "),
                lw=1.5 if valid else 1)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("loss (as logged)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out = Path(run_dir) / out_name
    fig.savefig(out)
    plt.close(fig)
    return out
