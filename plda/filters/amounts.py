"""Amounts of the filters: how step parameters are read and rounded (shared by the package).

Amounts are read as the decimal numbers they print as and summed exactly; irrational per-step
costs are rounded *up* before being kept exactly, so rounding never admits a step the exact
condition would refuse.
"""

from __future__ import annotations

import math
import numbers
import sys
from fractions import Fraction

import numpy as np

from plda._internal.floats import UNIT_ROUNDOFF

#: relative margin by which a floating-point filter condition must clear its limit
SAFETY = 1e-12
#: largest overall epsilon of a filter: the budgets on sums of squared steps (about 2 epsilon for
#: ImprovedAdvancedFilter and GaussianFilter) must stay floats; no such epsilon means any privacy
LARGEST_EPSILON = 1e307
#: largest rho of RenyiFilter.from_rho and mu of GaussianFilter.from_mu: their epsilon (about rho,
#: about mu²/2) stays at most LARGEST_EPSILON
LARGEST_RHO = LARGEST_EPSILON / 10
LARGEST_MU = 1e153
#: smallest epsilon of a RenyiFilter: below, its zCDP budget (about epsilon² / (4 ln(1/delta)))
#: is no longer a normal float
SMALLEST_RENYI_EPSILON = 1e-150


def exact(value: float) -> Fraction:
    """The decimal number a float prints as, exactly: ``0.1`` means 1/10.

    So ten steps of 0.1 fill a budget of 1 exactly.

    Parameters
    ----------
    value : float
        The amount.

    Returns
    -------
    fractions.Fraction
        ``Fraction(repr(float(value)))``.
    """
    return Fraction(repr(float(value)))


def round_up(value: float) -> float:
    """A positive value nudged up by a few ulps, to cover the rounding of one float operation.

    Parameters
    ----------
    value : float
        The value.

    Returns
    -------
    float
        ``value (1 + 8 * 2^-53)`` if ``value > 0``, else ``value``.
    """
    return value * (1 + 8 * UNIT_ROUNDOFF) if value > 0 else value


def exact_round_up(value: float) -> Fraction:
    """An irrational per-step cost, rounded up, then kept exactly (its sums never round).

    Parameters
    ----------
    value : float
        The cost, computed in floating point.

    Returns
    -------
    fractions.Fraction
        The exact value of ``round_up(value) (1 + SAFETY)``.
    """
    return Fraction(round_up(value) * (1 + SAFETY))


def log_inverse(x: float) -> float:
    """``ln(1/x)`` for ``x`` in (0, 1], also where ``1/x`` overflows (a subnormal ``x``).

    Parameters
    ----------
    x : float
        A probability (a δ), > 0.

    Returns
    -------
    float
        ``log(1/x)`` as the filters always computed it, or ``-log(x)`` where ``1/x`` is inf.
    """
    inverse = 1 / x
    return math.log(inverse) if inverse < math.inf else -math.log(x)


def shaded_square(x: float) -> Fraction:
    """``x² (1 - SAFETY)`` as computed in floating point, kept exactly, with no over/underflow.

    The square of the mantissa is rounded as ``x * x * (1 - SAFETY)`` would be, then scaled by
    an exact power of 2, so the value equals the float expression wherever that is a normal
    float, and stays exact beyond (where the float would be inf, 0 or subnormal).

    Parameters
    ----------
    x : float
        A finite float.

    Returns
    -------
    fractions.Fraction
        The shaded square.
    """
    mantissa, exponent = math.frexp(x)
    return Fraction(mantissa * mantissa * (1 - SAFETY)) * Fraction(2) ** (2 * exponent)


def upper_float(value: Fraction, rounded: float) -> float:
    """A float at least ``value``: ``rounded`` if it is a normal float that is, else the smallest.

    ``rounded`` is the caller's usual float for ``value`` (rounded up by a relative margin).
    Below the smallest normal float a relative margin is lost to the spacing of subnormals (and
    an underflow to 0 loses everything), so there the next float up is taken instead.

    Parameters
    ----------
    value : fractions.Fraction
        The exact amount, ``>= 0`` and at most the largest float.
    rounded : float
        The caller's float for it.

    Returns
    -------
    float
        ``rounded``, or the smallest float ``>= value``.
    """
    if sys.float_info.min <= rounded < math.inf and Fraction(rounded) >= value:
        return rounded
    nearest = float(value)
    return nearest if Fraction(nearest) >= value else math.nextafter(nearest, math.inf)


