"""What every backbone returns; heads consume it (DESIGN.md, "Contracts")."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor


@dataclass
class BackboneOutput:
    """hidden: (B, T, d) last layer; all_hidden: per-layer (B, T, d) incl. embeddings, if asked;
    mems: per-layer memory for recurrent backbones (Transformer-XL), else None."""

    hidden: Tensor
    all_hidden: tuple[Tensor, ...] | None = None
    mems: tuple[Tensor, ...] | None = None
