"""Privacy filters and odometers: budgets that hold under fully adaptive composition.

A *filter* refuses any step that would exceed its (ε, δ) budget, while the analyst picks each
step and its parameters after seeing the earlier answers; an *odometer* reports a running bound
valid at every step at once. Every filter has the interface of :class:`PrivacyFilter`, and
:class:`PrivateQueries` holds data behind one. The theorems, the interface and how amounts are
read and rounded: ``docs/filters.md``. Every public name is re-exported here.
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
