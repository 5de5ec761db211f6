"""What every backbone returns (`BackboneOutput`) and declares it offers (`BackboneOffers`); heads consume it
(`heads.base.HeadNeeds`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import Tensor


@dataclass
class BackboneOutput:
    """hidden: (B, T, d) last layer; all_hidden: per-layer (B, T, d) incl. embeddings, if asked;
    mems: per-layer memory for recurrent backbones (Transformer-XL), else None; mem_ids: (B, M) the token ids at
    the memory's positions (-1: unknown), set by `models.lm.CausalLM` for a head that reads them; key_mask: the
    cache's real (not padding) positions when the call was given a key mask, carried to the next call."""

    hidden: Tensor
    all_hidden: tuple[Tensor, ...] | None = None
    mems: tuple[Tensor, ...] | None = None
    mem_ids: Tensor | None = None
    key_mask: Tensor | None = None  # (B, M) the cache's real positions, where the call was given a key mask

    def carry(self) -> dict[str, Any]:
        """The keyword arguments that continue from this output's memory (`mems`, and `mem_ids` when set):
        `model(next_ids, **out.carry())`; {} without a memory."""
        if self.mems is None:
            return {}
        return ({"mems": self.mems} | ({"mem_ids": self.mem_ids} if self.mem_ids is not None else {})
                | ({"key_mask": self.key_mask} if self.key_mask is not None else {}))


MEMORY_KINDS = (None, "recurrent", "cache")


@dataclass(frozen=True)
class BackboneOffers:
    """What a backbone offers beyond its hidden states, declared as `offers = BackboneOffers(...)` (the backbone's
    half of the head contract; heads declare what they read in `heads.base.HeadNeeds`).

    memory    None; "recurrent": a segment memory that is part of the model (Transformer-XL: carried through
              `mems=`, generation always uses it); "cache": an exact key / value cache (the GPT decoder: a
              shortcut generation uses where the head reads nothing the cache drops)
    ext_len   the trailing positions of each input that do not enter the next memory (Transformer-XL's
              reference option; 0 in every published configuration)
    positions True: the backbone takes explicit `position_ids` and a padding `key_mask` (the GPT decoder), so
              generation can read left-padded prompts and count positions itself (`models.sampling`)
    """

    memory: str | None = None
    ext_len: int = 0
    positions: bool = False

    def __post_init__(self) -> None:
        if self.memory not in MEMORY_KINDS:
            raise ValueError(f"memory must be one of {MEMORY_KINDS}, got {self.memory!r}")
        if self.ext_len < 0:
            raise ValueError(f"ext_len must be >= 0, got {self.ext_len}")
