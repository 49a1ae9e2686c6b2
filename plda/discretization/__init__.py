"""From a privacy-loss law to its pessimistic and optimistic laws on the grid:
:func:`~plda.discretization.discretize.discretize` (cached), built from the cell moments and the
connect-the-dots split (:mod:`~plda.discretization.cells`), the optimistic pairing
(:mod:`~plda.discretization.pairing`) and the martingale sweep
(:mod:`~plda.discretization.sweep`)."""
