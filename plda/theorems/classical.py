"""The classical composition theorems in closed form: basic, parallel, advanced (DRV10) and the
sharper advanced bound of Kairouz, Oh & Viswanath (KOV15)."""

from __future__ import annotations

import math

import numpy as np

from plda.theorems.common import (
    Guarantee,
    delta_value,
    one_minus_product_up,
    parse_steps,
    round_up,
    sum_up,
)


# ----------------------------------------------------------------------------- basic / parallel
def basic(steps) -> Guarantee:
    """Basic composition: ``(sum epsilon_i, sum delta_i)``.

    Theorem (Dwork, McSherry, Nissim & Smith 2006 for pure DP; Dwork, Kenthapadi, McSherry,
    Mironov & Naor 2006 for approximate DP); holds under adaptive and, with the same epsilon and
    a larger delta, concurrent composition (see :func:`concurrent`).

    Parameters
    ----------
    steps : sequence
        The steps: ``(epsilon_i, delta_i)`` pairs, or objects with ``epsilon`` and ``delta``
        attributes (e.g. :class:`~plda.ApproximateDP`); ``epsilon_i >= 0`` finite,
        ``delta_i`` in [0, 1).

    Returns
    -------
    Guarantee
        ``(sum epsilon_i, min(1, sum delta_i))``, sums rounded up.

    Raises
    ------
    TypeError
        If ``steps`` is not a sequence of pairs, or a value is not a real number.
    ValueError
        If ``steps`` is empty or a value is out of range.
    """
    epsilons, deltas = parse_steps(steps)
    return Guarantee(sum_up(epsilons), min(1.0, sum_up(deltas)), "basic composition")


def parallel(steps) -> Guarantee:
    """Parallel composition: ``(max epsilon_i, max delta_i)`` for steps on disjoint data.

    Each step reads a *disjoint* part of the data, so each record affects at most one step.
    Theorem (McSherry 2009, PINQ) under the add/remove relation, the parts defined by any fixed
    partition of the record domain; under replace-one a replaced record can move between two
    parts, and the answer is then the basic composition of the two largest steps instead.

    Parameters
    ----------
    steps : sequence
        The steps: ``(epsilon_i, delta_i)`` pairs, or objects with ``epsilon`` and ``delta``
        attributes (e.g. :class:`~plda.ApproximateDP`); ``epsilon_i >= 0`` finite,
        ``delta_i`` in [0, 1).

    Returns
    -------
    Guarantee
        ``(max epsilon_i, max delta_i)``.

    Raises
    ------
    TypeError
        If ``steps`` is not a sequence of pairs, or a value is not a real number.
    ValueError
        If ``steps`` is empty or a value is out of range.
    """
    epsilons, deltas = parse_steps(steps)
    return Guarantee(float(np.max(epsilons)), float(np.max(deltas)), "parallel composition")


# ----------------------------------------------------------------------------- advanced
def advanced(steps, delta_slack: float) -> Guarantee:
    """Advanced composition of Dwork, Rothblum & Vadhan (2010): ``epsilon`` grows like ``sqrt(k)``.

    ``epsilon' = sqrt(2 ln(1/delta') sum epsilon_i^2) + sum epsilon_i (e^epsilon_i - 1)`` at
    ``delta = sum delta_i + delta'`` (DRV10, Thm. III.3; Dwork & Roth 2014, Thm. 3.20; the
    heterogeneous form has the same proof). A theorem; :func:`advanced_kov` is sharper.
    The parameters (steps, their epsilons and deltas, the count) must be fixed before the
    interaction starts; for adaptively chosen ones only :mod:`plda.filters` gives guarantees.

    Parameters
    ----------
    steps : sequence
        The steps: ``(epsilon_i, delta_i)`` pairs, or objects with ``epsilon`` and ``delta``
        attributes (e.g. :class:`~plda.ApproximateDP`); ``epsilon_i >= 0`` finite,
        ``delta_i`` in [0, 1).
    delta_slack : float
        The slack ``delta'`` in (0, 1).

    Returns
    -------
    Guarantee
        ``(epsilon', min(1, sum delta_i + delta'))``, rounded up.

    Raises
    ------
    TypeError
        If ``steps`` is not a sequence of pairs, or a value is not a real number.
    ValueError
        If ``steps`` is empty or a value is out of range.
    """
    epsilons, deltas = parse_steps(steps)
    slack = delta_value("delta_slack", delta_slack, allow_zero=False)
    with np.errstate(over="ignore"):  # epsilon_i > 709: the bound is vacuous (inf)
        sum_sq = sum_up((epsilons**2).tolist())  # fsum raises where a partial sum overflows
        drift = sum_up((epsilons * np.expm1(epsilons)).tolist())
    # ln(1/delta') as -ln(delta'): 1/delta' overflows below 5.6e-309 (a valid subnormal slack)
    epsilon = round_up(math.sqrt(-2.0 * math.log(slack)) * math.sqrt(sum_sq) + drift, 16)
    delta = min(1.0, round_up(sum_up(deltas.tolist() + [slack])))
    return Guarantee(epsilon, delta, "advanced composition (DRV10)")


