"""plda's engine: discrete laws on a grid, their moments, the one composer and the planner.

Data flows one way: a mechanism's continuous law is discretized (:mod:`plda.discretize`) into a
:class:`~plda.engine.discrete.DiscreteLoss` on the grid of a plan; laws are composed by
:class:`~plda.engine.composer.Composer` (or tilted, :mod:`plda.engine.tilt`); the composed law
answers profile queries (``delta``, :mod:`plda.engine.epsilon`).
"""
