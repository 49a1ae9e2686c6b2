"""plda's engine: composition of laws on the grid, and the planner that chooses the grid.

Data flows one way: a mechanism's law is discretized (:mod:`plda.discretization`) into a
:class:`~plda.grid.DiscreteLoss` on the grid of a plan (:mod:`plda.engine.plan`); laws are
composed by :class:`~plda.engine.composer.Composer` (or tilted, :mod:`plda.engine.tilt`); the
composed law answers profile queries (:mod:`plda.grid`).
"""