def amount(name: str, value, *, optional: bool = False) -> float | None:
    """A step amount (epsilon, delta, rho, mu): a finite float ``>= 0``.

    Parameters
    ----------
    name : str
        The argument's name, for the error messages.
    value
        The argument.
    optional : bool, optional
        Whether None is accepted (and returned).

    Returns
    -------
    float or None
        The amount.

    Raises
    ------
    TypeError
        If ``value`` is not a real number (a ``bool`` is not), or is None when not optional.
    ValueError
        If it is negative, infinite or NaN.
    """
    if value is None:
        if optional:
            return None
        raise TypeError(f"{name} must be a real number >= 0, got None")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number >= 0, got {type(value).__name__}")
    v = float(value)
    if not (math.isfinite(v) and v >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return v


def delta_budget(name: str, value, *, low_open: bool, high: float = 1.0) -> float:
    """A delta budget: a float in ``(0, high)`` or ``[0, high)``.

    Parameters
    ----------
    name : str
        The argument's name, for the error messages.
    value
        The argument.
    low_open : bool
        Whether 0 is refused.
    high : float, optional
        The (excluded) upper end.

    Returns
    -------
    float
        The delta.

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If it lies outside the interval.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    ok = (v > 0 if low_open else v >= 0) and v < high
    if not ok:
        raise ValueError(
            f"{name} must be in {'(' if low_open else '['}0, {high:.6g}), got {value!r}"
        )
    return v


def largest_float_where(fits, lo: float, hi: float) -> float:
    """The largest float in ``[lo, hi)`` at which a monotone condition holds, by bisection.

    Bisects the bit patterns (non-negative floats are ordered like their int64 views), so it
    ends on adjacent floats after at most 64 steps, however small or large the answer.

    Parameters
    ----------
    fits : callable
        ``fits(x) -> bool``, true up to some point and false after it; assumed true at ``lo``
        and false at ``hi`` (neither is evaluated).
    lo, hi : float
        The bracket, ``0 <= lo < hi`` (``hi`` may be ``inf``).

    Returns
    -------
    float
        The largest float ``x`` in the bracket with ``fits(x)`` (``lo`` if there is none).
    """
    lo_bits = int(np.float64(lo).view(np.int64))
    hi_bits = int(np.float64(hi).view(np.int64))
    while hi_bits - lo_bits > 1:
        mid = (lo_bits + hi_bits) // 2
        if fits(float(np.int64(mid).view(np.float64))):
            lo_bits = mid
        else:
            hi_bits = mid
    return float(np.int64(lo_bits).view(np.float64))


#: stands for a step cost too large for a float (it fits no budget)
UNPAYABLE = Fraction(2) ** 2100


def add_states(a: tuple, b: tuple) -> tuple:
    """Add two filter states (tuples of exact accumulators) elementwise.

    Parameters
    ----------
    a, b : tuple
        States of the same length.

    Returns
    -------
    tuple
        ``a + b``, elementwise.
    """
    return tuple(x + y for x, y in zip(a, b, strict=True))


def positive_int(name: str, value) -> int:
    """A positive integer argument (integral floats such as ``3.0`` accepted).

    Parameters
    ----------
    name : str
        The argument's name, for the error messages.
    value
        The argument.

    Returns
    -------
    int
        The integer, at least 1.

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If it is not an integer ``>= 1``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive integer, got {type(value).__name__}")
    # an int is checked as an int: float() of one beyond 1.8e308 would overflow
    integral = isinstance(value, numbers.Integral) or float(value).is_integer()
    if not (integral and value >= 1):
        raise ValueError(f"{name} must be a positive integer (1, 2, ...), got {value!r}")
    return int(value)
