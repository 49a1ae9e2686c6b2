"""Privacy filters and odometers: budgets that hold under fully adaptive composition.

An *accountant* answers "how much privacy was spent?" for a composition fixed in advance. A
*filter* enforces "never more than this" while the analyst picks each next step — and its privacy
parameters — after seeing the earlier answers (fully adaptive composition, Rogers, Roth, Ullman &
Vadhan 2016). An *odometer* gives a running bound on the privacy spent so far that is valid at
every step simultaneously (Whitehouse, Ramdas, Rogers & Wu 2023).

Every filter has the same interface (:class:`PrivacyFilter`)::

    budget = AdvancedFilter(epsilon=1.0, delta=1e-6)
    budget.spend(epsilon=0.05)          # records the step, or raises BudgetExceededError
    budget.can_spend(epsilon=0.05)      # the same check, nothing recorded
    budget.remaining()                  # largest epsilon of a pure step that still fits
    budget.steps_left(epsilon=0.05)     # how many more such steps fit
    budget.history, budget.spent        # recorded steps; what the filter's condition measures

A step is described by the guarantees it satisfies: ``epsilon``/``delta`` ((ε, δ)-DP), ``rho``
(ρ-zCDP, Bun & Steinke 2016) and/or ``mu`` (μ-GDP, Dong, Roth & Su 2022). Each filter charges the
step in its own currency and refuses a step it cannot price (e.g. the Gaussian-DP filter refuses a
step with ``delta > 0``). :class:`PrivateQueries` holds data and answers noisy queries, charging
each answer to a filter or an odometer.

Amounts are read as the decimal numbers they print as (``Fraction(repr(x))``) and summed exactly,
so ten steps of ``0.1`` fill a budget of ``1`` exactly; quantities that involve logarithms or
square roots are evaluated in floating point with a relative safety margin (``1e-12``) far above
their rounding error, so rounding can never admit a step the exact condition would refuse.

The package is split by concept: :mod:`~plda.filters.charges` (what is recorded),
:mod:`~plda.filters.amounts` (how amounts are read and rounded), :mod:`~plda.filters.conversions`
(zCDP / GDP to (ε, δ)), :mod:`~plda.filters.base` (the interface), :mod:`~plda.filters.filters`
(the five filters), :mod:`~plda.filters.odometer`, :mod:`~plda.filters.samplers` (exact integer
noise), :mod:`~plda.filters.queries` (:class:`PrivateQueries`) and :mod:`~plda.filters.compare`
(:func:`compare_filters`). Every public name is re-exported here.
"""

from __future__ import annotations

# SAFETY and the comparison's constants are public but, as before the split, not in __all__
from plda.filters.amounts import SAFETY  # noqa: F401
from plda.filters.base import PrivacyFilter
from plda.filters.charges import BudgetExceededError, Charge, Usage
from plda.filters.compare import (  # noqa: F401
    DEFAULT_STEP_EPSILONS,
    FILTER_COLUMNS,
    LAPLACE_COLUMN,
    OPTIMAL_COLUMN,
    FilterComparison,
    compare_filters,
)
from plda.filters.conversions import (
    epsilon_of_gaussian_dp,
    epsilon_of_zcdp,
    gaussian_dp_of_pure_dp,
)
from plda.filters.filters import (
    AdvancedFilter,
    BasicFilter,
    GaussianFilter,
    ImprovedAdvancedFilter,
    RenyiFilter,
)
from plda.filters.odometer import Odometer
from plda.filters.queries import PrivateQueries

__all__ = [
    "AdvancedFilter",
    "BasicFilter",
    "BudgetExceededError",
    "Charge",
    "FilterComparison",
    "GaussianFilter",
    "ImprovedAdvancedFilter",
    "Odometer",
    "PrivacyFilter",
    "PrivateQueries",
    "RenyiFilter",
    "Usage",
    "compare_filters",
    "epsilon_of_gaussian_dp",
    "epsilon_of_zcdp",
    "gaussian_dp_of_pure_dp",
]
