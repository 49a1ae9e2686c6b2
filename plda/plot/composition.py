"""Composition theorems side by side: total epsilon against the number of steps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from plda import theorems
from plda.plot.common import compact_legend, style_of
from plda.theorems import common as checks

__all__ = ["composition_comparison"]

#: each curve's key (for ``color``/``linestyle`` mappings), legend entry and own style
_CURVES = {
    "basic": ("basic composition", "0.45", "--"),
    "advanced": ("advanced composition (DRV10)", "tab:red", "-"),
    "kov": ("KOV bound (Thm 3.4)", "tab:orange", "-"),
    "optimal": ("optimal (KOV exact)", "tab:blue", "-"),
    "pld": ("optimal (PLD engine, upper bound)", "tab:green", "none"),
}


def composition_comparison(
    epsilon: float = 0.1,
    delta: float = 0.001,
    max_steps: int = 30,
    delta_slack: float = 0.001,
    *,
    pld_steps: Sequence[int] | None = None,
    ax=None,
    label: str | None = None,
    color=None,
    linestyle=None,
):
    """Plot total epsilon against the number ``k`` of ``(epsilon, delta)``-DP steps, per theorem.

    At total delta ``k delta + delta_slack`` (the accounting of advanced composition), in the
    manner of the figures of Kairouz, Oh & Viswanath (2015).

    Curves: basic composition ``k epsilon``; advanced composition (DRV10,
    :func:`plda.theorems.advanced`); the KOV bound (:func:`plda.theorems.advanced_kov`, whose own
    slack ``1 - (1 - k delta - delta_slack)/(1 - delta)^k`` is used); and the exact optimum
    (:func:`plda.theorems.kairouz_oh_viswanath`). ``pld_steps`` adds markers for the certified
    PLD optimum of ``plda.ApproximateDP`` steps at those ``k`` (one engine call each).

    Parameters
    ----------
    epsilon : float, optional
        The per-step epsilon.
    delta : float, optional
        The per-step delta.
    max_steps : int, optional
        Largest ``k`` on the horizontal axis.
    delta_slack : float, optional
        ``delta'`` in ``delta_total = k delta + delta'``; must be in (0, 1 - max_steps delta).
    pld_steps : sequence of int, optional
        Values of ``k`` at which to mark the PLD optimum (``None``: no markers).
    ax : matplotlib.axes.Axes, optional
        A matplotlib axes to draw on (default: a new figure); calls on one axes overlay (e.g.
        two per-step guarantees, told apart by ``linestyle`` and ``label``).
    label : str, optional
        Names this call's curves in the legend: each entry reads ``"label: ..."`` (default: no
        name).
    color, linestyle
        One value for every curve of this call, or a mapping from a curve (``"basic"``,
        ``"advanced"``, ``"kov"``, ``"optimal"``, ``"pld"``) to a value; ``None``: each curve
        its own (basic grey and dashed, DRV10 red, KOV orange, optimum blue, PLD green
        circles).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Raises
    ------
    ValueError
        A guarantee or count out of range, or a ``delta_slack`` outside
        ``(0, 1 - max_steps delta)``.
    """
    import matplotlib.pyplot as plt  # optional dependency: imported only when plotting

    epsilon = checks.epsilon_value("epsilon", epsilon)
    delta = checks.delta_value("delta", delta)
    max_steps = checks.count_value("max_steps", max_steps)
    delta_slack = checks.delta_value("delta_slack", delta_slack, allow_zero=False)
    if not max_steps * delta + delta_slack < 1:
        raise ValueError(
            f"delta_slack must be in (0, 1 - max_steps * delta) = (0, {1 - max_steps * delta:g}),"
            f" got {delta_slack!r}"
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.5))
    overlaid = ax.has_data()

    ks = np.arange(1, max_steps + 1)
    totals = [k * delta + delta_slack for k in ks]
    basic = [theorems.basic([(epsilon, delta)] * k).epsilon for k in ks]
    drv = [theorems.advanced([(epsilon, delta)] * k, delta_slack).epsilon for k in ks]
    kov_bound = []
    for k, total in zip(ks, totals, strict=True):
        slack = -np.expm1(np.log1p(-total) - k * np.log1p(-delta))
        kov_bound.append(theorems.advanced_kov([(epsilon, delta)] * k, slack).epsilon)
    exact = [
        theorems.kairouz_oh_viswanath(epsilon, delta, k, delta_total=total).epsilon
        for k, total in zip(ks, totals, strict=True)
    ]

    def style(key: str) -> dict:
        entry, own_color, own_linestyle = _CURVES[key]
        # the PLD points are markers: only a mapping gives them a line
        lines = linestyle if key != "pld" or isinstance(linestyle, Mapping) else None
        return {"label": entry if label is None else f"{label}: {entry}",
                "color": style_of(color, key, own_color),
                "linestyle": style_of(lines, key, own_linestyle)}

    ax.plot(ks, basic, **style("basic"))
    ax.plot(ks, drv, **style("advanced"))
    ax.plot(ks, kov_bound, **style("kov"))
    ax.plot(ks, exact, linewidth=2, **style("optimal"))
    if pld_steps:
        points = sorted({checks.count_value("pld_steps", k) for k in pld_steps})
        values = [
            theorems.optimal([(epsilon, delta)] * k, k * delta + delta_slack, method="pld").epsilon
            for k in points
        ]
        ax.plot(points, values, marker="o", markerfacecolor="none", **style("pld"))
    ax.set_xlabel("number of composed steps k")
    ax.set_ylabel("total epsilon")
    ax.set_title(
        f"k-fold composition of ({epsilon:g}, {delta:g})-DP steps at total "
        f"delta = k·{delta:g} + {delta_slack:g}",
        fontsize=10,
    )
    ax.set_xlim(1, max(max_steps, ax.get_xlim()[1]) if overlaid else max_steps)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    compact_legend(ax)
    return ax
