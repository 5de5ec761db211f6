"""Checkpoints: weights in safetensors, trainer state readable with `torch.load(weights_only=True)`.

Layout of a run directory:

    model.safetensors                       best (or final) weights
    checkpoints/step_00001000/model.safetensors
    checkpoints/step_00001000/trainer_state.pt   optimizers and schedulers (by name: "model", or a GAN's
                                                 "discriminator" and "generator"), RNG states (every rank),
                                                 data positions, step, early-stopping state
    checkpoints/step_00001000/checksums.json     the sha256 of the two files above

A checkpoint is written into a temporary directory, its files and the directory flushed to disk (fsync), and
renamed into place, so neither a crash nor a power loss leaves a half-written checkpoint under a `step_*` name;
leftovers of a killed writer (temporary or incomplete directories) are removed at the next save. Only the last
`keep_last` are kept: an old one is first renamed out of the `step_*` namespace, then deleted, so a kill during
rotation never leaves an incomplete `step_*`. `latest_checkpoint` returns the newest *complete* one (the three
files present); `resume_point` the newest whose files still have their recorded sha256 (a flipped byte that keeps
the file's size is caught: the resume falls back to the checkpoint before it and says so), and `restore_checkpoint`
verifies the one it is given. Weights that share storage (tied embeddings) are stored once, with the alias
recorded in the safetensors metadata. Works for plain, DDP and FSDP2 models through
`torch.distributed.checkpoint.state_dict` (full state dict on rank 0).

Any unreadable, truncated or mismatched file raises `CheckpointError` naming the file.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import hashlib
import json
import os
import random
import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save_file
from torch import nn

from genfeat.config import default_mode
from genfeat.errors import CheckpointError
from genfeat.train import distributed as D

WEIGHTS, STATE, CHECKSUMS = "model.safetensors", "trainer_state.pt", "checksums.json"
_STEP_DIR = re.compile(r"^step_(\d{8})$")


def _dcp(**options: bool):
    """(torch.distributed.checkpoint.state_dict, StateDictOptions(**options)). Imported on first use: the module
    takes seconds to import, which a command that never reads or writes a checkpoint should not pay."""
    from torch.distributed.checkpoint import state_dict

    return state_dict, state_dict.StateDictOptions(**options)


# ---------------------------------------------------------------- weights
@contextlib.contextmanager
def disk_full_named(path: Path):
    """A failed write on a full disk becomes OSError(ENOSPC, path): safetensors says "os error 28" in its own
    error type, and torch.save's zip writer only "unexpected pos" in a RuntimeError (then the free space decides)."""
    try:
        yield
    except OSError:
        raise
    except Exception as e:
        fs = os.statvfs(next(p for p in path.parents if p.exists()))
        if "os error 28" in str(e) or fs.f_bavail * fs.f_frsize < 1 << 20:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path)) from e
        raise


def save_weights(state_dict: dict[str, torch.Tensor], path: str | os.PathLike) -> None:
    """safetensors file; tensors sharing storage are written once (aliases in metadata). Atomic."""
    path = Path(path)
    kept: dict[str, torch.Tensor] = {}
    aliases: dict[str, str] = {}
    seen: dict[tuple, str] = {}
    for name, t in state_dict.items():
        key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)
        if t.numel() and key in seen:
            aliases[name] = seen[key]
        else:
            seen[key] = name
            kept[name] = t.detach().contiguous().cpu()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with disk_full_named(path):
            save_file(kept, str(tmp), metadata={"genfeat_aliases": json.dumps(aliases)})
        tmp.chmod(default_mode())  # safetensors creates its files 0600
        fsync(tmp)
        os.replace(tmp, path)
        fsync(path.parent)
    finally:
        tmp.unlink(missing_ok=True)


