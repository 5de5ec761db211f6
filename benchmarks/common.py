"""Shared by the benchmarks: machine description and writing docs/results/<name>.{md,json}."""

from __future__ import annotations

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


def median_seconds(step: Callable[[], None], repeats: int) -> float:
    """Median wall time of `step` over `repeats` calls after one warm-up call."""
    step()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
