"""XLNet configuration and presets (thesis Y §2.2; reference configurations in spec xlnet.md §3.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from genfeat.errors import ConfigError

ACTIVATIONS = ("gelu_tanh", "gelu", "relu")


@dataclass(frozen=True)
class XLNetConfig:
    vocab_size: int = 0  # 0: from the tokenizer
    n_layer: int = 4
    d_model: int = 128
    n_head: int = 4
    d_head: int = 32
    d_inner: int = 512
    ff_activation: Literal["gelu_tanh", "gelu", "relu"] = "gelu_tanh"  # the reference: tanh-approximated GELU
    dropout: float = 0.1
    dropatt: float = 0.1
    untie_r: bool = True  # per-layer r_w / r_r / r_s biases (released checkpoints); False: shared by all layers
    attn_type: Literal["bi", "uni"] = "bi"  # uni: causal (+ same_length), a Transformer-XL LM
    bi_data: bool = False  # second half of the batch reads reversed text: negated relative positions
    clamp_len: int = -1
    same_length: bool = False  # uni only
    mem_len: int = 0  # rows of memory kept per layer; 0: no memory
    reuse_len: int = 0  # tokens of each sequence cached for the next one (0: all)
    layer_norm_eps: float = 1e-12
    init_std: float = 0.02

    def __post_init__(self) -> None:
        if min(self.n_layer, self.d_model, self.n_head, self.d_head, self.d_inner) < 1:
            raise ConfigError("n_layer, d_model, n_head, d_head and d_inner must be positive")
        if self.d_model % 2:
            raise ConfigError("d_model must be even (sinusoid table)")
        if self.ff_activation not in ACTIVATIONS:
            raise ConfigError(f"ff_activation must be one of {', '.join(ACTIVATIONS)}, got {self.ff_activation!r}")
        if self.attn_type not in ("bi", "uni"):
            raise ConfigError(f"attn_type must be bi or uni, got {self.attn_type!r}")
        if self.mem_len < 0 or self.reuse_len < 0:
            raise ConfigError("mem_len and reuse_len must be >= 0")


def tiny() -> XLNetConfig:
    """Seconds, for tests."""
    return XLNetConfig(n_layer=2, d_model=32, n_head=2, d_head=16, d_inner=64, dropout=0.0, dropatt=0.0)


def small() -> XLNetConfig:
    """CPU scale (spec §6.1): N=4, d=128, H=4, d_h=32, d_ff=512."""
    return XLNetConfig()


def base() -> XLNetConfig:
    """XLNet-Base (BERT-Base sized; thesis Table 2.19): 12 layers, d 768, 12 heads, vocabulary 32,000."""
    return XLNetConfig(vocab_size=32000, n_layer=12, d_model=768, n_head=12, d_head=64, d_inner=3072,
                       mem_len=384, reuse_len=256, bi_data=True)


def large() -> XLNetConfig:
    """XLNet-Large (thesis §2.2.3: BERT-Large sized, sequence 512, memory 384): 24 layers, d 1024, 16 heads."""
    return XLNetConfig(vocab_size=32000, n_layer=24, d_model=1024, n_head=16, d_head=64, d_inner=4096,
                       mem_len=384, reuse_len=256, bi_data=True)