def fsync(path: str | os.PathLike) -> None:
    """Flush a file's (or a directory's entries') data to disk, so a rename that follows cannot survive a power
    loss that its contents do not."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load_weights(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint file {path} does not exist")
    try:
        with safe_open(str(path), framework="pt") as f:
            sd = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
            aliases = json.loads((f.metadata() or {}).get("genfeat_aliases", "{}"))
    except Exception as e:  # safetensors raises several types for bad headers / short files
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise CheckpointError(f"checkpoint file {path} is corrupt or truncated ({msg})") from None
    for alias, target in aliases.items():
        sd[alias] = sd[target]
    return sd


def load_model_weights(model: nn.Module, path: str | os.PathLike) -> None:
    """Load a weights file into a (possibly wrapped) model, with a clear error on any mismatch."""
    sd = load_weights(path)
    try:
        _check_keys(model, sd)
        dcp, strict = _dcp(full_state_dict=True, strict=True)
        dcp.set_model_state_dict(model, sd, options=strict)
    except (RuntimeError, KeyError, ValueError) as e:
        raise CheckpointError(f"checkpoint file {path} does not match the model: {str(e).splitlines()[0]}") from None


def _check_keys(model: nn.Module, sd: dict[str, torch.Tensor]) -> None:
    # set_model_state_dict(full_state_dict=True) silently skips missing keys, so compare names first
    own = D.unwrap(model).state_dict()
    missing, unexpected = sorted(set(own) - set(sd)), sorted(set(sd) - set(own))
    if missing or unexpected:
        raise RuntimeError(f"missing keys {missing[:4]}, unexpected keys {unexpected[:4]}")
    for k, t in own.items():
        if tuple(t.shape) != tuple(sd[k].shape):
            raise RuntimeError(f"{k} has shape {tuple(sd[k].shape)} in the file, {tuple(t.shape)} in the model")


def _check_optimizer_params(model: nn.Module, optimizer: torch.optim.Optimizer, saved: dict[str, Any]) -> None:
    """Group by group, every parameter of this optimizer is named in the file and the file names no other."""
    names: dict[nn.Parameter, set[str]] = {}
    for n, p in D.unwrap(model).named_parameters(remove_duplicate=False):
        names.setdefault(p, set()).add(n)  # a tied weight has several names; the file may list any of them
    own = [[names[p] for p in g["params"]] for g in optimizer.param_groups]
    theirs = [set(g["params"]) for g in saved["param_groups"]]
    if len(own) != len(theirs) or any(any(not n & t for n in o) or not t <= set().union(*o)
                                      for o, t in zip(own, theirs, strict=True)):
        raise RuntimeError(f"the optimizer's parameter groups differ: {[len(g) for g in theirs]} parameters "
                           f"in the file, {[len(g) for g in own]} in this optimizer")


def _drop_state_not_saved(model: nn.Module, optimizer: torch.optim.Optimizer, saved: dict[str, Any]) -> None:
    """`set_optimizer_state_dict` first gives every parameter a state (a zero-gradient step) and then loads the
    file's; a parameter the file has no state for (it never had a gradient) would keep that made-up state, so
    the resumed optimizer would differ from the uninterrupted one. It is removed here: the parameter is as it
    was, stateless."""
    names: dict[nn.Parameter, set[str]] = {}
    for n, p in D.unwrap(model).named_parameters(remove_duplicate=False):
        names.setdefault(p, set()).add(n)  # a tied weight: the file may key its state by any of its names
    kept = set(saved["state"])
    for p, ns in names.items():
        if p in optimizer.state and not ns & kept:
            del optimizer.state[p]


def save_model_weights(model: nn.Module, path: str | os.PathLike) -> None:
    """Full weights of a plain, DDP or FSDP2 model to one safetensors file. Collective (every rank calls
    it, so FSDP shards can be gathered); rank 0 writes, and every rank returns once the file is there (a rank
    that reads it next, say to reload the final weights, finds it)."""
    dcp, full = _dcp(full_state_dict=True, cpu_offload=True)
    msd = dcp.get_model_state_dict(model, options=full)
    if D.current().is_main:
        save_weights(msd, path)
    D.barrier()


# ---------------------------------------------------------------- RNG
def rng_state() -> dict[str, Any]:
    np_state = np.random.get_state()
    py_version, py_state, py_gauss = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "numpy": {"keys": torch.from_numpy(np_state[1].astype(np.int64)), "pos": int(np_state[2]),
                  "has_gauss": int(np_state[3]), "cached_gaussian": float(np_state[4])},
        "python": {"version": py_version, "state": list(py_state), "gauss": py_gauss},
    }


def set_rng_state(s: dict[str, Any]) -> None:
    torch.set_rng_state(s["torch"])
    if s["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(s["cuda"])
    n = s["numpy"]
    np.random.set_state(("MT19937", n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"],
                         n["cached_gaussian"]))
    p = s["python"]
    random.setstate((p["version"], tuple(p["state"]), p["gauss"]))


# ---------------------------------------------------------------- checkpoints
def checkpoint_dirs(run_dir: str | os.PathLike) -> list[Path]:
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and _STEP_DIR.match(p.name))


def is_complete(ckpt: Path) -> bool:
    return all((ckpt / f).is_file() for f in (WEIGHTS, STATE, CHECKSUMS))


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


# checkpoint dir -> its files' (size, mtime_ns, ctime_ns, inode) when they last hashed right in this process
_VERIFIED: dict[Path, tuple] = {}


def verify_checkpoint(ckpt: str | os.PathLike) -> None:
    """CheckpointError unless the checkpoint's weights and trainer state have the sha256 recorded when they were
    written (once per process for files left untouched since)."""
    ckpt = Path(ckpt).absolute()
    try:
        want = json.loads((ckpt / CHECKSUMS).read_text())
        stats = tuple((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                      for st in ((ckpt / f).stat() for f in (WEIGHTS, STATE)))
    except (OSError, ValueError) as e:
        raise CheckpointError(f"checkpoint {ckpt} is incomplete or its {CHECKSUMS} is unreadable ({e})") from None
    if _VERIFIED.get(ckpt) == stats:
        return
    for name in (WEIGHTS, STATE):
        if not isinstance(want, dict) or _sha256(ckpt / name) != want.get(name):
            raise CheckpointError(f"checkpoint file {ckpt / name} does not match its sha256 in {CHECKSUMS} "
                                  "(changed or damaged since it was written)")
    _VERIFIED[ckpt] = stats


def resume_point(run_dir: str | os.PathLike, report: Callable[[str], None] = print) -> Path | None:
    """The newest checkpoint whose files verify (`verify_checkpoint`); each newer one that does not is reported
    and passed over (None when none verifies)."""
    for ckpt in reversed([d for d in checkpoint_dirs(run_dir) if is_complete(d)]):
        try:
            verify_checkpoint(ckpt)
            return ckpt
        except CheckpointError as e:
            report(f"skipping {ckpt.name}: {e}")
    return None


def latest_checkpoint(run_dir: str | os.PathLike) -> Path | None:
    """The newest complete checkpoint directory (None if there is none)."""
    dirs = [d for d in checkpoint_dirs(run_dir) if is_complete(d)]
    return dirs[-1] if dirs else None


def remove_stale_temporaries(run_dir: str | os.PathLike) -> list[Path]:
    """Delete the half-written files (`.NAME.*.tmp`, from `save_weights` and `atomic_write_text`) that killed
    writers left anywhere in a run directory (`save_checkpoint` clears its own `.tmp-step_*`). Only for a process
    that holds the run's lock (`train/run_lock.py`): then no writer is alive."""
    stale = [p for p in Path(run_dir).rglob(".*.tmp") if p.is_file()]
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def _remove(path: Path) -> None:
    """Delete a checkpoint directory: renamed out of the step_* namespace first (atomic), then removed."""
    trash = path.with_name(f".trash-{path.name}-{os.getpid()}")
    os.replace(path, trash)
    shutil.rmtree(trash, ignore_errors=True)


