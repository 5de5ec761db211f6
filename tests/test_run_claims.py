"""Benchmark workers share run directories (`benchmarks.common.claim_run_dir`): a live owner keeps its run, a gone
owner's run is taken over once, kept for resuming or emptied."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from benchmarks.common import claim_run_dir


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_live_owner_keeps_its_run(tmp_path):
    run = tmp_path / "r"
    assert claim_run_dir(run)
    assert (run / ".owner").read_text().split() == [socket.gethostname(), str(os.getpid())]
    assert not claim_run_dir(run)  # this process is alive


def test_gone_owner_is_taken_over_once(tmp_path):
    for resume in (True, False):
        run = tmp_path / f"r{resume}"
        run.mkdir()
        (run / ".owner").write_text(f"{socket.gethostname()} {_dead_pid()}\n")
        (run / "checkpoints").mkdir()
        (run / "metrics.jsonl").write_text("{}\n")
        assert claim_run_dir(run, resume=resume)
        assert (run / "metrics.jsonl").exists() == resume and (run / "checkpoints").exists() == resume
        assert (run / ".owner").read_text().split()[1] == str(os.getpid())
        (run / ".owner").write_text(f"{socket.gethostname()} {_dead_pid()}\n")
        os.close(os.open(run / f".takeover-{(run / '.owner').read_text().strip().replace(' ', '-')}",
                         os.O_CREAT | os.O_EXCL))
        assert not claim_run_dir(run, resume=resume)  # another worker took this owner's run over first


def test_unknown_owner_by_age(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    (run / "metrics.jsonl").write_text("{}\n")
    assert not claim_run_dir(run, stale_s=3600)  # written just now: maybe alive elsewhere
    assert claim_run_dir(run, stale_s=0)


def test_results_record_the_device_that_ran(monkeypatch):
    """A benchmark's --device is what its results page names; without one, the device genfeat's `auto` picks."""
    import torch
    from benchmarks import common

    monkeypatch.setattr(sys, "argv", ["benchmarks/x.py", "--steps", "3", "--device", "cpu"])
    assert common.ran_on() == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(sys, "argv", ["benchmarks/x.py", "--device=cpu", "--steps", "3"])
    assert common.ran_on() == "cpu"
    monkeypatch.setattr(sys, "argv", ["benchmarks/x.py", "--steps", "3"])
    assert common.ran_on() == "cuda:0"


def test_speed_benchmarks_share_their_timing_options():
    import argparse

    from benchmarks import common

    ap = argparse.ArgumentParser()
    common.timing_args(ap, repeats=15, threads=1, device=True)
    args = ap.parse_args([])
    assert (args.repeats, args.threads, args.device, args.render_only) == (15, 1, "auto", False)
    assert ap.parse_args(["--device=cpu", "--render-only"]).device == "cpu"
    ap = argparse.ArgumentParser()
    common.timing_args(ap, repeats=5)
    assert vars(ap.parse_args([])) == {"repeats": 5, "render_only": False}  # no --threads / --device to ignore
