"""How many intra-op threads a CPU run uses: the CPUs this process may use, minus those other work keeps busy.

torch's default is one thread per core, which is best on an idle machine and worst on a busy one: OpenMP's
threads spin while they wait for each other, so a 2-thread step beside one other busy process runs several times
slower than a 1-thread step (docs/results/threads_busy.md). genfeat therefore picks, when a run starts:

    threads = max(1, available CPUs - other runnable tasks)

`available CPUs` honours the affinity mask (taskset, SLURM, Kubernetes cpusets) and a cgroup v2 CPU quota;
`other runnable tasks` is the median of a few instantaneous readings of the running-task count in /proc/loadavg
(the reader itself excluded). Set `OMP_NUM_THREADS` (or `GENFEAT_THREADS`) to choose yourself; both win. The
count is recorded in the run's config.yaml (`cpu_threads`), and `--resume` / `--config` reuse it.
"""

from __future__ import annotations

import os
import time


def available_cpus() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        n = os.cpu_count() or 1
    try:
        quota, period = open("/sys/fs/cgroup/cpu.max").read().split()
        if quota != "max":
            n = min(n, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass
    return n


def other_runnable(samples: int = 5, interval: float = 0.02) -> int:
    """Tasks running or ready to run on this machine, besides this process (0 where /proc is unavailable)."""
    counts = []
    for i in range(samples):
        try:
            running = int(open("/proc/loadavg").read().split()[3].split("/")[0])
        except (OSError, ValueError, IndexError):
            return 0
        counts.append(max(0, running - 1))
        if i + 1 < samples:
            time.sleep(interval)
    return sorted(counts)[len(counts) // 2]


def default_threads() -> int:
    return max(1, available_cpus() - other_runnable())


def chosen_threads() -> int:
    """GENFEAT_THREADS as a count (ConfigError unless a whole number >= 1)."""
    from genfeat.errors import ConfigError

    value = os.environ["GENFEAT_THREADS"]
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise ConfigError(f"GENFEAT_THREADS={value[:40]!r}: give a whole number of threads >= 1 (or unset it)")
    return n


def configure_threads(recorded: int | None = None) -> int:
    """Set torch's intra-op thread count for this run and return it. The user's choice (GENFEAT_THREADS, or
    OMP_NUM_THREADS, which torch already follows) wins; then `recorded`, the count a resumed or re-run config was
    made with (CPU kernels may sum in another order with another count, so this keeps a resume bitwise exact);
    then the free CPUs."""
    import torch

    if "GENFEAT_THREADS" in os.environ:
        torch.set_num_threads(chosen_threads())
    elif "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(max(1, int(recorded)) if recorded else default_threads())
    return torch.get_num_threads()
