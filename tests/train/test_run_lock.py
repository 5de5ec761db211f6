"""train/run_lock.py: one process a run directory, no lock outliving its process."""
import os
import subprocess
import sys

import pytest

from genfeat.errors import ConfigError
from genfeat.train.run_lock import LOCK, RunInUse, run_lock


def test_a_held_run_directory_is_refused_with_its_owner(tmp_path):
    with run_lock(tmp_path):
        assert (tmp_path / LOCK).read_text().strip() == str(os.getpid())
        with pytest.raises(RunInUse, match=rf"{tmp_path} is in use by process {os.getpid()} "):
            with run_lock(tmp_path):
                pass
    assert not (tmp_path / LOCK).exists()  # released and removed
    with run_lock(tmp_path):  # free again
        pass


def test_a_dead_processes_lock_file_does_not_block(tmp_path):
    """SIGKILL leaves `.lock` behind, but the kernel released its flock: the next run takes it."""
    code = ("import os, sys; from genfeat.train.run_lock import run_lock\n"
            "with run_lock(sys.argv[1]):\n    os.kill(os.getpid(), 9)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True)
    assert proc.returncode == -9 and (tmp_path / LOCK).is_file()
    (tmp_path / LOCK).write_text("4194304123\n")  # a dead owner's PID longer than ours
    with run_lock(tmp_path):
        assert (tmp_path / LOCK).read_text().strip() == str(os.getpid())


def test_a_lock_held_by_another_live_process_is_refused(tmp_path):
    code = ("import sys; from genfeat.train.run_lock import run_lock\n"
            "with run_lock(sys.argv[1]):\n    print('held', flush=True); sys.stdin.readline()\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(RunInUse, match=f"in use by process {proc.pid} "):
            with run_lock(tmp_path):
                pass
    finally:
        proc.communicate("\n", timeout=30)
    with run_lock(tmp_path):
        pass


def test_a_run_directory_that_cannot_hold_the_lock_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match=f"cannot write to the run directory {tmp_path / 'file'} "):
        with run_lock(tmp_path / "file"):
            pass


def test_a_lock_file_removed_while_being_locked_is_locked_again(tmp_path, monkeypatch):
    """The owner removes `.lock` between our open and our flock: our lock is on a file no one else will open, so we
    lock the new file at the path instead (else two processes would both hold the run)."""
    from genfeat.train import run_lock as R

    calls, flock = [], R.fcntl.flock

    def racing_flock(fd, op):
        calls.append(fd)
        flock(fd, op)
        if len(calls) == 1:
            (tmp_path / LOCK).unlink()  # as the previous owner's exit does

    monkeypatch.setattr(R.fcntl, "flock", racing_flock)
    with run_lock(tmp_path):
        assert len(calls) == 2 and (tmp_path / LOCK).read_text().strip() == str(os.getpid())
