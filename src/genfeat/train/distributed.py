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


def setup(device: str = "auto") -> DistInfo:
    """Initialise the process group if launched by torchrun (idempotent); return this rank's info."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo(device=resolve_device(device))
    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    dev = resolve_device(device, local_rank)
    if not dist.is_initialized():
        if dev.type == "cuda":
            torch.cuda.set_device(dev)
        dist.init_process_group(backend="nccl" if dev.type == "cuda" else "gloo", device_id=dev
                                if dev.type == "cuda" else None)
    return DistInfo(rank=rank, world_size=world, local_rank=local_rank, device=dev)


def current() -> DistInfo:
    """Info for this process without initialising anything."""
    if dist.is_available() and dist.is_initialized():
        return DistInfo(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")),
                        resolve_device("auto", int(os.environ.get("LOCAL_RANK", "0"))))
    return DistInfo()


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


def teardown() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
