"""Training paradigms: how a network is trained on a task (specs/framework.md §3), above `genfeat.tasks` (what is
learned and how it is scored) and `genfeat.train` (the loop). `fit_task` is one phase; `fit_phase` an earlier
phase of a multi-phase run (`phases.py`)."""

from genfeat.paradigms.one_phase import final_scores, fit_task, selection_split
from genfeat.paradigms.phases import copy_parameters, fit_phase, in_earlier_phase, phase_record

__all__ = ["copy_parameters", "final_scores", "fit_phase", "fit_task", "in_earlier_phase", "phase_record",
           "selection_split"]
