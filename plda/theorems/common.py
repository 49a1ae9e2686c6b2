"""What every composition theorem shares: the :class:`Guarantee` it returns, the checked
reading of its arguments (a list of ``(epsilon, delta)`` steps, grouped), and outward rounding."""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from plda._internal.floats import UNIT_ROUNDOFF


# ----------------------------------------------------------------------------- value objects
@dataclass(frozen=True)
class Guarantee:
    """An ``(epsilon, delta)``-DP guarantee produced by a composition theorem.

    Unpacks like the tuple ``(epsilon, delta)``. ``epsilon_lower`` is set only by the numerical
    optima (:func:`optimal`, :func:`kairouz_oh_viswanath`, :func:`group_privacy_mechanism`): the
    true optimal epsilon lies in ``[epsilon_lower, epsilon]``.
    """

    epsilon: float
    delta: float
    name: str
    epsilon_lower: float | None = None

    def __iter__(self):
        return iter((self.epsilon, self.delta))

    def __getitem__(self, index):
        return (self.epsilon, self.delta)[index]

    def __len__(self) -> int:
        return 2


# ----------------------------------------------------------------------------- validation
def real_number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)


def epsilon_value(name: str, value) -> float:
    v = real_number(name, value)
    if not (v >= 0 and math.isfinite(v)):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return v


def delta_value(name: str, value, *, allow_zero: bool = True) -> float:
    v = real_number(name, value)
    ok = (0 <= v < 1) if allow_zero else (0 < v < 1)
    if not ok:
        interval = "[0, 1)" if allow_zero else "(0, 1)"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return v


def count_value(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be an integer >= 1, got {type(value).__name__}")
    if isinstance(value, numbers.Integral):
        v = int(value)
    elif math.isfinite(float(value)) and float(value).is_integer():
        v = int(value)
    else:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if v < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return v


def parse_steps(steps) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` -> arrays ``(epsilons, deltas)``; accepts ``(epsilon, delta)`` pairs or objects
    with ``epsilon`` and ``delta`` attributes (e.g. ``plda.ApproximateDP``)."""
    if isinstance(steps, str | bytes) or not isinstance(steps, Iterable):
        raise TypeError(
            "steps must be a sequence of (epsilon, delta) pairs, got " + type(steps).__name__
        )
    items = list(steps)
    if not items:
        raise ValueError("steps must contain at least one (epsilon, delta) pair, got none")
    fast = _steps_fast(items)
    if fast is not None:
        return fast
    epsilons = np.empty(len(items))
    deltas = np.empty(len(items))
    for i, item in enumerate(items):
        if hasattr(item, "epsilon") and hasattr(item, "delta"):
            e, d = item.epsilon, item.delta
        else:
            try:
                e, d = item
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"steps[{i}] must be an (epsilon, delta) pair, got {item!r}"
                ) from exc
        epsilons[i] = epsilon_value(f"epsilon of steps[{i}]", e)
        deltas[i] = delta_value(f"delta of steps[{i}]", d)
    return epsilons, deltas


def _steps_fast(items: list) -> tuple[np.ndarray, np.ndarray] | None:
    """Vectorized path for long lists of numeric pairs (``None``: take the checked loop, which
    also names the first bad entry)."""
    if len(items) < 64 or not all(type(x) is tuple for x in items[:64]):
        return None
    try:
        array = np.asarray(items, dtype=float)
    except (TypeError, ValueError):
        return None
    if array.ndim != 2 or array.shape[1] != 2:
        return None
    epsilons, deltas = array[:, 0].copy(), array[:, 1].copy()
    good = np.isfinite(epsilons) & (epsilons >= 0) & (deltas >= 0) & (deltas < 1)
    if not good.all() or any(isinstance(v, bool) for pair in items[:64] for v in pair):
        return None
    return epsilons, deltas


def group_steps(epsilons: np.ndarray, deltas: np.ndarray) -> list[tuple[tuple[float, float], int]]:
    """Identical steps grouped: ``[((epsilon, delta), count), ...]`` in first-seen order."""
    counts = Counter(zip(epsilons.tolist(), deltas.tolist(), strict=True))
    return list(counts.items())


# ----------------------------------------------------------------------------- outward rounding
def round_up(x: float, ulps: float = 8.0) -> float:
    """``x`` nudged up by a relative ``ulps * u`` (covers the rounding of a short closed form)."""
    if x == 0 or not math.isfinite(x):
        return x
    return x + abs(x) * ulps * UNIT_ROUNDOFF + 5e-324


def sum_up(values) -> float:
    """The float just above-or-at the exact sum: ``fsum`` is correctly rounded, and the sign of
    the (also correctly rounded) residual says on which side the exact sum lies."""
    values = [float(v) for v in values]
    s = math.fsum(values)
    if math.isfinite(s) and math.fsum([*values, -s]) > 0:
        s = math.nextafter(s, math.inf)
    return s


def one_minus_product_up(deltas: Iterable[float]) -> float:
    """Upper bound on ``1 - prod(1 - delta_i)`` (in log space, so tiny deltas keep precision).

    Each ``log1p`` is within 1 ulp and ``fsum`` is correctly rounded, so ``x = sum log(1 -
    delta_i)`` is off by ``<= 2u |x|``; ``-expm1`` turns that into a relative error ``<= 2u |x|
    e^x / (1 - e^x) <= 2u`` (plus its own ulp): 8 ulps cover it for any number of steps."""
    total = math.fsum([math.log1p(-d) for d in deltas])
    return min(1.0, round_up(-math.expm1(total), 8))


def covers_delta_mass(target: float, groups) -> bool:
    """Whether ``target >= 1 - prod_i (1 - delta_i)^{n_i}`` holds *exactly* (groups of
    ``((epsilon, delta), n)``), so that basic composition's ``sum epsilon_i`` is valid there.

    A float comparison with the mass rounded up refuses the equality case (``delta = 1e-3`` for
    one ``(0.5, 1e-3)`` step); within a few ulps of the edge it is decided in exact rational
    arithmetic (Python integers: a few hundred thousand bits at most), and beyond 4096 steps,
    where exact powers grow too long, the edge counts as not covered (conservative)."""
    deltas = [d for (_, d), _ in groups]
    counts = [n for _, n in groups]
    log_keep = math.fsum(n * math.log1p(-d) for d, n in zip(deltas, counts, strict=True))
    mass_up = min(1.0, round_up(-math.expm1(log_keep), 8))
    if target >= mass_up:
        return True
    if target < mass_up * (1 - 64 * UNIT_ROUNDOFF) or sum(counts) > 4096:
        return False
    keep = Fraction(1)
    for d, n in zip(deltas, counts, strict=True):
        keep *= (1 - Fraction(d)) ** n
    return Fraction(target) >= 1 - keep
