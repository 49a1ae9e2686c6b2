"""Quantiles of a privacy-loss law: the generalized inverses of its cdf and sf
(:meth:`~plda.mechanisms.law.PrivacyLossLaw.ppf` and ``isf``), with the scipy.stats convention
at the ends (``ppf(0)`` and ``isf(1)`` the lower end of the support, ``ppf(1)`` and ``isf(0)``
the upper end, infinite where the support or a mass at infinite loss reaches there).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["first_reaching", "support_ends"]

#: the bisection stops once its bracket is this narrow relative to ``max(1, |x|)``
_RESOLUTION = 1e-12


def support_ends(law, hypothesis: str) -> tuple[float, float]:
    """The ends of a law's support under ``P`` or ``Q``: where its mass starts and stops.

    Parameters
    ----------
    law
        A :class:`~plda.mechanisms.law.PrivacyLossLaw`.
    hypothesis
        ``"P"`` or ``"Q"`` (checked by the caller).

    Returns
    -------
    tuple of float
        ``(lowest, highest)``: ``-inf`` under ``Q`` with a mass at ``-inf``, ``+inf`` under
        ``P`` with a mass at ``+inf``, and the continuous part's ends where it has one (an atom
        has mass under ``Q`` exactly where it has mass under ``P``).
    """
    ends = [float(x) for x in np.asarray(law.atom_losses)[np.asarray(law.atom_probs) > 0]]
    if law.has_continuous_part:
        ends += [float(x) for x in law.continuous_support]
    lowest, highest = min(ends, default=math.inf), max(ends, default=-math.inf)
    if hypothesis == "Q" and law.neg_infinity_mass > 0:
        lowest = -math.inf
    if hypothesis == "P" and law.infinity_mass > 0:
        highest = math.inf
    if lowest > highest:  # every mass infinite: the one end it has
        lowest = highest = -math.inf if hypothesis == "Q" else math.inf
    return lowest, highest


def first_reaching(value, target: float, jumps=()) -> float:
    """``inf {x : value(x) >= target}`` for a non-decreasing, right-continuous ``value``.

    By bisection, not by a root finder: ``value`` may jump (atoms), and a root finder stops
    anywhere inside a jump. A crossing at one of the ``jumps`` is returned exactly.

    Parameters
    ----------
    value
        ``value(x) -> float`` at a float ``x`` (``-inf`` and ``+inf`` included).
    target
        The level.
    jumps
        Finite points where ``value`` may jump.

    Returns
    -------
    float
        The point; ``-inf`` if ``value(-inf)`` reaches ``target``, ``+inf`` if no finite point
        does.
    """
    if value(-math.inf) >= target:
        return -math.inf
    lo, hi = -1.0, 1.0
    while value(lo) >= target:  # the bracket: value(lo) < target <= value(hi)
        lo, hi = 2.0 * lo, lo
        if lo < -1e300:
            return -math.inf
    while value(hi) < target:
        lo, hi = hi, 2.0 * hi
        if hi > 1e300:
            return math.inf
    while hi - lo > _RESOLUTION * max(1.0, abs(lo), abs(hi)):
        middle = 0.5 * (lo + hi)
        if not lo < middle < hi:
            break
        lo, hi = (lo, middle) if value(middle) >= target else (middle, hi)
    # the jump the bracket closed on, exactly (value is right-continuous: it holds there)
    return min((x for x in jumps if lo < x <= hi and value(x) >= target), default=hi)
