"""Training: loop.py (fit), checkpoint.py, distributed.py, logging.py."""

from genfeat.train.loop import FitResult, TrainConfig, fit

__all__ = ["FitResult", "TrainConfig", "fit"]
