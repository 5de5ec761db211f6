"""Training paradigms: how a network is trained on a task (specs/framework.md §3), above `genfeat.tasks` (what is
learned and how it is scored) and `genfeat.train` (the loop). `fit_task` is one phase."""

from genfeat.paradigms.one_phase import fit_task, selection_split

__all__ = ["fit_task", "selection_split"]
