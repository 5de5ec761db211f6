"""Evaluation metrics."""

from genfeat.metrics.lm import bits_per_character, perplexity

__all__ = ["bits_per_character", "perplexity"]
