"""Exact references and assertions for numeric accuracy tests of privacy accountants.

References (closed forms and exact sums, no discretization), each in float64 or, with
``precise=True``, in mpmath at ``dps`` digits (mpmath is imported only then):

* :func:`gaussian_delta`, :func:`gaussian_epsilon` — ``mu``-GDP / composed Gaussian.
* :func:`poisson_gaussian_delta`, :func:`poisson_gaussian_epsilon` — one Poisson-sampled
  Gaussian step (remove, add or the worse of the two).
* :func:`laplace_delta`, :func:`laplace_epsilon` — one Laplace run.
* :func:`approximate_dp_composition_delta`, :func:`approximate_dp_composition_epsilon` —
  optimal composition of ``(epsilon0, delta0)`` steps (Kairouz, Oh & Viswanath 2015).
* :func:`discrete_laplace_composition_delta`, :func:`discrete_gaussian_composition_delta` and
  their ``*_epsilon`` — composed discrete mechanisms by exact enumeration.
* :func:`gaussian_renyi`, :func:`laplace_renyi`, :func:`poisson_gaussian_renyi` — Rényi
  divergences; :func:`gaussian_tradeoff`, :func:`approximate_dp_tradeoff` — tradeoff curves.

Every ``*_epsilon`` is an upper bound, rounded outward: the exact ``delta`` at the returned
epsilon is at most the requested one.

Assertions — :func:`assert_epsilon_within`, :func:`assert_delta_within`,
:func:`assert_delta_curve_within`, :func:`assert_tradeoff_within` — compare an accountant's
numbers with plda's certified bounds or a reference; :func:`audit` grades an accountant over a
suite of standard cases (:class:`AuditCase`, :class:`AuditReport`).
"""

from plda.testing.assertions import (
    assert_delta_curve_within,
    assert_delta_within,
    assert_epsilon_within,
    assert_tradeoff_within,
)
from plda.testing.audit import STANDARD_CASES, AuditCase, AuditReport, AuditRow, audit
from plda.testing.composition import (
    approximate_dp_composition_delta,
    approximate_dp_composition_epsilon,
    approximate_dp_tradeoff,
)
from plda.testing.discrete import (
    discrete_gaussian_composition_delta,
    discrete_gaussian_composition_epsilon,
    discrete_laplace_composition_delta,
    discrete_laplace_composition_epsilon,
)
from plda.testing.gaussian import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_tradeoff,
    poisson_gaussian_delta,
    poisson_gaussian_epsilon,
)
from plda.testing.laplace import laplace_delta, laplace_epsilon
from plda.testing.renyi import gaussian_renyi, laplace_renyi, poisson_gaussian_renyi

__all__ = [
    "STANDARD_CASES",
    "AuditCase",
    "AuditReport",
    "AuditRow",
    "approximate_dp_composition_delta",
    "approximate_dp_composition_epsilon",
    "approximate_dp_tradeoff",
    "assert_delta_curve_within",
    "assert_delta_within",
    "assert_epsilon_within",
    "assert_tradeoff_within",
    "audit",
    "discrete_gaussian_composition_delta",
    "discrete_gaussian_composition_epsilon",
    "discrete_laplace_composition_delta",
    "discrete_laplace_composition_epsilon",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_renyi",
    "gaussian_tradeoff",
    "laplace_delta",
    "laplace_epsilon",
    "laplace_renyi",
    "poisson_gaussian_delta",
    "poisson_gaussian_epsilon",
    "poisson_gaussian_renyi",
]
