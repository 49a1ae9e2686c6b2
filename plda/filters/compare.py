"""How many pure ε₀-steps each filter allows, next to the optimal non-adaptive composition."""

from __future__ import annotations

import math
from dataclasses import dataclass

from plda._internal import validation as check
from plda.filters.amounts import delta_budget
from plda.filters.filters import (
    AdvancedFilter,
    BasicFilter,
    GaussianFilter,
    ImprovedAdvancedFilter,
    RenyiFilter,
)
from plda.mechanisms import ApproximateDP, Laplace
from plda.pld import PrivacyLossDistribution

#: step epsilons of the default comparison
DEFAULT_STEP_EPSILONS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)


@dataclass(frozen=True)
class FilterComparison:
    """How many pure ε₀-steps each filter allows for a budget (ε, δ), next to the optimum.

    ``print()`` it for a table.

    Attributes
    ----------
    epsilon, delta : float
        The budget.
    step_epsilons : tuple of float
        The ε₀ of the rows.
    columns : tuple of str
        The filters (and the optima) compared.
    counts : tuple of tuple
        ``counts[i][j]``: the steps column ``j`` allows at ``step_epsilons[i]``; None where a
        column was not computed.
    """

    epsilon: float
    delta: float
    step_epsilons: tuple[float, ...]
    columns: tuple[str, ...]
    counts: tuple[tuple[int | None, ...], ...]

    def column(self, name: str) -> tuple[int | None, ...]:
        """One column of the table.

        Parameters
        ----------
        name : str
            One of :attr:`columns`.

        Returns
        -------
        tuple
            The counts of that column, one per step epsilon.

        Raises
        ------
        ValueError
            If ``name`` is not a column.
        """
        if name not in self.columns:
            raise ValueError(f"name must be one of {self.columns}, got {name!r}")
        j = self.columns.index(name)
        return tuple(row[j] for row in self.counts)

    def __str__(self) -> str:
        header = ["eps0", *self.columns]
        rows = [
            [f"{e:g}", *("-" if c is None else str(c) for c in row)]
            for e, row in zip(self.step_epsilons, self.counts, strict=True)
        ]
        widths = [max(len(r[j]) for r in [header, *rows]) for j in range(len(header))]

        def line(cells):
            return "| " + " | ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)) + " |"

        rule = "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|"
        title = (
            f"Pure eps0-DP steps allowed within (epsilon={self.epsilon:g}, delta={self.delta:g})"
        )
        return "\n".join([title, "", line(header), rule, *(line(r) for r in rows)])


FILTER_COLUMNS = {
    "basic": lambda e, d: BasicFilter(e, d),
    "advanced RRUV16": lambda e, d: AdvancedFilter(e, d),
    "advanced WRRW23": lambda e, d: ImprovedAdvancedFilter(e, d, step_delta=0.0),
    "Renyi/zCDP FZ21": lambda e, d: RenyiFilter(e, d),
    "Gaussian DP ST22": lambda e, d: GaussianFilter(e, d),
}
OPTIMAL_COLUMN = "optimal, any eps0-DP"
LAPLACE_COLUMN = "optimal, Laplace"


def _largest_composition(mechanism, epsilon: float, delta: float, start: int) -> int:
    """Largest k with the certified ``epsilon(delta)`` of k runs at most ``epsilon``."""
    pld = PrivacyLossDistribution.from_mechanism(mechanism)

    def ok(k: int) -> bool:
        return k == 0 or float(pld.self_compose(k).epsilon(delta)) <= epsilon

    lo, hi = 0, max(start, 1)
    while ok(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def compare_filters(
    epsilon: float = 1.0,
    delta: float = 1e-6,
    step_epsilons=DEFAULT_STEP_EPSILONS,
    *,
    optimal: bool = True,
    laplace: bool = True,
) -> FilterComparison:
    """Count the pure ε₀-steps (e.g. Laplace queries) each filter allows within (ε, δ).

    Filters: :class:`BasicFilter`, :class:`AdvancedFilter`, :class:`ImprovedAdvancedFilter`
    (``step_delta=0``: every step is pure), :class:`RenyiFilter`, :class:`GaussianFilter`
    (pure steps at :func:`gaussian_dp_of_pure_dp`).

    Parameters
    ----------
    epsilon : float, optional
        The budget's ε, > 0.
    delta : float, optional
        The budget's δ, in (0, 1/e) (the range of :class:`AdvancedFilter`).
    step_epsilons : sequence of float, optional
        The ε₀ of the rows, each > 0.
    optimal : bool, optional
        Add the largest k such that k *non-adaptive* runs of randomized response
        ``plda.ApproximateDP(ε₀)``, the worst ε₀-DP mechanism (Kairouz, Oh & Viswanath 2015),
        have certified ``epsilon(delta) <= epsilon``: the ceiling for anything that only knows
        "ε₀-DP", which is all a filter is told.
    laplace : bool, optional
        Add the same count for the Laplace mechanism ``plda.Laplace(1/ε₀)``, which knows the
        noise shape and so may allow more.

    Returns
    -------
    FilterComparison
        The counts, one row per ε₀.

    Raises
    ------
    ValueError
        If ``step_epsilons`` is empty or a value is out of range.
    TypeError
        If a value is not a real number.
    """
    epsilon = check.positive_float("epsilon", epsilon)
    delta = delta_budget("delta", delta, low_open=True, high=math.exp(-1))
    steps = tuple(check.positive_float("step_epsilons", e) for e in step_epsilons)
    if not steps:
        raise ValueError("step_epsilons must hold at least one value")
    filters = {name: make(epsilon, delta) for name, make in FILTER_COLUMNS.items()}
    columns = list(filters)
    if optimal:
        columns.append(OPTIMAL_COLUMN)
    if laplace:
        columns.append(LAPLACE_COLUMN)
    counts = []
    for step in steps:
        row = [f.steps_left(epsilon=step) for f in filters.values()]
        start = max(row)
        if optimal:
            row.append(_largest_composition(ApproximateDP(step), epsilon, delta, start))
        if laplace:
            row.append(_largest_composition(Laplace(1 / step), epsilon, delta, start))
        counts.append(tuple(row))
    return FilterComparison(epsilon, delta, steps, tuple(columns), tuple(counts))
