"""torchrun integration: process group, device, DDP / FSDP2 wrapping, rank-0 helpers.

Launch any recipe unchanged with

    torchrun --standalone --nproc_per_node=N -m genfeat run <recipe> --preset P ...

`torchrun` sets RANK / WORLD_SIZE / LOCAL_RANK; without them everything runs in one process. The
data iterators shard each global batch over ranks (see genfeat.data.streams), so N ranks with
local batch B/N see exactly the batches one process with batch B sees.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.distributed as dist
from torch import nn

from genfeat.errors import ConfigError


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def resolve_device(name: str = "auto", local_rank: int = 0) -> torch.device:
    if name == "auto":
        return torch.device(f"cuda:{local_rank}") if torch.cuda.is_available() else torch.device("cpu")
    try:
        dev = torch.device(name)
    except RuntimeError:
        raise ConfigError(f"train.device: unknown device {name!r}; use auto, cpu, cuda or cuda:N") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"train.device={name}: no CUDA device is available here; use --train.device cpu (or auto)")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ConfigError(f"train.device={name}: only {torch.cuda.device_count()} CUDA device(s) here")
    if dev.type not in ("cpu", "cuda", "mps"):
        raise ConfigError(f"train.device: {name!r} is not supported; use auto, cpu or cuda")
    return dev


_run_device: torch.device | None = None  # the device `setup` resolved for this process's run


def setup(device: str = "auto") -> DistInfo:
    """Initialise the process group if launched by torchrun (idempotent); return this rank's info. The device is
    remembered for `current` (what a run's record names)."""
    global _run_device
    world = launched_ranks()
    if world <= 1:
        _run_device = resolve_device(device)
        return DistInfo(device=_run_device)
    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    dev = _run_device = resolve_device(device, local_rank)
    if not dist.is_initialized():
        if dev.type == "cuda":
            torch.cuda.set_device(dev)
        dist.init_process_group(backend="nccl" if dev.type == "cuda" else "gloo", device_id=dev
                                if dev.type == "cuda" else None)
    return DistInfo(rank=rank, world_size=world, local_rank=local_rank, device=dev)


def launched_ranks() -> int:
    """How many ranks torchrun launched (WORLD_SIZE; 1 without torchrun), readable before any process group."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def current() -> DistInfo:
    """Info for this process without initialising anything; the device is the one `setup` resolved (before any
    `setup`: what `auto` picks)."""
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = _run_device or resolve_device("auto", local_rank)
    if dist.is_available() and dist.is_initialized():
        return DistInfo(dist.get_rank(), dist.get_world_size(), local_rank, device)
    return DistInfo(device=device)


def wrap(model: nn.Module, info: DistInfo, strategy: Literal["ddp", "fsdp"] = "ddp") -> nn.Module:
    """DDP (default) or FSDP2 `fully_shard` (each top-level child, then the root) when distributed."""
    if not info.enabled:
        return model
    if strategy == "fsdp":
        from torch.distributed.fsdp import fully_shard

        for module in model.modules():
            if isinstance(module, nn.ModuleList):
                for block in module:
                    fully_shard(block)
        return fully_shard(model)
    ids = [info.device.index] if info.device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(model, device_ids=ids)


def unwrap(model: nn.Module) -> nn.Module:
    return model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model


def world_size() -> int:
    """The number of ranks of the process group (1 when not distributed)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def all_reduce_sum(t: torch.Tensor) -> torch.Tensor:
    """The sum of `t` over the ranks (a copy; `t` itself when not distributed)."""
    if dist.is_available() and dist.is_initialized():
        t = t.clone()
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t


def global_batch(x: torch.Tensor) -> torch.Tensor:
    """The rows of `x` of every rank concatenated in rank order (the global batch), for a loss that is not a mean
    of per-row terms (feature matching's batch means, the pull-away term's pairs). This rank's rows keep their
    graph, with their gradient multiplied by W; the other ranks' rows are constants. Every rank then computes the
    same loss, and once the ranks' gradients are averaged (DDP, or `fit`'s averaging), each parameter has the
    gradient one process would get from the whole batch: Σ_r W·(rank r's part) / W. `x` itself when not
    distributed. Every rank must pass the same number of rows."""
    world = world_size()
    if world == 1:
        return x
    parts = [torch.empty_like(x) for _ in range(world)]
    dist.all_gather(parts, x.detach().contiguous())
    parts[dist.get_rank()] = x + (world - 1) * (x - x.detach())  # the value of x, W times its gradient
    return torch.cat(parts, 0)


def average_gradients(params: list[torch.Tensor]) -> None:
    """Average the gradients of `params` over the ranks in place (one all-reduce of their concatenation), as DDP
    does; parameters without a gradient are left alone (every rank has the same graph)."""
    world = world_size()
    grads = [p.grad for p in params if p.grad is not None]
    if world == 1 or not grads:
        return
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    flat /= world
    offset = 0
    for g in grads:
        g.copy_(flat[offset: offset + g.numel()].view_as(g))
        offset += g.numel()


def all_reduce_mean(t: torch.Tensor) -> torch.Tensor:
    if dist.is_available() and dist.is_initialized():
        t = t.clone()
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        t /= dist.get_world_size()
    return t


def gather_objects(obj: Any) -> list[Any]:
    """Every rank's `obj`, in rank order (a one-element list when not distributed)."""
    if not (dist.is_available() and dist.is_initialized()):
        return [obj]
    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def broadcast_object(obj: Any) -> Any:
    if not (dist.is_available() and dist.is_initialized()):
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def barrier() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def teardown(wait_for_peers: bool = True) -> None:
    """Destroy the process group, after a barrier unless `wait_for_peers` is False (a rank that failed: its peers
    may never reach the barrier). Without the barrier a rank that finishes first shuts its gloo pairs down while a
    peer may still be sending; a rank has died in that shutdown with SIGABRT ("terminate called without an active
    exception", the FSDP2 test under CI load)."""
    if dist.is_available() and dist.is_initialized():
        if wait_for_peers:
            dist.barrier()
        dist.destroy_process_group()
