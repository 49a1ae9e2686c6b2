"""The parts of :func:`plda.discretize.discretize`: cell moments and the pessimistic
connect-the-dots split (:mod:`~plda.discretization.cells`), the optimistic pairing
(:mod:`~plda.discretization.pairing`) and martingale sweep (:mod:`~plda.discretization.sweep`),
and the byte-bounded cache (:mod:`~plda.discretization.cache`)."""
