"""Language-model metrics from a summed NLL (nats) and a count."""

from __future__ import annotations

import math


def perplexity(total_nll: float, n_tokens: int) -> float:
    """exp(mean NLL per token); inf when the mean NLL overflows."""
    if n_tokens <= 0:
        raise ValueError("perplexity needs at least one token")
    mean = total_nll / n_tokens
    return math.exp(mean) if mean < 700 else math.inf


def bits_per_character(total_nll: float, n_chars: int) -> float:
    """Mean NLL per character in bits (nats / ln 2). For byte/char-level models n_chars = n_tokens."""
    if n_chars <= 0:
        raise ValueError("bits per character needs at least one character")
    return total_nll / n_chars / math.log(2)
