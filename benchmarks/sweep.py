"""The sweep harness of the results benchmarks: rows × seeds → recipe runs → summary.json → records → table.

A benchmark lists its runs as `Job`s (a run directory name, the tags that place it in the table, the recipe and its
config), and `Sweep` does the rest the same way for every benchmark, each run through `genfeat.run_recipe` (so every
run writes config.yaml and resumes as `genfeat run` does):

    sweep = Sweep.from_args(args)        # common.result_args(..., runs=...): --runs, --collect, --train-only, --only
    records = sweep.results([Job(f"{row}-seed{s}", {"row": row, "seed": s}, "lm", config(row, s), group=row)
                             for s in args.seeds for row in rows])
    write_results(NAME, {"runs": records}, markdown, seeds=args.seeds, machine=sweep.machine())

- one directory per run under `--runs`, holding the recipe's run record (`genfeat.train.record`); a finished run
  (its summary.json) is read, never retrained;
- several workers share the list: each claims a run directory before it trains (`common.claim_run_dir`); a run
  whose worker is gone is taken over and continues from its latest checkpoint;
- `--train-only --only G ...` trains one worker's share (the jobs whose group is listed) and records nothing;
  `--collect` trains nothing and records the finished runs;
- a record is the run's summary.json without its machine block, plus the job's tags and the run's torch threads;
  `Sweep.machine()` is the machine block the runs it read report (their CPU, device, GPU, torch), not that of the
  machine that renders the page.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import claim_run_dir, clear_run_dir, ran_on, render, write_results
from genfeat.runner import run_recipe
from genfeat.train.checkpoint import latest_checkpoint
from genfeat.train.logging import machine_info


@dataclass(frozen=True)
class Job:
    """One recipe run of a sweep: `name` is its directory under --runs, `tags` the keys that place its record in
    the table (row, seed, ...), `recipe` and `cfg` what runs there (`cfg` may be a function returning the config,
    called when the run starts: a config that names another run of the sweep), `group` names its share for --only
    (default: the first tag's value)."""

    name: str
    tags: Mapping[str, Any]
    recipe: str
    cfg: Any
    group: str = ""
    preset: str | None = None  # the preset `cfg` was made from, for the run's config.yaml (default "custom")
    needs: tuple[Path, ...] = field(default=())  # run directories that must be finished first (a pretraining run)

    @property
    def share(self) -> str:
        return self.group or str(next(iter(self.tags.values()), ""))


class Sweep:
    def __init__(self, runs: str | Path, collect: bool = False, only: Iterable[str] = ()):
        self.root = Path(runs)
        self.collect = collect
        self.only = set(only)
        self.machines: list[dict[str, Any]] = []  # the machine block of every run read or trained here

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Sweep:
        return cls(args.runs, collect=args.collect, only=getattr(args, "only", None) or ())

    def path(self, job: Job) -> Path:
        return self.root / job.name

    def result(self, job: Job) -> dict[str, Any] | None:
        """The job's record: read from a finished run, else trained here (resuming a run whose worker is gone);
        None when the run is not this worker's (collecting, another share, claimed by a live worker, or a run it
        needs is not finished)."""
        run_dir = self.path(job)
        if (run_dir / "summary.json").is_file():
            return self._record(json.loads((run_dir / "summary.json").read_text()), job.tags)
        if self.collect or (self.only and job.share not in self.only):
            return None
        if any(not (Path(n) / "summary.json").is_file() for n in job.needs):
            return None
        if not claim_run_dir(run_dir, resume=True):
            return None
        resume = latest_checkpoint(run_dir) is not None
        if not resume:  # a run killed before its first checkpoint left nothing to continue
            clear_run_dir(run_dir)
        cfg = job.cfg() if callable(job.cfg) else job.cfg
        summary = run_recipe(job.recipe, cfg, run_dir, preset=None if resume else job.preset, resume=resume)
        print(f"done {job.name}", flush=True)
        return self._record(dict(summary), job.tags)

    def _record(self, summary: Mapping[str, Any], tags: Mapping[str, Any]) -> dict[str, Any]:
        if machine := summary.get("machine"):
            self.machines.append(dict(machine, device=summary.get("device", machine.get("device"))))
        return record(summary, tags)

    def results(self, jobs: Iterable[Job]) -> list[dict[str, Any]]:
        """The records of the jobs this worker can give, in the jobs' order."""
        return [r for job in jobs if (r := self.result(job)) is not None]

    def machine(self) -> dict[str, Any]:
        """The page's machine block, from the machine blocks of the runs this sweep read (CPU, cores, torch threads,
        device, torch, Python): each field's distinct values joined with " + ", and "gpu" (the GPU model, beside any CPU
        device) when a run used CUDA; a page rendered on another machine still names where its runs ran. Where no
        run kept a block, this process's (`machine_info` of `ran_on`)."""
        blocks = self.machines
        if not blocks:
            return machine_info(ran_on())
        keys = ("cpu", "cpu_count", "torch_threads", "device", "torch", "python")
        out = {k: " + ".join(sorted({str(b.get(k)) for b in blocks})) for k in keys}
        if any(str(b["device"]).startswith("cuda") for b in blocks):  # as machine_info: "gpu" names the model
            out["gpu"] = " + ".join(sorted({str(b.get("gpu") or b["device"]) if str(b["device"]).startswith("cuda")
                                            else str(b["device"]) for b in blocks}))
        return out


def sweep_page(args: argparse.Namespace, name: str, jobs: Iterable[Job], markdown: Callable[[dict[str, Any]], str],
               results: Callable[[list[dict[str, Any]]], dict[str, Any]]) -> None:
    """The main of a benchmark whose page is one sweep (`common.result_args` options): --render-only rewrites the
    page from its JSON; else the jobs run (or are read), --train-only stops there, and `results(records)` is
    recorded with the runs' machine block."""
    if args.render_only:
        print(render(name, markdown))
        return
    sweep = Sweep.from_args(args)
    records = sweep.results(jobs)
    if not args.train_only:
        print(write_results(name, results(records), markdown, seeds=args.seeds, machine=sweep.machine()))


def record(summary: Mapping[str, Any], tags: Mapping[str, Any]) -> dict[str, Any]:
    """A run's summary as a results record: without the machine block (`Sweep.machine` keeps it), with the torch
    threads it ran with and the job's tags (a tag wins over a summary key of the same name)."""
    out = {k: v for k, v in summary.items() if k != "machine"}
    if "machine" in summary:
        out["torch_threads"] = summary["machine"].get("torch_threads")
    return out | dict(tags)
