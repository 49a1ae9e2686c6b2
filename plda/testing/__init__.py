"""Exact references and assertions for numeric accuracy tests of privacy accountants.

References are closed forms and exact sums (no discretization), in float64 or, with
``precise=True``, in mpmath at ``dps`` digits; every ``*_epsilon`` is rounded outward (the exact
``delta`` at it is at most the requested one). The ``assert_*_within`` functions compare an
accountant's numbers with plda's certified bounds or a reference, and :func:`audit` grades an
accountant over a suite of standard cases. The formulas and the precision: ``docs/testing.md``.
"""

from plda.testing.assertions import (
    assert_delta_curve_within,
    assert_delta_within,
    assert_epsilon_within,
    assert_privacy_curve_within,
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
    "assert_privacy_curve_within",
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
