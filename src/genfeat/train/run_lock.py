"""One process trains into a run directory at a time.

    with run_lock(run_dir):   # RunInUse (a ConfigError: exit 2) when another live process holds it
        ...                   # train, checkpoint, record

The lock is an advisory `flock` on `run_dir/.lock`, which holds the owner's PID for the message. The kernel
releases a flock when its process dies (SIGKILL included), so a crashed run never leaves a lock that blocks the
next one; a `.lock` file left behind by a dead process is simply locked again. The owner removes the file when it
is done; a process that opened the file just before it was removed sees another inode at the path after locking
and tries again, so two processes never both hold "the" lock.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from genfeat.errors import ConfigError

LOCK = ".lock"


class RunInUse(ConfigError):
    """Another live process trains into this run directory."""


@contextlib.contextmanager
def run_lock(run_dir: str | Path) -> Iterator[Path]:
    path = Path(run_dir) / LOCK
    fd = _acquire(path)
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):  # the directory may be gone (a failed fresh run is removed)
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                path.unlink()
        os.close(fd)  # releases the flock


def _acquire(path: Path) -> int:
    for _ in range(100):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise ConfigError(f"cannot write to the run directory {path.parent} ({e.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise RunInUse(f"{path.parent} is in use by process {owner} (a run training into it); wait for it to "
                           "finish, or choose another --out") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            return fd
        os.close(fd)  # removed by its owner between our open and our lock: lock the new file
    raise RunInUse(f"could not lock {path}")
