"""Privacy filters side by side: how many pure steps each allows before the budget is spent."""

from __future__ import annotations

import numpy as np

from plda.filters import LAPLACE_COLUMN, OPTIMAL_COLUMN, FilterComparison, compare_filters
from plda.plot.common import compact_legend, style_of

__all__ = ["filter_comparison"]

_STYLE = {
    "basic": dict(color="#7f7f7f", marker="o"),
    "advanced RRUV16": dict(color="#d62728", marker="v"),
    "advanced WRRW23": dict(color="#ff7f0e", marker="^"),
    "Renyi/zCDP FZ21": dict(color="#2ca02c", marker="s"),
    "Gaussian DP ST22": dict(color="#9467bd", marker="D"),
    OPTIMAL_COLUMN: dict(color="black", linestyle="--", marker=""),
    LAPLACE_COLUMN: dict(color="#1f77b4", linestyle=":", marker=""),
}

#: count-axis height of the first row of zero-count crosses (row j at _ZERO_ROW**j, below 1)
_ZERO_ROW = 10**-0.07


def filter_comparison(
    comparison: FilterComparison | None = None, *, ax=None, label: str | None = None,
    color=None, linestyle=None, **kwargs,
):
    """Plot the number of pure ε₀-steps each privacy filter allows before its budget is spent.

    Against ε₀ (e.g. of Laplace queries), next to the non-adaptive optimum: the
    privacy-filters tutorial's "number of runs before the budget is spent" figure, for every
    filter.

    Parameters
    ----------
    comparison : FilterComparison, optional
        A :class:`plda.filters.FilterComparison`; by default ``compare_filters(**kwargs)``.
    ax : matplotlib.axes.Axes, optional
        A matplotlib axes to draw on (default: a new figure); calls on one axes overlay (e.g.
        two budgets, told apart by ``linestyle`` and ``label``).
    label : str, optional
        Names this call's columns in the legend: each entry reads ``"label: column"``
        (default: the column's name alone).
    color, linestyle
        One value for every column of this call, or a mapping from a column name to a value;
        ``None``: each column its own (the markers still tell the columns apart).
    **kwargs
        Passed to :func:`plda.filters.compare_filters` when ``comparison`` is ``None``.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on. Zero counts (a filter that refuses even one step) have no place on
        the logarithmic axis: each is marked by a cross below 1 (one row per column, in its
        colour); ``None`` (a column not computed) is not drawn.

    Raises
    ------
    TypeError
        If ``comparison`` is not a ``FilterComparison``, or is given with ``kwargs``.
    ValueError
        From :func:`plda.filters.compare_filters`, for arguments out of range.
    """
    import matplotlib.pyplot as plt  # optional dependency: imported only when plotting

    if comparison is None:
        comparison = compare_filters(**kwargs)
    elif kwargs:
        raise TypeError("give either a comparison or compare_filters arguments, not both")
    if not isinstance(comparison, FilterComparison):
        raise TypeError(f"comparison must be a FilterComparison, got {type(comparison).__name__}")
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 5))
    before = ax.get_ylim()[0] if ax.has_data() else None  # an overlaid call keeps what is drawn
    steps = np.asarray(comparison.step_epsilons, dtype=float)
    # a count of 0 has no place on the log axis: it is marked by a cross below 1 (in the
    # column's colour) instead of the line silently ending there
    refused = 0
    for name in comparison.columns:
        column = comparison.column(name)
        counts = np.array([np.nan if c is None or c == 0 else c for c in column], dtype=float)
        style = dict(_STYLE.get(name, {}))
        style["color"] = style_of(color, name, style.get("color"))
        style["linestyle"] = style_of(linestyle, name, style.get("linestyle", "-"))
        (line,) = ax.plot(steps, counts, label=name if label is None else f"{label}: {name}",
                          markersize=4, linewidth=1.5, **style)
        zeros = steps[[c == 0 for c in column]]
        if len(zeros):
            # one row per refusing column below count 1 (where no count can be), so that
            # crosses at the same epsilon_0 stay apart
            refused += 1
            # markers, not lines: each column stays one line of the axes
            ax.scatter(zeros, np.full(len(zeros), _ZERO_ROW**refused), marker="x", s=25,
                       color=line.get_color(), label="_no step")
    if refused:
        ax.scatter([], [], marker="x", color="0.3", label="× below 1: no step allowed (0 runs)")
        bottom = _ZERO_ROW ** (refused + 0.7)
        ax.set_ylim(bottom=bottom if before is None else min(bottom, before))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"$\varepsilon_0$ of each step (pure DP, e.g. a Laplace query)")
    ax.set_ylabel("Number of runs before the budget is spent")
    ax.set_title(
        rf"Fully adaptive filters vs non-adaptive optimum, budget "
        rf"$(\varepsilon, \delta) = ({comparison.epsilon:g}, {comparison.delta:g})$",
        fontsize=10,
    )
    ax.grid(True, which="both", alpha=0.3)
    compact_legend(ax)
    return ax
