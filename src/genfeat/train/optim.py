"""Fine-tuning parameter groups: no weight decay on LayerNorm parameters and biases, and layer-wise learning-rate
decay (the XLNet reference's `model_utils.get_train_op`; spec xlnet.md §3.2 and pitfall 16).

With N layers found by `layer_pattern` (a regex whose first group is the layer index), a parameter of layer l
trains at lr * decay ** (N - 1 - l): the top layer at the full rate, each layer below `decay` times slower.
Parameters outside the layers (embeddings, shared relative biases, task heads) train at the full rate, as in
the reference, which scales only the `transformer/layer_<l>/` variables.

Deviation: the reference multiplies layer l's clipped *gradients* by the factor; under Adam that changes little
but the effective epsilon (Adam divides the scale out), so genfeat scales the learning rate, which is what the
option's name promises and what later implementations (ELECTRA, HF examples) do.
Weight decay is skipped for every parameter whose name contains "bias" or "layer_norm" / "LayerNorm" / "norm"
(the reference's `exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"]`; XLNet's r_w/r_r/r_s biases
included).
"""

from __future__ import annotations

import re

import torch
from torch import nn


def no_decay(name: str) -> bool:
    return "bias" in name or "norm" in name.lower()


def finetune_param_groups(model: nn.Module, weight_decay: float, layer_decay: float = 1.0,
                          layer_pattern: str = r"(?:^|\.)layer\.(\d+)\.") -> list[dict]:
    """AdamW parameter groups with `lr_scale` (multiply the base learning rate by it) and `weight_decay`."""
    if not 0.0 < layer_decay <= 1.0:
        raise ValueError(f"layer_decay must be in (0, 1], got {layer_decay}")
    pat = re.compile(layer_pattern)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    layers = [int(m[1]) for n, _ in named if (m := pat.search(n))]
    top = max(layers, default=-1)
    groups: dict[tuple[float, float], list[nn.Parameter]] = {}
    for n, p in named:
        m = pat.search(n)
        scale = layer_decay ** (top - int(m[1])) if m else 1.0
        groups.setdefault((scale, 0.0 if no_decay(n) else weight_decay), []).append(p)
    return [{"params": ps, "lr_scale": s, "weight_decay": wd} for (s, wd), ps in sorted(groups.items(), reverse=True)]


def finetune_optimizer(model: nn.Module, lr: float, weight_decay: float, layer_decay: float = 1.0,
                       eps: float = 1e-6) -> torch.optim.AdamW:
    """AdamW over `finetune_param_groups`; each group's lr = lr * lr_scale (schedulers scale it further)."""
    groups = finetune_param_groups(model, weight_decay, layer_decay)
    for g in groups:
        g["lr"] = lr * g["lr_scale"]
    return torch.optim.AdamW(groups, lr=lr, eps=eps)
