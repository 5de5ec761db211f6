"""Hugging Face model directories: `config.json` + `model.safetensors` (or the older `pytorch_model.bin`), the
layout `PreTrainedModel.save_pretrained` writes and `from_pretrained` reads. Each family's `hf.py` maps keys and
re-ties what HF ties; this module only reads and writes the files, with errors that name them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import Tensor

from genfeat.config import atomic_write_text, default_mode
from genfeat.errors import CheckpointError

CONFIG, SAFETENSORS, TORCH_BIN = "config.json", "model.safetensors", "pytorch_model.bin"


def read_hf_config(directory: str | Path, model_types: tuple[str, ...]) -> dict[str, Any]:
    """The config dict of an HF model directory whose `model_type` is one of `model_types`."""
    d = Path(directory)
    if not d.is_dir():
        raise CheckpointError(f"{d}: not a directory (expected an HF model directory with {CONFIG})")
    try:
        cfg = json.loads((d / CONFIG).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{d / CONFIG}: missing; is {d} an HF model directory?") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{d / CONFIG}: not valid JSON ({e})") from None
    if not isinstance(cfg, dict) or cfg.get("model_type") not in model_types:
        got = cfg.get("model_type") if isinstance(cfg, dict) else None
        raise CheckpointError(f"{d / CONFIG}: model_type {got!r}, expected {' or '.join(model_types)}")
    return cfg


def read_hf_dir(directory: str | Path, model_types: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Tensor]]:
    """(config dict, state dict) of an HF model directory whose `model_type` is one of `model_types`."""
    d = Path(directory)
    cfg = read_hf_config(d, model_types)
    if (d / SAFETENSORS).is_file():
        try:
            return cfg, load_file(str(d / SAFETENSORS))
        except (SafetensorError, OSError) as e:
            raise CheckpointError(f"{d / SAFETENSORS}: unreadable ({e})") from None
    if (d / TORCH_BIN).is_file():
        try:
            return cfg, torch.load(d / TORCH_BIN, map_location="cpu", weights_only=True)
        except Exception as e:  # torch raises several types for a corrupt pickle
            raise CheckpointError(f"{d / TORCH_BIN}: unreadable ({e})") from None
    raise CheckpointError(f"{d}: neither {SAFETENSORS} nor {TORCH_BIN} found (sharded checkpoints are not "
                          "supported; merge them with transformers first)")


def write_hf_dir(directory: str | Path, config: dict[str, Any], state_dict: dict[str, Tensor]) -> None:
    """config.json + model.safetensors (metadata format "pt", as HF writes it). Each file is written to a temporary
    name and renamed into place. Tied weights must already be removed: safetensors refuses shared storage."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().contiguous().cpu() for k, v in state_dict.items()}
    tmp = d / f".{SAFETENSORS}.{os.getpid()}.tmp"
    save_file(tensors, str(tmp), metadata={"format": "pt"})
    tmp.chmod(default_mode())  # safetensors creates its files 0600
    os.replace(tmp, d / SAFETENSORS)
    atomic_write_text(d / CONFIG, json.dumps(config, indent=2, sort_keys=True) + "\n")
