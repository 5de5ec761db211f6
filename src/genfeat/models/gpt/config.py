"""GPT-style decoder configuration and presets."""

from __future__ import annotations

from dataclasses import dataclass, field

from genfeat.heads.config import HeadConfig


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 0  # 0: taken from the tokenizer by the recipe
    n_layer: int = 4
    n_head: int = 4
    d_model: int = 256
    d_ff: int = 0  # 0: 4 * d_model
    max_len: int = 256
    dropout: float = 0.1
    tie_embeddings: bool = True
    bias: bool = True
    head: HeadConfig = field(default_factory=HeadConfig)  # output layer (thesis C heads), see genfeat.heads
    activation: str = "gelu"  # gelu (exact erf) | gelu_tanh (GPT-2's "gelu_new")
    ln_eps: float = 1e-5
    cond_dim: int = 0  # > 0: the decoder takes inserted condition vectors of this width (thesis C §4.2.2:
    #                    the GloVe dimension), through a Linear(cond_dim -> d_model) and a special position table

    def __post_init__(self):
        if self.n_layer < 1 or self.n_head < 1 or self.d_model < 1 or self.max_len < 1:
            raise ValueError("n_layer, n_head, d_model and max_len must be positive")
        if self.d_model % self.n_head:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_head={self.n_head}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout={self.dropout} must be in [0, 1)")
        if self.cond_dim < 0:
            raise ValueError(f"cond_dim must be >= 0, got {self.cond_dim}")
        if self.activation not in ("gelu", "gelu_tanh"):
            raise ValueError(f"activation must be gelu or gelu_tanh, got {self.activation!r}")

    @property
    def ff_dim(self) -> int:
        return self.d_ff or 4 * self.d_model


def tiny() -> GPTConfig:
    """For tests: a few thousand parameters per layer."""
    return GPTConfig(n_layer=2, n_head=2, d_model=32, max_len=64, dropout=0.1)


def quickstart() -> GPTConfig:
    """Small enough to train on PTB on a 2-core CPU in about three minutes."""
    return GPTConfig(n_layer=2, n_head=4, d_model=128, max_len=64, dropout=0.0)
