"""Epoch samplers: one pass over the data in which each record joins a fixed number of steps.

Their privacy-loss laws are those of a whole epoch, built by composing per-step laws, so they
sit above the engine: :class:`Shuffled` (a shuffled, then chunked, dataset) and
:class:`RandomAllocation` (each record allocated to ``num_selected`` of ``num_steps`` steps).
"""

from plda.epochs.allocation import RandomAllocation
from plda.epochs.shuffled import Shuffled

__all__ = ["RandomAllocation", "Shuffled"]
