"""`genfeat` under `torchrun --standalone --nproc_per_node=N` on CPU (gloo), for the recipe-level distributed tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def torchrun_genfeat(args: list[str], nproc: int = 2) -> None:
    """Run `genfeat ARGS` on `nproc` CPU ranks (one thread each); fail with the tail of stderr if it fails."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1", "GENFEAT_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}", "-m", "genfeat",
           *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
