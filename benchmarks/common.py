"""Shared by the benchmarks: machine description and writing docs/results/<name>.{md,json}."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import socket
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
    threads = f"{m['torch_threads']} torch thread" + ("" if str(m["torch_threads"]) == "1" else "s")
    return (f"Command: `{record['command']}`  \nDate: {record['date']}  \n"
            f"Machine: {m['cpu']} ({m['cpu_count']} cores, {threads}), "
            f"device {m.get('gpu', m['device'])}, torch {m['torch']}, Python {m['python']}\n\n")


def ran_on() -> str:
    """The device a benchmark's work ran on: its --device argument when it has one, else what genfeat's `auto`
    picks here (the device its recipe runs use), a GPU when there is one."""
    from genfeat.train.distributed import resolve_device

    args = sys.argv[1:]
    chosen = args[args.index("--device") + 1] if "--device" in args[:-1] else "auto"
    chosen = next((a.split("=", 1)[1] for a in args if a.startswith("--device=")), chosen)  # argparse's other form
    return str(resolve_device(chosen))


def write_results(name: str, results: dict[str, Any], markdown: str | Callable[[dict[str, Any]], str],
                  seeds: list[int] | None = None, device: str | None = None,
                  machine: dict[str, Any] | None = None, setting: tuple[str, ...] = ()) -> Path:
    """docs/results/<name>.json (machine-readable) and <name>.md (for people). `markdown` is a text with a
    `{header}` placeholder, or a function of the JSON record (so the page can be re-rendered from it). `device`:
    where the measured work ran (None: `ran_on()`); the header names the GPU model when it is one. `machine`: the
    machine block itself, where the work ran elsewhere (`Sweep.machine`: the runs' own). `setting`: the keys of
    `results` that define the page; a page recorded with other values there is not overwritten (ValueError naming
    the key), so a sweep whose page name misses one of its settings fails instead of replacing another page."""
    check_setting(name, results, setting)
    RESULTS.mkdir(parents=True, exist_ok=True)
    record = {"name": name, "command": command(), "date": datetime.date.today().isoformat(),
              "machine": machine or machine_info(device or ran_on()), "seeds": seeds or [], "results": results}
    (RESULTS / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    return render(name, markdown, record)


def check_setting(name: str, results: dict[str, Any], setting: tuple[str, ...]) -> None:
    """ValueError when docs/results/<name>.json records other values than `results` at the keys `setting`
    (`write_results` calls it; a benchmark may call it before long work, to fail early)."""
    if (old := load_result(name)) is not None:
        differ = [f"{k} {old['results'][k]!r} recorded, {results.get(k)!r} now" for k in setting
                  if k in old["results"] and old["results"][k] != results.get(k)]
        if differ:
            raise ValueError(f"{RESULTS / name}.json records another setting ({'; '.join(differ)}): give this sweep "
                             "its own page name, or move the recorded page first")


def load_result(name: str) -> dict[str, Any] | None:
    """The recorded docs/results/<name>.json, None when it was never recorded."""
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def result_sources(names: list[str]) -> dict[str, dict[str, str]]:
    """Command, date and CPU of each recorded result among `names` (for summary pages)."""
    return {name: {"command": rec["command"], "date": rec["date"], "machine": rec["machine"]["cpu"]}
            for name in names if (rec := load_result(name)) is not None}


TEST_BLOCK = re.compile(r"\n<!-- from (tests/\S+) .*?<!-- end of \1 -->\n", re.S)


def render(name: str, markdown: str | Callable[[dict[str, Any]], str], record: dict[str, Any] | None = None) -> Path:
    """(Re)write docs/results/<name>.md from the recorded JSON. A section a test file writes into the page
    (between `<!-- from tests/FILE ... -->` and `<!-- end of tests/FILE -->`) is kept, at the end."""
    record = record or json.loads((RESULTS / f"{name}.json").read_text())
    text = (markdown(record) if callable(markdown) else markdown).replace("{header}", header(record))
    path = RESULTS / f"{name}.md"
    kept = [m.group(0) for m in TEST_BLOCK.finditer(path.read_text())] if path.exists() else []
    path.write_text(text.rstrip("\n") + "\n" + "".join(kept))
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


def mean_std(values: list[float], digits: int = 2, scale: float = 1.0, spread: str = "std") -> str:
    """The one cell formatter of the results pages: "mean ± spread" of `values` × `scale` with `digits` decimals.
    `spread`: "std" (sample standard deviation over seeds) or "se" (standard error, std / sqrt(n)). One value: the
    value alone; none: "–"."""
    if spread not in ("std", "se"):
        raise ValueError(f"spread must be 'std' or 'se', not {spread!r}")
    v = [scale * x for x in values]
    if not v:
        return "–"
    if len(v) == 1:
        return f"{v[0]:.{digits}f}"
    s = statistics.stdev(v) / (len(v) ** 0.5 if spread == "se" else 1.0)
    return f"{statistics.mean(v):.{digits}f} ± {s:.{digits}f}"


def reading(name: str) -> str:
    """The interpretation of a results page: written by hand, after the numbers, in docs/results/<name>.reading.md
    (a re-run or a re-render keeps it; never passed on a command line)."""
    path = RESULTS / f"{name}.reading.md"
    return path.read_text().strip() if path.is_file() else ""


def summary_main(name: str, collect: Callable[[], dict[str, Any]], markdown: Callable[[dict[str, Any]], str],
                 argv: list[str] | None = None) -> Path:
    """The command line of a summary page (it measures nothing: `collect` reads the recorded pages): with no option
    it collects and writes <name>.{md,json}; --render-only rewrites the page from <name>.json. Unknown options are
    an error, so a mistyped flag is never recorded as the page's command."""
    ap = argparse.ArgumentParser(description=f"writes docs/results/{name}.md from the recorded pages")
    ap.add_argument("--render-only", action="store_true", help="rewrite the page from the recorded JSON")
    if ap.parse_args(argv).render_only:
        return render(name, markdown)
    return write_results(name, collect(), markdown)


def result_args(ap: argparse.ArgumentParser, seeds: list[int], runs: str | None = None) -> None:
    """The options every results benchmark shares: --seeds, --render-only and, for benchmarks that keep one
    directory per run (the sweep harness, `benchmarks.sweep`), --runs, --train-only, --collect and --only."""
    ap.add_argument("--seeds", type=int, nargs="+", default=seeds)
    ap.add_argument("--render-only", action="store_true", help="rewrite the page from the recorded JSON")
    if runs is not None:
        ap.add_argument("--runs", default=runs, help="where the trained runs are kept")
        ap.add_argument("--train-only", action="store_true", help="train this worker's share, record nothing")
        ap.add_argument("--collect", action="store_true", help="record from the kept runs, train nothing")
        ap.add_argument("--only", nargs="*", default=[], help="this worker's share: the jobs of these groups")


def timing_args(ap: argparse.ArgumentParser, repeats: int, threads: int | None = None, device: bool = False) -> None:
    """The options the speed benchmarks share: --repeats (rounds of `interleaved_median_seconds`), --render-only
    and, where the benchmark sets them, --threads (torch threads; its default is what the timed runs use) and
    --device (read by `ran_on`)."""
    ap.add_argument("--repeats", type=int, default=repeats, help="interleaved rounds; the median is reported")
    if threads is not None:
        ap.add_argument("--threads", type=int, default=threads, help="torch threads")
    if device:
        ap.add_argument("--device", default="auto")
    ap.add_argument("--render-only", action="store_true", help="rewrite the page from the recorded JSON")


def clear_run_dir(run_dir: Path) -> None:
    """Remove a run directory's contents except its hidden claim files (`.owner`, `.takeover-*`): what a run that
    starts again in a claimed directory begins from."""
    for f in run_dir.iterdir():
        if not f.name.startswith("."):
            shutil.rmtree(f) if f.is_dir() else f.unlink()


def claim_run_dir(run_dir: Path, resume: bool = False, stale_s: float = 1800.0) -> bool:
    """Create run_dir for this worker and record it as the owner (host and pid in `.owner`); False when another
    live worker has it. A directory whose owner is gone (same host and the pid no longer runs; another host or no
    `.owner`: nothing written for `stale_s` seconds) is taken over by one worker (an exclusive `.takeover-*` file
    decides): with `resume` its files stay (the caller continues from its latest checkpoint), otherwise they are
    removed first. The caller checks for a finished run (summary.json) before claiming."""
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    me = f"{socket.gethostname()} {os.getpid()}"
    try:
        run_dir.mkdir()
    except FileExistsError:
        owner = (run_dir / ".owner").read_text().split() if (run_dir / ".owner").is_file() else []
        if _owner_alive(run_dir, owner, stale_s):
            return False
        try:  # one taker per stale owner
            os.close(os.open(run_dir / f".takeover-{'-'.join(owner) or 'unknown'}", os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return False
        if not resume:
            clear_run_dir(run_dir)
        print(f"{run_dir}: its owner ({' '.join(owner) or 'unknown'}) is gone; taken over"
              + (" (resuming)" if resume else ""), flush=True)
    (run_dir / ".owner").write_text(me + "\n")
    return True


def _owner_alive(run_dir: Path, owner: list[str], stale_s: float) -> bool:
    if len(owner) == 2 and owner[0] == socket.gethostname():
        try:
            os.kill(int(owner[1]), 0)  # PermissionError: it runs, as another user
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True
    newest = max((f.stat().st_mtime for f in run_dir.rglob("*")), default=run_dir.stat().st_mtime)
    return time.time() - newest < stale_s


