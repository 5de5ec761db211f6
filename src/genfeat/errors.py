"""Errors a user can act on. The CLI prints them as one line and exits non-zero.

Everything raised at a boundary (config, data, checkpoints, divergence) is a `GenfeatError`; a stack
trace means a bug in genfeat, not in the user's input. Exit codes of `genfeat`:

    0    done
    1    the environment failed the command: data missing or corrupt, a checkpoint that does not fit,
         a diverging loss (DataError, ChecksumError, CheckpointError, DivergenceError)
    2    the command itself is wrong: an unknown recipe, preset, dataset or field, a bad value (ConfigError)
    130  interrupted (Ctrl-C or SIGTERM); a run that reached a checkpoint says how to resume (Interrupted)
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


class Interrupted(GenfeatError):
    """Ctrl-C or SIGTERM stopped training after a checkpoint; the message says how to resume."""
