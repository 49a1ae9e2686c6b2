"""The law on the grid ``l_i = i h``: the value passed between the discretization and the engine.

:class:`DiscreteLoss` (:mod:`~plda.grid.discrete`) is one direction's privacy-loss law on the
grid, pessimistic or optimistic, with its privacy profile and its exact inverse; its Chernoff
moments and exponential tables are in :mod:`~plda.grid.moments`, its Chernoff fallback for
deltas below the grid's resolution in :mod:`~plda.grid.chernoff`.
"""

from plda.grid.discrete import DiscreteLoss

__all__ = ["DiscreteLoss"]
