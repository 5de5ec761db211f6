"""Sequential-recommendation model configuration and the output layers of thesis C Table 2.7."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from genfeat.errors import ConfigError
from genfeat.heads.config import HeadConfig

ENCODERS = ("sasrec", "gru4rec", "repeatnet")


def _mf(**kw) -> HeadConfig:
    return HeadConfig(kind="multi_facet", **kw)


_MI = {"multi_input": True}
_CLR = {"context": True, "local": True, "reranker_sizes": (20, 100, 500)}
_MOS = {"num_softmax": 3, "mixture": "max_logits"}
# Table 2.7 rows. "softmax" has the one extra facet layer of the thesis; "plain" is vanilla SASRec/GRU4Rec.
# Mi depth (H) is set from the encoder (all its layers: 2 for SASRec, 1 for GRU4Rec), window W = 3.
SEQREC_HEADS: dict[str, HeadConfig] = {
    "plain": HeadConfig(), "softmax": HeadConfig(facet_proj=True), "softmax+mi": _mf(**_MI), "mos": _mf(**_MOS),
    "c": _mf(context=True), "c+mi": _mf(context=True, **_MI), "clr": _mf(**_CLR), "clr+mi": _mf(**_CLR, **_MI),
    "mos+clr": _mf(**_MOS, **_CLR), "mos+clr+mi": _mf(**_MOS, **_CLR, **_MI),
}


@dataclass(frozen=True)
class SeqRecConfig:
    encoder: str = "sasrec"  # sasrec | gru4rec | repeatnet (its own decoders; `head` is not used)
    head: str = "softmax"  # a row of SEQREC_HEADS
    head_config: HeadConfig | None = None  # a custom head instead of the named row
    merge: str = "assign"  # dynamic partitions: assign (= "replace", the equations) | add (thesis-era code)
    readout: str = "last_valid"  # last_valid: position len-1 | last_slot: position L-1 (the reference code)
    head_init: str = "encoder"  # encoder: the head's Linear layers re-initialised as the encoder's (reference)
    #                             identity: the thesis's LM init (identity facets, 1e-10·I for L)
    max_len: int = 50
    d: int = 64  # item embedding / hidden size
    n_layers: int = 2  # SASRec
    n_heads: int = 2
    d_inner: int = 256
    dropout: float = 0.2  # SASRec hidden + attention (thesis: 0.5 -> 0.2); GRU4Rec 0.3; RepeatNet 0.5
    attn_dropout: float = 0.2
    gru_hidden: int = 128  # GRU4Rec (RepeatNet: d)

    def __post_init__(self) -> None:
        if self.encoder not in ENCODERS:
            raise ConfigError(f"model.encoder must be one of {', '.join(ENCODERS)}, got {self.encoder!r}")
        if self.head not in SEQREC_HEADS:
            raise ConfigError(f"model.head must be one of {', '.join(SEQREC_HEADS)}, got {self.head!r}")
        if self.merge not in ("assign", "add"):
            raise ConfigError(f"model.merge must be assign or add, got {self.merge!r}")
        if self.readout not in ("last_valid", "last_slot"):
            raise ConfigError(f"model.readout must be last_valid or last_slot, got {self.readout!r}")
        if self.head_init not in ("encoder", "identity"):
            raise ConfigError(f"model.head_init must be encoder or identity, got {self.head_init!r}")
        if self.max_len < 1 or self.d < 1:
            raise ConfigError("model.max_len and model.d must be positive")

    def resolved_head(self) -> HeadConfig:
        """The head with Mi's depth = every encoder layer (thesis) and the merge mode applied."""
        h = self.head_config or SEQREC_HEADS[self.head]
        if h.kind == "multi_facet":
            depth = self.n_layers if self.encoder == "sasrec" else 1
            h = dataclasses.replace(h, depth=depth, merge=self.merge)
        return h