def save_checkpoint(run_dir: str | os.PathLike, step: int, model: nn.Module,
                    optimizers: Mapping[str, torch.optim.Optimizer], schedulers: Mapping[str, Any],
                    extra: dict[str, Any], keep_last: int = 2) -> Path:
    """Collective (all ranks call it); rank 0 writes. Returns the checkpoint directory. Optimizer states are
    keyed by parameter name (so a checkpoint loads into a differently wrapped model)."""
    dcp, full = _dcp(full_state_dict=True, cpu_offload=True)
    msd = dcp.get_model_state_dict(model, options=full)
    osds = {name: dcp.get_optimizer_state_dict(model, opt, options=full) for name, opt in optimizers.items()}
    rngs = D.gather_objects(rng_state())
    root = Path(run_dir) / "checkpoints"
    final = root / f"step_{step:08d}"
    if D.current().is_main:
        root.mkdir(parents=True, exist_ok=True)
        for stale in root.glob(".tmp-step_*"):  # a writer killed mid-save (rank 0 is the only writer)
            shutil.rmtree(stale, ignore_errors=True)
        for stale in root.glob(".trash-step_*"):
            shutil.rmtree(stale, ignore_errors=True)
        for broken in (d for d in checkpoint_dirs(run_dir) if not is_complete(d)):
            _remove(broken)
        tmp = root / f".tmp-{final.name}-{os.getpid()}"
        tmp.mkdir()
        try:
            save_weights(msd, tmp / WEIGHTS)
            state = {"step": step, "optimizers": osds, "schedulers": {k: s.state_dict() for k, s in schedulers.items()},
                     "rng": rngs, **extra}
            with disk_full_named(final / STATE):
                torch.save(state, tmp / STATE)
            fsync(tmp / STATE)
            sums = {name: _sha256(tmp / name) for name in (WEIGHTS, STATE)}
            (tmp / CHECKSUMS).write_text(json.dumps(sums, indent=1) + "\n")
            fsync(tmp / CHECKSUMS)
            fsync(tmp)
            if final.exists():
                _remove(final)
            os.replace(tmp, final)
            fsync(root)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        for old in [d for d in checkpoint_dirs(run_dir) if is_complete(d)][: -max(1, keep_last)]:
            _remove(old)
    D.barrier()
    return final


