"""From a privacy-loss law to its pessimistic and optimistic laws on the grid:
:func:`~plda.discretization.discretize.discretize` (cached), built from the cell moments and the
connect-the-dots split (:mod:`~plda.discretization.cells`) and the optimistic version, by
pairing or the martingale sweep (:mod:`~plda.discretization.optimistic`)."""
