"""Sequential-recommendation model configuration. The output layer is any head of the one registry
(`genfeat.heads.config.HEADS`); thesis C Table 2.7's rows are

    Softmax                  softmax_facet      (the thesis's extra facet layer; `softmax` is vanilla SASRec/GRU4Rec)
    Softmax + Mi             softmax+mi
    Multi-Softmax (MoS)      mos3-max           (K = 3, max-pooled logits)
    Softmax + C (+ Mi)       c, c+mi
    Softmax + CLR (+ Mi)     clr20,100,500, clr20,100,500+mi
    Multi-Softmax + CLR      mos3-max+clr20,100,500 (+mi)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from genfeat.errors import ConfigError
from genfeat.heads.config import HEADS, HeadConfig, named_head

ENCODERS = ("sasrec", "gru4rec", "repeatnet")
TABLE_2_7 = ("softmax", "softmax_facet", "softmax+mi", "mos3-max", "c", "c+mi", "clr20,100,500", "clr20,100,500+mi",
             "mos3-max+clr20,100,500", "mos3-max+clr20,100,500+mi")  # names in HEADS


@dataclass(frozen=True)
class SeqRecConfig:
    encoder: str = "sasrec"  # sasrec | gru4rec | repeatnet (its own decoders; `head` is not used)
    head: HeadConfig = HEADS["softmax_facet"]  # a name from HEADS or its fields (`--model.head.merge add`)
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
        if isinstance(self.head, str):  # SeqRecConfig(head="c+mi"), as on the command line
            object.__setattr__(self, "head", named_head(self.head))
        if self.encoder not in ENCODERS:
            raise ConfigError(f"model.encoder must be one of {', '.join(ENCODERS)}, got {self.encoder!r}")
        if self.head.kind == "pointer" or self.head.doc or self.head.stage2_candidates:
            raise ConfigError("model.head: a recommender reads out one position of its encoder's last layer; "
                              "pointer, DOC and two-stage heads are language-model heads")
        if self.readout not in ("last_valid", "last_slot"):
            raise ConfigError(f"model.readout must be last_valid or last_slot, got {self.readout!r}")
        if self.head_init not in ("encoder", "identity"):
            raise ConfigError(f"model.head_init must be encoder or identity, got {self.head_init!r}")
        if self.max_len < 1 or self.d < 1:
            raise ConfigError("model.max_len and model.d must be positive")

    def resolved_head(self) -> HeadConfig:
        """The head with Mi's depth H = every encoder layer (thesis: 2 for SASRec, 1 for GRU4Rec)."""
        if self.head.kind != "multi_facet":
            return self.head
        return dataclasses.replace(self.head, depth=self.n_layers if self.encoder == "sasrec" else 1)
