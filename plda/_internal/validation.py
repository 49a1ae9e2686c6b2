"""Argument checks shared by the public API: each error names the argument and its allowed range."""

from __future__ import annotations

import numbers

import numpy as np


def positive_float(name: str, value, *, allow_inf: bool = False) -> float:
    """``value`` as a float in (0, inf) (or (0, inf] with ``allow_inf``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number in (0, inf), got {type(value).__name__}")
    v = float(value)
    if not (v > 0) or (np.isinf(v) and not allow_inf):
        raise ValueError(f"{name} must be a finite number in (0, inf), got {value!r}")
    return v


def fraction(name: str, value, *, low: float = 0.0, closed_low: bool = False) -> float:
    """``value`` as a float in ``(low, 1)`` (``[low, 1)`` with ``closed_low``): an accuracy, a
    tolerance, a floor on delta."""
    bracket = "[" if closed_low else "("
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number in {bracket}{low:g}, 1), got "
                        f"{type(value).__name__}")
    v = float(value)
    if not ((v >= low if closed_low else v > low) and v < 1):
        raise ValueError(f"{name} must be in {bracket}{low:g}, 1), got {value!r}")
    return v


def nonnegative_float(name: str, value, *, upper: float | None = None, closed: bool = True):
    """``value`` as a float in [0, upper] (``closed``) or [0, upper)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    hi = np.inf if upper is None else upper
    ok = v >= 0 and (v <= hi if closed else v < hi) and np.isfinite(v)
    if not ok:
        bracket = "]" if closed else ")"
        raise ValueError(f"{name} must be in [0, {hi:g}{bracket}, got {value!r}")
    return v


def probability(name: str, value, *, open_low: bool = False) -> float:
    """``value`` in [0, 1] (or (0, 1] with ``open_low``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not (0 < v <= 1 if open_low else 0 <= v <= 1):
        raise ValueError(f"{name} must be in {'(0' if open_low else '[0'}, 1], got {value!r}")
    return v


#: largest step count plda accepts: beyond it the composed window outgrows the grid cap even on
#: the coarsest grid the planner tries (counts are also carried in floats, exact to 2^53)
MAX_COUNT = 10**12
#: smallest Poisson sample rate plda accepts: below it the subsampled loss law is narrower than
#: the finest grid step and long compositions of it get only loose bounds
MIN_SAMPLE_RATE = 1e-12


def in_range(name: str, value: float, low: float, high: float, what: str) -> float:
    """``value`` (a derived parameter such as ``sensitivity / sigma``) inside ``[low, high]``,
    the range plda certifies; else a ValueError naming it, the range and the reason."""
    if not low <= value <= high:
        raise ValueError(
            f"{name} must be in [{low:g}, {high:g}] ({what}), got {value!r}"
        )
    return value


def doubled(name: str, value: float, high: float) -> None:
    """A ValueError naming ``name`` (``sensitivity / sigma``...) if twice ``value``, the
    replace-one reading of an add/remove sensitivity, exceeds ``high``."""
    if 2 * value > high:
        raise ValueError(
            f"{name} must be at most {high / 2:g} under relation='replace_one' (a replaced "
            f"record moves the query by twice the sensitivity), got {value!r}"
        )


def count(name: str, value, *, minimum: int = 0, maximum: int | None = MAX_COUNT) -> int:
    """``value`` as an integer in ``[minimum, maximum]`` (integral floats like 3.0 are
    accepted; the default maximum is :data:`MAX_COUNT`; ``maximum=None`` for no upper bound,
    when the caller bounds a total instead and names that range). A TypeError for anything
    that is not a real number (a bool included), a ValueError for a number out of range or
    not integral."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        # not a number (a str, bytes, None, a bool, a list): a wrong type, as in array_in
        raise TypeError(f"{name} must be an integer >= {minimum}, got {type(value).__name__}")
    if isinstance(value, numbers.Integral):
        v = int(value)
    elif float(value).is_integer():
        v = int(value)
    else:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if maximum is None:
        if v < minimum:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    elif not minimum <= v <= maximum:
        raise ValueError(
            f"{name} must be an integer in [{minimum}, {maximum:.0e}] (the range plda "
            f"certifies), got {value!r}"
        )
    return v


def array_in(name: str, value, lo: float, hi: float, *, open_hi: bool = False) -> np.ndarray:
    """``value`` as a float array with every entry in [lo, hi] (or [lo, hi)); no NaN."""
    if type(value) is float and (lo <= value < hi if open_hi else lo <= value <= hi):
        return np.array(value)  # the common scalar query, without the array checks
    try:
        raw = np.asarray(value)
        # real numbers only: numpy would read "1" as 1.0, True as 1.0, None as NaN and drop
        # the imaginary part of a complex number (with only a ComplexWarning)
        if raw.dtype.kind in "USbVc" or (
            raw.dtype.kind == "O"
            and any(x is None or isinstance(x, (str, bytes, bool, np.bool_, complex))
                    for x in raw.ravel().tolist())
        ):
            raise TypeError
        arr = raw.astype(float)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a number or an array of numbers, got {type(value).__name__}"
        ) from exc
    bad = np.isnan(arr) | (arr < lo) | ((arr >= hi) if open_hi else (arr > hi))
    if np.any(bad):
        first = arr[bad].flat[0]
        rng = f"[{lo:g}, {hi:g}{')' if open_hi else ']'}"
        raise ValueError(f"{name} must be in {rng}, got {first!r}")
    return arr


def real_sequence(name: str, values, *, max_length: int) -> tuple[float, ...]:
    """``values`` (a list, tuple or 1-D array) as a tuple of 1 to ``max_length`` finite floats;
    a TypeError for a non-sequence or a non-number, a ValueError for NaN, infinities or a bad
    length, each naming the argument."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a sequence of real numbers, got {type(values).__name__}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"{name} must hold real numbers, got {type(v).__name__}")
        if not np.isfinite(v):
            raise ValueError(f"{name} must hold finite numbers, got {v!r}")
        out.append(float(v))
    if not 1 <= len(out) <= max_length:
        raise ValueError(f"{name} must hold 1 to {max_length} values, got {len(out)}")
    return tuple(out)
