"""Shared by the benchmarks: machine description and writing docs/results/<name>.{md,json}."""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from genfeat.train.logging import machine_info

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"


def command() -> str:
    """How the benchmark was invoked, as `python -m benchmarks.<name> ARGS`."""
    return " ".join(["python", "-m", f"benchmarks.{Path(sys.argv[0]).stem}", *map(shlex.quote, sys.argv[1:])])


def header(record: dict[str, Any]) -> str:
    m = record["machine"]
    return (f"Command: `{record['command']}`  \nDate: {record['date']}  \n"
            f"Machine: {m['cpu']} ({m['cpu_count']} cores, {m['torch_threads']} torch threads), "
            f"device {m.get('gpu', m['device'])}, torch {m['torch']}, Python {m['python']}\n\n")


def write_results(name: str, results: dict[str, Any], markdown: str | Callable[[dict[str, Any]], str],
                  seeds: list[int] | None = None, device: str = "cpu") -> Path:
    """docs/results/<name>.json (machine-readable) and <name>.md (for people). `markdown` is a text with a
    `{header}` placeholder, or a function of the JSON record (so the page can be re-rendered from it)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    record = {"name": name, "command": command(), "date": datetime.date.today().isoformat(),
              "machine": machine_info(device), "seeds": seeds or [], "results": results}
    (RESULTS / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    return render(name, markdown, record)


def render(name: str, markdown: str | Callable[[dict[str, Any]], str], record: dict[str, Any] | None = None) -> Path:
    """(Re)write docs/results/<name>.md from the recorded JSON."""
    record = record or json.loads((RESULTS / f"{name}.json").read_text())
    text = markdown(record) if callable(markdown) else markdown
    path = RESULTS / f"{name}.md"
    path.write_text(text.replace("{header}", header(record)))
    return path


def interleaved_median_seconds(steps: dict[str, Callable[[], None]], repeats: int) -> dict[str, float]:
    """Median wall time of each step over `repeats` rounds, after one warm-up call each; every round times every
    step once, in turn, so a slow spell of the machine touches all of them alike (ratios stay comparable)."""
    for step in steps.values():
        step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            t0 = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def result_args(ap: argparse.ArgumentParser, seeds: list[int], runs: str | None = None) -> None:
    """The options every results benchmark shares: --seeds, --reading, --render-only and, for benchmarks that keep
    one directory per run (resumable, shared by parallel workers), --runs, --train-only and --collect."""
    ap.add_argument("--seeds", type=int, nargs="+", default=seeds)
    ap.add_argument("--reading", default="", help="an interpretation paragraph kept in the JSON")
    ap.add_argument("--render-only", action="store_true", help="rewrite the page from the recorded JSON")
    if runs is not None:
        ap.add_argument("--runs", default=runs, help="where the trained runs are kept")
        ap.add_argument("--train-only", action="store_true", help="train this worker's share, record nothing")
        ap.add_argument("--collect", action="store_true", help="record from the kept runs, train nothing")


def claim_run_dir(run_dir: Path) -> bool:
    """Create run_dir for this worker; False when another worker (or a crashed run: delete it) has it."""
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        run_dir.mkdir()
    except FileExistsError:
        return False
    return True
