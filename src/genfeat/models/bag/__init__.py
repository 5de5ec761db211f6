"""A tiny causal backbone for synthetic studies of the output heads: `BagBackbone`."""

from genfeat.models.bag.model import BagBackbone

__all__ = ["BagBackbone"]
