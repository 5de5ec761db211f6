"""Losses over head outputs."""

from genfeat.losses.nll import nll

__all__ = ["nll"]