def load_trainer_state(ckpt: str | os.PathLike) -> dict[str, Any]:
    path = Path(ckpt) / STATE
    if not path.is_file():
        raise CheckpointError(f"checkpoint file {path} does not exist")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # zip / unpickling errors of every kind on a damaged file
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise CheckpointError(f"checkpoint file {path} is corrupt or truncated ({msg})") from None
    if not isinstance(state, dict) or not {"step", "optimizers", "schedulers", "rng"} <= set(state):
        raise CheckpointError(f"checkpoint file {path} is not a genfeat trainer state")
    return state


_ON_RESTORED: contextvars.ContextVar[tuple[Callable[[Path], None], ...]] = contextvars.ContextVar(
    "on_restored", default=())


@contextlib.contextmanager
def on_restored(callback: Callable[[Path], None]):
    """Within the block, `callback(checkpoint_dir)` runs after each successful `restore_checkpoint`: the CLI
    rewrites a resumed run's config.yaml only once the checkpoint is known to fit the (possibly overridden)
    config, so a refused resume leaves the run directory as it was."""
    token = _ON_RESTORED.set(_ON_RESTORED.get() + (callback,))
    try:
        yield
    finally:
        _ON_RESTORED.reset(token)


def restore_checkpoint(ckpt: str | os.PathLike, model: nn.Module, optimizers: Mapping[str, torch.optim.Optimizer],
                       schedulers: Mapping[str, Any]) -> dict[str, Any]:
    """Load weights, optimizers, schedulers and this rank's RNG state; return the trainer state dict. Runs the
    `on_restored` callbacks once everything matched."""
    ckpt = Path(ckpt)
    verify_checkpoint(ckpt)
    state = load_trainer_state(ckpt)
    sd = load_weights(ckpt / WEIGHTS)
    try:
        _check_keys(model, sd)
        if set(state["optimizers"]) != set(optimizers):
            raise RuntimeError(f"optimizers {sorted(state['optimizers'])} in the file, {sorted(optimizers)} here")
        for name, opt in optimizers.items():
            _check_optimizer_params(model, opt, state["optimizers"][name])
        # strict=False: a parameter that never had a gradient (an input the loss does not use, such as
        # XLNet's query-stream vector under masked-LM) has no optimizer state yet, which is not a mismatch;
        # the weights and the optimizer's parameters were both compared by name just above
        dcp, loose = _dcp(full_state_dict=True, strict=False)
        dcp.set_model_state_dict(model, sd, options=loose)
        for name, opt in optimizers.items():
            osd = state["optimizers"][name]
            # an optimizer without tensor state (plain SGD) has nothing to shard; the full-state path cannot
            # tell its device from an empty state and refuses, so it loads as a local state dict
            dcp.set_optimizer_state_dict(model, opt, osd, options=loose if osd["state"] else
                                         dcp.StateDictOptions(full_state_dict=False, strict=False))
            _drop_state_not_saved(model, opt, osd)
        if set(state["schedulers"]) != set(schedulers):
            raise RuntimeError(f"schedulers {sorted(state['schedulers'])} in the file, {sorted(schedulers)} here")
        for name, scheduler in schedulers.items():
            scheduler.load_state_dict(state["schedulers"][name])
    except (RuntimeError, KeyError, ValueError) as e:
        raise CheckpointError(f"checkpoint {ckpt} does not match this model/optimizer: "
                              f"{str(e).splitlines()[0]}") from None
    info = D.current()
    if len(state["rng"]) != info.world_size:
        raise CheckpointError(f"checkpoint {ckpt} was written by {len(state['rng'])} ranks; "
                              f"resuming with {info.world_size} would not continue exactly")
    set_rng_state(state["rng"][info.rank])
    for callback in _ON_RESTORED.get():
        callback(ckpt)
    return state
