"""BERT encoder configuration (Devlin et al. 2019; the Multi-CLS BERT backbone of thesis C §5.2)."""

from __future__ import annotations

from dataclasses import dataclass

from genfeat.errors import ConfigError

ACTIVATIONS = ("gelu", "gelu_tanh", "relu")


@dataclass(frozen=True)
class BertConfig:
    vocab_size: int = 30522
    d_model: int = 384  # hidden_size
    n_layer: int = 6
    n_head: int = 12
    d_inner: int = 1536  # intermediate_size
    max_len: int = 512  # max_position_embeddings
    type_vocab_size: int = 2
    activation: str = "gelu"  # gelu (exact erf, HF's "gelu") | gelu_tanh | relu
    dropout: float = 0.1  # hidden_dropout_prob
    attn_dropout: float = 0.1  # attention_probs_dropout_prob
    layer_norm_eps: float = 1e-12
    init_std: float = 0.02
    pad_id: int = 0

    def __post_init__(self) -> None:
        if self.d_model % self.n_head:
            raise ConfigError(f"model.d_model={self.d_model} is not divisible by model.n_head={self.n_head}")
        if self.activation not in ACTIVATIONS:
            raise ConfigError(f"model.activation must be one of {', '.join(ACTIVATIONS)}, got {self.activation!r}")
        if min(self.vocab_size, self.d_model, self.n_layer, self.n_head, self.d_inner, self.max_len) < 1:
            raise ConfigError("model sizes must be positive")


def check_max_len(name: str, max_len: int, positions: int) -> None:
    """ConfigError when the option `name` asks for more tokens than the encoder has positions."""
    if max_len > positions:
        raise ConfigError(f"{name} {max_len} is longer than the pretrained encoder's {positions} positions "
                          f"(max_position_embeddings): give at most {positions}")
