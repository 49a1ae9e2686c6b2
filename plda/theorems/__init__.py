"""Composition theorems side by side: basic, advanced, optimal, concurrent, group and parallel.

Each function gives the ``(epsilon, delta)`` guarantee of one theorem for a list of black-box
``(epsilon_i, delta_i)``-DP steps, rounded outward; :func:`compare` puts them next to the optimum
that the privacy-loss-distribution engine certifies. What each computes and what is proven (the
concurrent-composition conjecture included): ``docs/theorems.md``.
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
