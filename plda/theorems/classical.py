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
    Mironov & Naor 2006 for approximate DP); holds under adaptive and — with the same epsilon and
    a larger delta — concurrent composition (see :func:`concurrent`).
    """
    epsilons, deltas = parse_steps(steps)
    return Guarantee(sum_up(epsilons), min(1.0, sum_up(deltas)), "basic composition")


def parallel(steps) -> Guarantee:
    """Parallel composition: ``(max epsilon_i, max delta_i)`` when each step reads a *disjoint*
    part of the data (each record can affect at most one step).

    Theorem (McSherry 2009, PINQ). Under the add/remove relation the parts may be defined by any
    fixed partition of the record domain; under replace-one a replaced record can move between two
    parts, and then the answer is the basic composition of the two largest steps instead.
    """
    epsilons, deltas = parse_steps(steps)
    return Guarantee(float(np.max(epsilons)), float(np.max(deltas)), "parallel composition")


# ----------------------------------------------------------------------------- advanced
def advanced(steps, delta_slack: float) -> Guarantee:
    r"""Advanced composition (Dwork, Rothblum & Vadhan 2010, Thm. III.3; Dwork & Roth 2014,
    Thm. 3.20): for ``k`` steps that are each ``(epsilon, delta)``-DP and any slack
    ``delta' > 0``, the composition is ``(epsilon', k delta + delta')``-DP with

    .. math:: \varepsilon' = \sqrt{2k\ln(1/\delta')}\,\varepsilon + k\varepsilon(e^\varepsilon - 1).

    The parameters (steps, their epsilons and deltas, the count) must be fixed before the
    interaction starts: for adaptively chosen parameters this theorem does not hold, and only
    the privacy filters and odometer of :mod:`plda.filters` give guarantees.

    For heterogeneous steps the same proof (Azuma-Hoeffding on the privacy loss, each term in
    ``[-epsilon_i, epsilon_i]`` with mean ``<= epsilon_i (e^epsilon_i - 1)``) gives
    ``epsilon' = sqrt(2 ln(1/delta') sum epsilon_i^2) + sum epsilon_i (e^epsilon_i - 1)`` and
    ``delta = sum delta_i + delta'``, which is the formula above when all steps are equal.
    A theorem; see :func:`advanced_kov` for the sharper Kairouz-Oh-Viswanath bound.
    """
    epsilons, deltas = parse_steps(steps)
    slack = delta_value("delta_slack", delta_slack, allow_zero=False)
    sum_sq = math.fsum((epsilons**2).tolist())
    with np.errstate(over="ignore"):  # epsilon_i > 709: the bound is vacuous (inf)
        drift = math.fsum((epsilons * np.expm1(epsilons)).tolist())
    epsilon = round_up(math.sqrt(2.0 * math.log(1.0 / slack) * sum_sq) + drift, 16)
    delta = min(1.0, round_up(sum_up(deltas.tolist() + [slack])))
    return Guarantee(epsilon, delta, "advanced composition (DRV10)")


def advanced_kov(steps, delta_slack: float) -> Guarantee:
    r"""The sharper advanced-composition bound of Kairouz, Oh & Viswanath (ICML 2015;
    arXiv:1311.0776 Thm. 3.4 homogeneous / Thm. 3.5 heterogeneous, "Composition Theorem I/II" of
    their slides): the composition is ``(epsilon~, 1 - (1 - delta~) prod(1 - delta_i))``-DP for

    .. math::
        \tilde\varepsilon = \min\Big\{\sum_i \varepsilon_i,\;
        \mu + \sqrt{2 S \log(e + \sqrt{S}/\tilde\delta)},\;
        \mu + \sqrt{2 S \log(1/\tilde\delta)}\Big\},\quad
        \mu = \sum_i \varepsilon_i \tanh(\varepsilon_i / 2),\; S = \sum_i \varepsilon_i^2,

    (``tanh(e/2) = (e^e - 1)/(e^e + 1)``; ``mu`` is the mean privacy loss of the dominating
    randomized responses). A theorem. The third term is Hoeffding's inequality on that loss, which
    is why it can replace ``epsilon (e^epsilon - 1)`` of :func:`advanced` by the smaller
    ``epsilon tanh(epsilon/2)``.

    The parameters (steps, their epsilons and deltas, the count) must be fixed before the
    interaction starts: for adaptively chosen parameters this theorem does not hold, and only
    the privacy filters and odometer of :mod:`plda.filters` give guarantees.
    """
    epsilons, deltas = parse_steps(steps)
    slack = delta_value("delta_slack", delta_slack, allow_zero=False)
    sum_sq = math.fsum((epsilons**2).tolist())
    mean = math.fsum((epsilons * np.tanh(epsilons / 2)).tolist())
    second = mean + math.sqrt(2 * sum_sq * math.log(math.e + math.sqrt(sum_sq) / slack))
    third = mean + math.sqrt(2 * sum_sq * math.log(1.0 / slack))
    epsilon = min(sum_up(epsilons.tolist()), round_up(min(second, third), 16))
    delta = one_minus_product_up([slack, *deltas.tolist()])
    return Guarantee(epsilon, delta, "advanced composition (KOV15)")
