"""Zero-concentrated DP of a composition (Bun & Steinke 2016): the smallest ``rho`` with
``eps_alpha <= rho alpha`` for every ``alpha > 1``.
"""

from __future__ import annotations

import math

import numpy as np

from plda._internal.errors import check_bracket
from plda._internal.floats import UNIT_ROUNDOFF, round_up
from plda.bounds import Bounds
from plda.conversions.composed import ComposedLaws, steps_of
from plda.conversions.per_step import largest_loss, step_rho
from plda.conversions.renyi import renyi_bounds


def zcdp_bounds(composed: ComposedLaws) -> Bounds:
    """Certified bounds on the zCDP parameter of a composition (Bun & Steinke 2016).

    The parameter is the smallest ``rho`` with ``eps_alpha <= rho alpha`` for all ``alpha > 1``.
    Upper: the smaller of the per-step closed forms ``sum_f k_f rho_f`` (``mu^2/2`` for
    Gaussians, sampled or not; ``eps^2/2`` for ``eps``-DP steps; Bun & Steinke 2016) and a
    sandwich over a grid of orders; lower: ``max_i eps_{alpha_i} / alpha_i`` from the lower
    Rényi bounds (``docs/tradeoff.md``, "How the per-step bounds are computed").

    Parameters
    ----------
    composed : ComposedLaws
        The composition.

    Returns
    -------
    Bounds
        ``(lower, upper)`` on ``rho``; ``inf`` when no finite ``rho`` is known.

    Raises
    ------
    TypeError
        If ``composed`` is not :class:`~plda.conversions.composed.ComposedLaws`.
    """
    factors = steps_of(composed)
    # each step's rho is a product of a few correctly rounded operations (3u relative, see
    # step_rho) and the sum of N non-negative terms adds N u: widen by twice that, upward
    closed = round_up(
        math.fsum(k * step_rho(m) for m, k in factors), 2 * (len(factors) + 4) * UNIT_ROUNDOFF
    )
    grid = np.concatenate(
        [[1 + 1e-6], 1 + np.geomspace(1e-5, 1e-2, 30), np.geomspace(1.011, 1e4, 300)]
    )
    # past the grid: D_alpha / alpha <= rho_f, and <= eps_f / alpha for an eps_f-DP step
    beyond = sum(k * min(step_rho(m), largest_loss(m) / grid[-1]) for m, k in factors)
    bounds = renyi_bounds(composed, grid)
    lower = float(np.max(bounds.lower / grid))
    with np.errstate(invalid="ignore"):
        sandwich = max(
            float(bounds.upper[0]),  # (1, alpha_0]: eps_alpha <= eps_{alpha_0}, alpha > 1
            float(np.max(bounds.upper[1:] / grid[:-1])),
            beyond,  # [alpha_last, inf)
        )
    upper = min(closed, sandwich)
    check_bracket(lower, upper, query="zcdp_bounds")
    return Bounds(lower=lower, upper=upper)


def zcdp(composed: ComposedLaws) -> float:
    """Certified zCDP parameter: ``eps_alpha <= rho alpha`` for all ``alpha > 1``.

    The upper side of :func:`zcdp_bounds`.

    Parameters
    ----------
    composed : ComposedLaws
        The composition.

    Returns
    -------
    float
        ``rho``; ``inf`` when no finite ``rho`` is known (e.g. an ``(epsilon, delta > 0)``
        step).

    Raises
    ------
    TypeError
        If ``composed`` is not :class:`~plda.conversions.composed.ComposedLaws`.
    """
    return zcdp_bounds(composed).upper
