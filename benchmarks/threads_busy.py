"""Training speed on a busy machine: intra-op threads and OpenMP's wait policy; records
docs/results/threads_busy.{md,json}.

    python -m benchmarks.threads_busy [--seconds 6] [--repeats 3]

The step: a 6-layer, 512-wide MLP (batch 256, AdamW), forward + backward + step, in a fresh process per setting
(OpenMP reads its settings once, at start). Settings: torch's default thread count, one thread, the default
count with `OMP_WAIT_POLICY=PASSIVE` (waiting threads sleep instead of spinning), and genfeat's choice (the free
CPUs when the run starts, `genfeat.train.threads`). Each runs with the machine idle
and beside one busy process (a pure-Python spin loop, as another user's job would be), interleaved, repeated;
steps per second, median over repeats, and ratios to the default within the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from typing import Any

from benchmarks.common import header, write_results

NAME = "threads_busy"
SETTINGS = {"default threads": {}, "1 thread": {"OMP_NUM_THREADS": "1"},
            "default threads, OMP_WAIT_POLICY=PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"},
            "genfeat: free CPUs (train/threads.py)": {"GENFEAT_PICK_THREADS": "1"}}

WORKER = """
import os, sys, time, torch
seconds = float(sys.argv[1])
if os.environ.get("GENFEAT_PICK_THREADS"):
    from genfeat.train.threads import configure_threads
    configure_threads()
torch.manual_seed(0)
layers = []
for _ in range(6):
    layers += [torch.nn.Linear(512, 512), torch.nn.ReLU()]
net = torch.nn.Sequential(*layers, torch.nn.Linear(512, 10))
opt = torch.optim.AdamW(net.parameters(), 1e-3)
x, y = torch.randn(256, 512), torch.randint(0, 10, (256,))
def step():
    loss = torch.nn.functional.cross_entropy(net(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
for _ in range(5):
    step()
n, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < seconds:
    step(); n += 1
print(n / (time.perf_counter() - t0), torch.get_num_threads())
"""


def measure(env_extra: dict[str, str], seconds: float, busy: bool) -> tuple[float, int]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    env |= env_extra
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        out = subprocess.run([sys.executable, "-c", WORKER, str(seconds)], env=env, capture_output=True, text=True,
                             check=True).stdout.split()
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    return float(out[0]), int(out[1])


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    lines = ["# Training speed on a busy machine: threads and OpenMP's wait policy", "", header(record), "",
             __doc__.split("\n\n", 2)[2].strip(), "",
             "| setting | idle: threads | steps/s | ratio | one busy process: threads | steps/s | ratio |",
             "|---|---|---|---|---|---|---|"]
    for name, r in res["settings"].items():
        lines.append(f"| {name} | {r['threads_idle']} | {r['idle']:.1f} | {r['idle_ratio']:.2f} | "
                     f"{r['threads_busy']} | {r['busy']:.1f} | {r['busy_ratio']:.2f} |")
    lines += ["", "## Reading", "", res["reading"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    raw: dict[str, dict[str, list[float]]] = {n: {"idle": [], "busy": []} for n in SETTINGS}
    threads: dict[str, dict[str, int]] = {n: {} for n in SETTINGS}
    for _ in range(args.repeats):
        for load in ("idle", "busy"):
            for name, env in SETTINGS.items():
                rate, threads[name][load] = measure(env, args.seconds, load == "busy")
                raw[name][load].append(rate)
                print(name, load, f"{rate:.1f}", threads[name][load], flush=True)
    med = {n: {k: statistics.median(v) for k, v in d.items()} for n, d in raw.items()}
    base = med["default threads"]
    settings = {n: {"threads_idle": threads[n]["idle"], "threads_busy": threads[n]["busy"], "idle": m["idle"],
                    "busy": m["busy"], "idle_ratio": m["idle"] / base["idle"], "busy_ratio": m["busy"] / base["busy"],
                    "raw": raw[n]} for n, m in med.items()}
    one, passive = settings["1 thread"], settings["default threads, OMP_WAIT_POLICY=PASSIVE"]
    ours = settings["genfeat: free CPUs (train/threads.py)"]
    reading = (f"Beside one busy process, torch's default ({settings['default threads']['threads_busy']} threads, "
               f"active waiting) runs at {base['busy'] / base['idle']:.2f}x its idle speed. One thread runs at "
               f"{one['busy_ratio']:.2f}x the default there and passive waiting at {passive['busy_ratio']:.2f}x; idle, "
               f"they cost {1 - one['idle_ratio']:.0%} and {1 - passive['idle_ratio']:.0%}. genfeat's choice (the "
               f"free CPUs at the start of the run: {ours['threads_idle']} idle, {ours['threads_busy']} busy) keeps "
               f"the default's idle speed ({ours['idle_ratio']:.2f}x) and runs at {ours['busy_ratio']:.2f}x the "
               f"default beside the busy process, so it is genfeat's default; OMP_NUM_THREADS or GENFEAT_THREADS "
               f"overrides it. A load that starts after the run has started is not seen.")
    print(json.dumps(settings, indent=1))
    print(write_results(NAME, {"settings": settings, "reading": reading}, markdown))


if __name__ == "__main__":
    main()
