"""Floating-point helpers with a stated rounding direction.

Certified bounds need every computed probability rounded the safe way: up on the pessimistic
side, down on the optimistic one. ``u = 2^-53`` is the unit roundoff of float64.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

#: unit roundoff of float64
UNIT_ROUNDOFF = 2.0**-53


def round_up(value: float, relative_error: float) -> float:
    """``value`` widened upward by a relative error bound (and one ulp), for value >= 0."""
    return math.nextafter(value * (1.0 + relative_error), math.inf)


def round_down(value: float, relative_error: float) -> float:
    """``value`` narrowed downward by a relative error bound (and one ulp), never below 0."""
    return max(0.0, math.nextafter(value * (1.0 - relative_error), -math.inf))


def union_probability(masses: Iterable[tuple[float, int]], *, upper: bool) -> float:
    """``1 - prod_i (1 - m_i)^{k_i}``: the chance that at least one of independent events of
    probabilities ``m_i`` (each repeated ``k_i`` times) happens, rounded up (``upper``) or down.

    Computed as ``-expm1(sum_i k_i log1p(-m_i))``, which keeps full relative accuracy when the
    result is tiny (``1 - (1 - 1e-17)^2`` would round to 0 in the direct form). Each ``log1p``,
    product and ``expm1`` is correct to within ``2u`` relative, and a sum of ``N`` same-signed
    terms within ``N u``, so the result is within ``(2N + 6) u`` relative of the exact value;
    the rounding widens by twice that.
    """
    log_keep, terms = 0.0, 0
    for m, k in masses:
        if m <= 0.0 or k <= 0:
            continue
        if m >= 1.0:
            return 1.0
        log_keep += k * math.log1p(-m)
        terms += 1
    if terms == 0:
        return 0.0
    if log_keep == -math.inf:
        return 1.0
    value = -math.expm1(log_keep)
    error = 2.0 * (2 * terms + 6) * UNIT_ROUNDOFF
    if upper:  # round_up, written out: this runs in every composition
        return min(1.0, math.nextafter(value * (1.0 + error), math.inf))
    return round_down(value, error)
