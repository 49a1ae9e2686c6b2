"""Amounts of the filters: how step parameters are read and rounded (shared by the package).

Amounts are read as the decimal numbers they print as (``Fraction(repr(x))``) and summed exactly;
per-step costs that involve logarithms or square roots are rounded *up* before being kept exactly,
so rounding can never admit a step the exact condition would refuse.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

from plda._internal.floats import UNIT_ROUNDOFF

#: relative margin by which a floating-point filter condition must clear its limit
SAFETY = 1e-12


def exact(value: float) -> Fraction:
    # the decimal number the float prints as: 0.1 means 1/10, so 10 x 0.1 == 1 exactly
    return Fraction(repr(float(value)))


def round_up(value: float) -> float:
    """``value`` nudged up by a few ulps (covers the rounding of one float operation)."""
    return value * (1 + 8 * UNIT_ROUNDOFF) if value > 0 else value


def exact_round_up(value: float) -> Fraction:
    # an irrational per-step cost, rounded up then kept exactly (sums of these never round)
    return Fraction(round_up(value) * (1 + SAFETY))


def amount(name: str, value, *, optional: bool = False) -> float | None:
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
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    ok = (v > 0 if low_open else v >= 0) and v < high
    if not ok:
        raise ValueError(
            f"{name} must be in {'(' if low_open else '['}0, {high:.6g}), got {value!r}"
        )
    return v


#: stands for a step cost too large for a float (it fits no budget)
UNPAYABLE = Fraction(2) ** 2100


def add_states(a: tuple, b: tuple) -> tuple:
    return tuple(x + y for x, y in zip(a, b, strict=True))


def positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive integer, got {type(value).__name__}")
    if not (float(value).is_integer() and value >= 1):
        raise ValueError(f"{name} must be a positive integer (1, 2, ...), got {value!r}")
    return int(value)
