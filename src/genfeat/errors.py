"""Errors a user can act on. The CLI prints them as one line and exits non-zero.

Everything raised at a boundary (config, data, checkpoints, divergence) is a `GenfeatError`; a stack
trace means a bug in genfeat, not in the user's input.
"""


class GenfeatError(Exception):
    """Base class: the message alone must tell the user what is wrong and how to fix it."""


class ConfigError(GenfeatError):
    """Unknown recipe, preset or field, or a value of the wrong type."""


class DataError(GenfeatError):
    """A dataset is missing, unreadable or cannot be fetched."""


class ChecksumError(DataError):
    """A downloaded or placed file does not have the pinned sha256."""


class CheckpointError(GenfeatError):
    """A checkpoint is missing, truncated, corrupt or does not match the model."""


class DivergenceError(GenfeatError):
    """The loss became NaN or infinite; training stopped."""