def advanced_kov(steps, delta_slack: float) -> Guarantee:
    """The sharper advanced-composition bound of Kairouz, Oh & Viswanath (2015).

    ``min{sum epsilon_i, mu + sqrt(2 S log(e + sqrt(S) / delta~)), mu + sqrt(2 S log(1 /
    delta~))}`` with ``mu = sum epsilon_i tanh(epsilon_i / 2)`` and ``S = sum epsilon_i^2``, at
    ``delta = 1 - (1 - delta~) prod(1 - delta_i)`` (KOV15, arXiv:1311.0776, Thms. 3.4 and 3.5).
    A theorem. The parameters (steps, their epsilons and deltas, the count) must be fixed
    before the interaction starts; for adaptively chosen ones only :mod:`plda.filters` gives
    guarantees.

    Parameters
    ----------
    steps : sequence
        The steps: ``(epsilon_i, delta_i)`` pairs, or objects with ``epsilon`` and ``delta``
        attributes (e.g. :class:`~plda.ApproximateDP`); ``epsilon_i >= 0`` finite,
        ``delta_i`` in [0, 1).
    delta_slack : float
        The slack ``delta~`` in (0, 1).

    Returns
    -------
    Guarantee
        ``(epsilon~, 1 - (1 - delta~) prod(1 - delta_i))``, both rounded up.

    Raises
    ------
    TypeError
        If ``steps`` is not a sequence of pairs, or a value is not a real number.
    ValueError
        If ``steps`` is empty or a value is out of range.
    """
    epsilons, deltas = parse_steps(steps)
    slack = delta_value("delta_slack", delta_slack, allow_zero=False)
    with np.errstate(over="ignore"):  # epsilon_i > 1.3e154: S is inf, basic composition wins
        sum_sq = sum_up((epsilons**2).tolist())  # fsum raises where a partial sum overflows
    mean = sum_up((epsilons * np.tanh(epsilons / 2)).tolist())
    # sqrt(S) / delta~ and 1 / delta~ overflow for a subnormal slack: then log(e + sqrt(S) /
    # delta~) is log(S) / 2 - log(delta~) > 709 (the e adds < 1e-308, far below the rounding
    # round_up covers), and log(1 / delta~) is -log(delta~)
    ratio = math.sqrt(sum_sq) / slack
    if math.isfinite(ratio) or math.isinf(sum_sq):
        log_term = math.log(math.e + ratio)
    else:
        log_term = 0.5 * math.log(sum_sq) - math.log(slack)
    root_s = math.sqrt(2.0 * sum_sq)
    second = mean + root_s * math.sqrt(log_term)
    third = mean + root_s * math.sqrt(-math.log(slack))
    epsilon = min(sum_up(epsilons.tolist()), round_up(min(second, third), 16))
    delta = one_minus_product_up([slack, *deltas.tolist()])
    return Guarantee(epsilon, delta, "advanced composition (KOV15)")
