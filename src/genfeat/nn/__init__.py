"""Shared building blocks, one concept per file."""

from genfeat.nn.attention import CausalSelfAttention
from genfeat.nn.feedforward import FeedForward
from genfeat.nn.outputs import BackboneOutput

__all__ = ["BackboneOutput", "CausalSelfAttention", "FeedForward"]
