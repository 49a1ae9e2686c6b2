"""Private selection around whole runs: hyperparameter tuning by random stopping."""

from plda.selection.repeat import RepeatAndSelect

__all__ = ["RepeatAndSelect"]
