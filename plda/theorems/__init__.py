"""Composition theorems side by side: basic, advanced, optimal, concurrent, group and parallel.

Every function answers "which (epsilon, delta) guarantee does this theorem give?" for a list of
black-box ``(epsilon_i, delta_i)``-DP steps, and :func:`compare` puts them next to the optimum that
the privacy-loss-distribution engine certifies. All returned epsilons and deltas are rounded
*outward* (never under-reported); a theorem that does not apply at the requested delta reports
``epsilon = inf``.

Status of each result (what is proven):

* :func:`basic`, :func:`advanced`, :func:`advanced_kov`, :func:`parallel`, :func:`group_privacy`:
  theorems (closed forms).
* :func:`kairouz_oh_viswanath`, :func:`optimal`: the optimal composition of black-box
  ``(epsilon_i, delta_i)``-DP steps (Kairouz, Oh & Viswanath 2015; Murtagh & Vadhan 2016) —
  theorems; homogeneous case exact to float precision, heterogeneous case as certified numerical
  bounds (the exact value is #P-hard to compute).
* :func:`concurrent`: Vadhan & Wang 2021, Theorem 1 (approximate DP) and Corollary 3 (pure DP):
  theorems. That the *optimal* composition also holds for concurrent composition of approximate-DP
  interactive mechanisms was a **conjecture** of theirs (Section 4); later work reports proofs
  (Lyu 2022; Vadhan & Zhang 2023). plda does not use it here: the numbers are conservative.

The package is split by concept: :mod:`~plda.theorems.common` (the :class:`Guarantee`, argument
checks, outward rounding), :mod:`~plda.theorems.classical` (basic, parallel, advanced),
:mod:`~plda.theorems.kov` (the exact KOV optimum), :mod:`~plda.theorems.optimum` (the PLD
optimum), :mod:`~plda.theorems.concurrency`, :mod:`~plda.theorems.group` and
:mod:`~plda.theorems.comparison`. Every public name is re-exported here.
"""

from __future__ import annotations

from plda.theorems.classical import advanced, advanced_kov, basic, parallel
from plda.theorems.common import Guarantee
from plda.theorems.comparison import Comparison, ComparisonRow, compare
from plda.theorems.concurrency import concurrent
from plda.theorems.group import group_privacy, group_privacy_mechanism
from plda.theorems.kov import kairouz_oh_viswanath
from plda.theorems.optimum import optimal

__all__ = [
    "Comparison",
    "ComparisonRow",
    "Guarantee",
    "advanced",
    "advanced_kov",
    "basic",
    "compare",
    "concurrent",
    "group_privacy",
    "group_privacy_mechanism",
    "kairouz_oh_viswanath",
    "optimal",
    "parallel",
]
