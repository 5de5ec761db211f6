"""Several phases in one run (specs/framework.md §3): each earlier phase trains once in its own directory and is
reloaded, not retrained, when the run resumes; the last phase is the run's own `fit_task`.

    run_dir/phases/<name>/     an earlier phase's metrics.jsonl, checkpoints/, model.safetensors and phase.json
                               (its evaluation, written when it finished)
    run_dir/                   the last phase (what `genfeat run --resume` continues from its checkpoints)

    fit_phase(name, model, task, batches, cfg, run_dir)   -> (FitResult or None when reloaded, evaluation)
    phase_record(run_dir, name)                           -> its phase.json: steps, best_step, train_seconds,
                                                             evaluation (for the run's record, also when reloaded)

A run stopped inside an earlier phase resumes it from that phase's latest checkpoint (bitwise, as `fit`); one
stopped after it reloads its kept weights and recorded evaluation and goes on. Universal schema's USchema
pre-training before the multi-facet model (thesis C Algorithm 2) is such a phase.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import torch
from torch import nn

from genfeat.config import atomic_write_text
from genfeat.paradigms.one_phase import fit_task
from genfeat.tasks.base import Task
from genfeat.train import checkpoint as C
from genfeat.train import distributed as D
from genfeat.train.loop import FitResult, TrainConfig
from genfeat.train.step import Step

PHASES = "phases"
DONE = "phase.json"


def phase_dir(run_dir: str | Path, name: str) -> Path:
    return Path(run_dir) / PHASES / name


def in_earlier_phase(run_dir: str | Path) -> bool:
    """Whether a run has trained in an earlier phase (a checkpoint or a finished phase there), so it resumes
    without a checkpoint of its last phase."""
    root = Path(run_dir) / PHASES
    return root.is_dir() and any((d / DONE).is_file() or C.latest_checkpoint(d) is not None for d in root.iterdir())


def fit_phase(name: str, model: nn.Module, task: Task, batches: Iterator, cfg: TrainConfig, run_dir: str | Path,
              method: Step | None = None, desc: str | None = None, select: bool = True,
              final_splits: Iterable[str] | None = None) -> tuple[FitResult | None, dict[str, float]]:
    """Train `model` on `task` as the earlier phase `name` (`fit_task` in run_dir/phases/<name>; `final_splits`
    as there, () for a phase that is not evaluated), or, when that phase has finished before, load its kept
    weights into `model` and return (None, its recorded evaluation)."""
    out = phase_dir(run_dir, name)
    done = out / DONE
    net = D.unwrap(model)
    if done.is_file():
        C.load_model_weights(net, out / C.WEIGHTS)
        print(f"phase {name}: finished before, its weights reloaded ({out})")
        return None, json.loads(done.read_text())["evaluation"]
    if D.current().is_main:
        out.mkdir(parents=True, exist_ok=True)
    D.barrier()
    resume = C.resume_point(out)
    if resume is not None:
        print(f"phase {name}: resuming from {resume}")
    res, scores = fit_task(model, task, batches, cfg, out, method=method, resume_from=resume,
                           desc=desc or name, select=select, final_splits=final_splits)
    if D.current().is_main:
        atomic_write_text(done, json.dumps({"phase": name, "steps": res.step, "best_step": res.best_step,
                                            "train_seconds": res.wall_time, "evaluation": scores}, indent=1) + "\n")
    return res, scores


def phase_record(run_dir: str | Path, name: str) -> dict:
    """The finished phase `name`'s phase.json (steps, best_step, train_seconds, evaluation)."""
    path = phase_dir(run_dir, name) / DONE
    if not path.is_file():
        raise FileNotFoundError(f"phase {name} of {run_dir} has not finished (no {path})")
    return json.loads(path.read_text())


def copy_parameters(target: nn.Module, source: nn.Module, names: list[str]) -> None:
    """Copy the named parameters (state-dict names) of `source` into `target`: one phase's tables starting the
    next's."""
    src, dst = source.state_dict(), target.state_dict()
    with torch.no_grad():
        for n in names:
            if src[n].shape != dst[n].shape:
                raise ValueError(f"{n}: {tuple(src[n].shape)} in the earlier phase, {tuple(dst[n].shape)} here")
            dst[n].copy_(src[n])
