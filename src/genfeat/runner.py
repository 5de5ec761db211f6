"""One way to run a recipe: `run_recipe`, which the CLI (`genfeat run`), the Python API and the benchmarks call.

    summary = run_recipe("lm", preset="tiny")                       # runs/lm-tiny-<time>/
    summary = run_recipe("facets", cfg, "runs/facets-k5")            # a config built in Python
    summary = run_recipe("facets", run_dir="runs/facets-k5", resume=True)   # continue its latest checkpoint

Every run gets the same treatment: `config.yaml` (recipe, preset, genfeat version, the config, the CPU thread
count) is written before training starts, the thread count is chosen once (a resumed or re-run config keeps the
one it was recorded with, so its arithmetic is the same: `train/threads.py`), torchrun's process group is set up
and torn down, and a run that fails before its first checkpoint leaves no directory behind (an interrupted run
that has trained keeps what it logged). The recipe's own `run(cfg, run_dir, resume_from)` trains through
`train.fit`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path
from typing import Any

from genfeat import __version__
from genfeat.config import atomic_write_text, dump_yaml, from_dict, load_yaml, to_dict
from genfeat.errors import ConfigError, Interrupted


def new_run_dir(out: str | Path | None, recipe: str, preset: str) -> Path:
    """`out` when it is free (missing, or holding only hidden files such as a sweep worker's claim), else
    ConfigError; without `out`, runs/<recipe>-<preset>-<time>."""
    if out:
        path = Path(out)
        if path.exists() and not path.is_dir():
            raise ConfigError(f"--out {path} is a file; give a directory for the run")
        if path.exists() and any(not p.name.startswith(".") for p in path.iterdir()):
            raise ConfigError(f"run directory {path} already exists and is not empty; "
                              "use --resume to continue it or choose another --out")
        return path
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = Path("runs") / f"{recipe}-{preset}-{stamp}"
    n = 1
    while path.exists():
        n += 1
        path = Path("runs") / f"{recipe}-{preset}-{stamp}-{n}"
    return path


def saved_run(run_dir: str | Path) -> dict[str, Any]:
    """A run directory's config.yaml (recipe, preset, config, cpu_threads)."""
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a genfeat run directory (no config.yaml)")
    return load_yaml(path)


def run_recipe(name: str | None, cfg: Any | None = None, run_dir: str | Path | None = None, *,
               preset: str | None = None, resume: bool = False, cpu_threads: int | None = None) -> dict[str, Any]:
    """Run recipe `name` (or an alias: `quickstart`) and return its summary.

    cfg          the recipe's config dataclass; None: the preset's (`preset`, else the alias's or the recipe's
                 default). With `resume`, None means the config recorded in `run_dir`.
    run_dir      where the run goes: missing or empty (None: runs/<recipe>-<preset>-<time>); with `resume`, an
                 existing run, continued from its latest complete checkpoint (`name` and `preset`, when given,
                 must be the recorded ones; `cfg` may differ from the recorded one where the checkpoint allows,
                 say a longer `train.max_steps`).
    cpu_threads  the thread count a recorded config ran with (a resume reads it from `run_dir`).

    One process trains into a run directory at a time (`train/run_lock.py`): another live one's run is refused.
    """
    with contextlib.ExitStack() as lock:
        return _run_recipe(name, cfg, run_dir, preset, resume, cpu_threads, lock)


def _run_recipe(name: str | None, cfg: Any | None, run_dir: str | Path | None, preset: str | None, resume: bool,
                cpu_threads: int | None, lock: contextlib.ExitStack) -> dict[str, Any]:
    from genfeat.paradigms.phases import in_earlier_phase
    from genfeat.registry import get_preset, get_recipe
    from genfeat.train import checkpoint as C
    from genfeat.train import distributed as D
    from genfeat.train.run_lock import run_lock
    from genfeat.train.threads import configure_threads

    resume_from = None
    if resume:
        if run_dir is None:
            raise ConfigError("resume needs the run directory to continue")
        run_dir = Path(run_dir)
        saved = saved_run(run_dir)
        if int(os.environ.get("RANK", "0")) == 0:
            lock.enter_context(run_lock(run_dir))
            C.remove_stale_temporaries(run_dir)
        recipe, _ = get_recipe(saved["recipe"])
        recorded = saved.get("preset", "?")
        if name and get_recipe(name)[0].name != recipe.name or preset and preset != recorded:
            raise ConfigError(f"{run_dir} is a `{recipe.name} --preset {recorded}` run; --resume continues it as it "
                              "is (drop the recipe / --preset, or start a new run with --out)")
        preset = recorded
        cfg = cfg if cfg is not None else from_dict(recipe.config_cls, saved["config"])
        cpu_threads = cpu_threads if cpu_threads is not None else saved.get("cpu_threads")
        resume_from = C.resume_point(run_dir)
        if resume_from is None and in_earlier_phase(run_dir):
            print(f"resuming {run_dir} in an earlier phase (its own checkpoints: {run_dir}/phases)")
        elif resume_from is None:
            what = "no checkpoint that verifies" if C.latest_checkpoint(run_dir) else "no checkpoint"
            raise C.CheckpointError(f"{run_dir} has {what} to resume from (looked in {run_dir}/checkpoints)")
        else:
            skipped = [d.name for d in C.checkpoint_dirs(run_dir) if d.name > resume_from.name]
            print(f"resuming from {resume_from}" + (f" (passing over {', '.join(skipped)})" if skipped else ""))
    else:
        if not name:
            raise ConfigError("give a recipe (see `genfeat ls`), --config FILE or --resume RUN_DIR")
        recipe, alias_preset = get_recipe(name)
        preset = preset or alias_preset or (recipe.default_preset if cfg is None else "custom")
        cfg = cfg if cfg is not None else get_preset(recipe, preset)
        if not isinstance(cfg, recipe.config_cls):
            raise ConfigError(f"recipe {recipe.name!r} takes a {recipe.config_cls.__name__}, got "
                              f"{type(cfg).__name__}")
        run_dir = new_run_dir(run_dir, recipe.name, preset)
    record = {"recipe": recipe.name, "preset": preset, "genfeat_version": __version__, "config": to_dict(cfg),
              "cpu_threads": configure_threads(cpu_threads)}
    created = not run_dir.exists()
    new_parents = [p for p in run_dir.absolute().parents if not p.exists()]  # e.g. runs/, made for this run
    info = D.setup(getattr(getattr(cfg, "train", None), "device", "auto"))

    def write_config(_: Path | None = None) -> None:
        if info.is_main:
            atomic_write_text(run_dir / "config.yaml", dump_yaml(record))

    finished = False
    try:
        if info.is_main:
            try:
                run_dir.mkdir(parents=True, exist_ok=True)
                probe = run_dir / f".write-test-{os.getpid()}"
                probe.write_text("")
                probe.unlink()
            except OSError as e:
                raise ConfigError(f"cannot write to the run directory {run_dir} ({e.strerror}); choose another "
                                  "--out") from None
            if not resume:
                lock.enter_context(run_lock(run_dir))
                new_run_dir(run_dir, recipe.name, preset)  # still free now that it is ours
        if resume_from is None:
            write_config()
        D.barrier()
        # a resumed run's config.yaml changes only once its checkpoint has been restored into the new config
        with C.on_restored(write_config) if resume_from is not None else contextlib.nullcontext():
            summary = recipe.run(cfg, run_dir, resume_from=resume_from)
        finished = True
        return summary
    except BaseException as e:
        # nothing half-written: a run that failed before its first checkpoint leaves no directory, but an
        # interrupted one (Ctrl-C, SIGTERM) that has trained keeps what it logged
        trained = C.latest_checkpoint(run_dir) is not None or in_earlier_phase(run_dir) or (
            isinstance(e, KeyboardInterrupt) and _nonempty(run_dir / "metrics.jsonl"))
        if info.is_main and created and not trained:
            shutil.rmtree(run_dir, ignore_errors=True)
            for parent in new_parents:  # innermost first; only if still empty
                with contextlib.suppress(OSError):
                    parent.rmdir()
        last = C.latest_checkpoint(run_dir) if run_dir.exists() else None
        if isinstance(e, KeyboardInterrupt) and last is not None:  # outside training: its finishing work, say
            raise Interrupted(f"interrupted after {last.name} (checkpoint kept); finish the run with "
                              f"`genfeat run --resume {run_dir}`") from None
        raise
    finally:
        D.teardown(wait_for_peers=finished)  # a failed rank must not wait for peers that may never get there


def _nonempty(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0
