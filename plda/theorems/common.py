"""What every composition theorem shares: the :class:`Guarantee` it returns, the checked
reading of its arguments (a list of ``(epsilon, delta)`` steps, grouped), and outward rounding.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext
from fractions import Fraction

import numpy as np

from plda._internal.floats import UNIT_ROUNDOFF


# ----------------------------------------------------------------------------- value objects
@dataclass(frozen=True)
class Guarantee:
    """An ``(epsilon, delta)``-DP guarantee produced by a composition theorem.

    Unpacks like the tuple ``(epsilon, delta)``.

    Attributes
    ----------
    epsilon : float
        The guaranteed epsilon, rounded up (``inf`` where the theorem does not apply).
    delta : float
        The guaranteed delta, rounded up.
    name : str
        The theorem, e.g. ``"advanced composition (DRV10)"``.
    epsilon_lower : float or None
        Set only by the numerical optima (:func:`~plda.theorems.optimal`,
        :func:`~plda.theorems.kairouz_oh_viswanath`,
        :func:`~plda.theorems.group_privacy_mechanism`): the true optimal epsilon lies in
        ``[epsilon_lower, epsilon]``.

    Examples
    --------
    >>> from plda import theorems
    >>> epsilon, delta = theorems.basic([(0.5, 1e-6), (0.25, 0.0)])
    >>> epsilon, delta
    (0.75, 1e-06)
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
    """A real number argument as a float.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    value
        The argument.

    Returns
    -------
    float
        ``float(value)`` (``inf`` or ``-inf`` beyond the float range).

    Raises
    ------
    TypeError
        If ``value`` is not a real number (a ``bool`` is not).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        return float(value)
    except OverflowError:  # an int or Fraction beyond the float range: out of every range here
        return math.inf if value > 0 else -math.inf


def epsilon_value(name: str, value) -> float:
    """An epsilon argument: a finite float ``>= 0``.

    Parameters
    ----------
    name : str
        The argument's name, for the error messages.
    value
        The argument.

    Returns
    -------
    float
        The value.

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If it is negative, infinite or NaN.
    """
    v = real_number(name, value)
    if not (v >= 0 and math.isfinite(v)):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return v


def delta_value(name: str, value, *, allow_zero: bool = True) -> float:
    """A delta argument: a float in [0, 1), or (0, 1) without ``allow_zero``.

    Parameters
    ----------
    name : str
        The argument's name, for the error messages.
    value
        The argument.
    allow_zero : bool, optional
        Whether 0 is accepted.

    Returns
    -------
    float
        The value.

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If it lies outside the interval.
    """
    v = real_number(name, value)
    ok = (0 <= v < 1) if allow_zero else (0 < v < 1)
    if not ok:
        interval = "[0, 1)" if allow_zero else "(0, 1)"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return v


def count_value(name: str, value) -> int:
    """A count argument: an integer ``>= 1`` (integral floats such as ``3.0`` accepted).

    Parameters
    ----------
    name : str
        The argument's name, for the error messages.
    value
        The argument.

    Returns
    -------
    int
        The count.

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If it is not an integer ``>= 1``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be an integer >= 1, got {type(value).__name__}")
    if isinstance(value, numbers.Integral):
        v = int(value)
    elif math.isfinite(real_number(name, value)) and float(value).is_integer():
        v = int(value)
    else:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if v < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return v


def parse_steps(steps) -> tuple[np.ndarray, np.ndarray]:
    """The steps of a theorem as two arrays, checked.

    Parameters
    ----------
    steps : sequence
        ``(epsilon, delta)`` pairs, or objects with ``epsilon`` and ``delta`` attributes (e.g.
        :class:`~plda.ApproximateDP`).

    Returns
    -------
    tuple of numpy.ndarray
        ``(epsilons, deltas)``, one entry per step.

    Raises
    ------
    TypeError
        If ``steps`` is not a sequence of pairs, or a value is not a real number (the error
        names the first bad entry).
    ValueError
        If ``steps`` is empty, an epsilon is negative or not finite, or a delta is outside
        [0, 1).
    """
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
    also names the first bad entry).

    Every entry is checked as the loop would, by the set of types present: numpy would
    otherwise turn ``"0.1"``, ``b"1"`` or ``True`` into a float and accept it where a short list
    raises ``TypeError``. The sets are built in C, and the flat list they need is also what numpy
    converts fastest, so long lists parse no slower than with the check on 64 entries only.
    """
    if len(items) < 64 or not set(map(type, items)) <= {tuple, list}:
        return None
    if set(map(len, items)) != {2}:
        return None
    flat = list(itertools.chain.from_iterable(items))
    if not all(map(_is_real_type, set(map(type, flat)))):
        return None
    try:
        array = np.array(flat, dtype=float).reshape(-1, 2)
    except (TypeError, ValueError, OverflowError):  # e.g. an int beyond the float range
        return None
    epsilons, deltas = array[:, 0].copy(), array[:, 1].copy()
    good = np.isfinite(epsilons) & (epsilons >= 0) & (deltas >= 0) & (deltas < 1)
    if not good.all():
        return None
    return epsilons, deltas


def _is_real_type(kind: type) -> bool:
    """Whether :func:`real_number` accepts values of this type."""
    return issubclass(kind, numbers.Real) and not issubclass(kind, bool)


def group_steps(epsilons: np.ndarray, deltas: np.ndarray) -> list[tuple[tuple[float, float], int]]:
    """Identical steps grouped, in first-seen order.

    Parameters
    ----------
    epsilons, deltas : numpy.ndarray
        The steps, as :func:`parse_steps` returns them.

    Returns
    -------
    list
        ``[((epsilon, delta), count), ...]``.
    """
    counts = Counter(zip(epsilons.tolist(), deltas.tolist(), strict=True))
    return list(counts.items())


# ----------------------------------------------------------------------------- outward rounding
def round_up(x: float, ulps: float = 8.0) -> float:
    """``x`` nudged up by a relative ``ulps * u``, to cover the rounding of a short closed form.

    Parameters
    ----------
    x : float
        The value.
    ulps : float, optional
        How many units of roundoff ``u = 2^-53`` to add, relative to ``|x|``.

    Returns
    -------
    float
        ``x + |x| ulps u`` plus the smallest subnormal; 0 and non-finite values unchanged.
    """
    if x == 0 or not math.isfinite(x):
        return x
    return x + abs(x) * ulps * UNIT_ROUNDOFF + 5e-324


def sum_up(values) -> float:
    """The smallest float at or above the exact sum of ``values``.

    ``fsum`` is correctly rounded, and the sign of the (also correctly rounded) residual says on
    which side of it the exact sum lies. A sum beyond the largest float is ``inf``.

    Parameters
    ----------
    values : iterable of float
        The terms.

    Returns
    -------
    float
        The sum, rounded up.
    """
    values = [float(v) for v in values]
    try:
        s = math.fsum(values)
    except OverflowError:
        # a partial sum left the float range (fsum raises rather than return inf): sum the
        # floats exactly as rationals; an exact sum beyond the largest float rounds up to inf
        exact = sum(map(Fraction, values))
        try:
            s = float(exact)
        except OverflowError:
            return math.inf if exact > 0 else -math.inf
        return s if Fraction(s) >= exact else math.nextafter(s, math.inf)
    if math.isfinite(s) and math.fsum([*values, -s]) > 0:
        s = math.nextafter(s, math.inf)
    return s


def one_minus_product_up(deltas: Iterable[float]) -> float:
    """Upper bound on ``1 - prod(1 - delta_i)``, in log space so that tiny deltas keep precision.

    Parameters
    ----------
    deltas : iterable of float
        The deltas, each in [0, 1).

    Returns
    -------
    float
        ``-expm1(sum log1p(-delta_i))`` rounded up by 8 ulps, at most 1.
    """
    # Each log1p is within 1 ulp and fsum is correctly rounded, so x = sum log(1 - delta_i) is
    # off by <= 2u |x|; -expm1 turns that into a relative error <= 2u |x| e^x / (1 - e^x) <= 2u
    # (plus its own ulp): 8 ulps cover it for any number of steps.
    total = math.fsum([math.log1p(-d) for d in deltas])
    return min(1.0, round_up(-math.expm1(total), 8))


def covers_delta_mass(target: float, groups) -> bool:
    """Whether ``target >= 1 - prod_i (1 - delta_i)^{n_i}`` holds exactly.

    Then basic composition's ``sum epsilon_i`` is valid at ``target``. Near the edge the
    comparison is exact (rational arithmetic), so the equality case (``delta = 1e-3`` for one
    ``(0.5, 1e-3)`` step) is accepted; beyond 4096 steps (rationals of millions of bits) it is
    decided by 80-digit arithmetic rounded outward, and only a tie within that counts as not
    covered (conservative).

    Parameters
    ----------
    target : float
        The total delta.
    groups : list
        ``[((epsilon, delta), n), ...]``, as :func:`group_steps` returns them.

    Returns
    -------
    bool
        Whether the mass at infinite loss of the composition is at most ``target``.
    """
    deltas = [d for (_, d), _ in groups]
    counts = [n for _, n in groups]
    log_keep = math.fsum(n * math.log1p(-d) for d, n in zip(deltas, counts, strict=True))
    mass_up = min(1.0, round_up(-math.expm1(log_keep), 8))
    if target >= mass_up:
        return True
    if target < mass_up * (1 - 64 * UNIT_ROUNDOFF):
        return False
    if sum(counts) > 4096:
        return _covers_decimal(Decimal(target), deltas, counts)
    keep = Fraction(1)
    for d, n in zip(deltas, counts, strict=True):
        keep *= (1 - Fraction(d)) ** n
    return Fraction(target) >= 1 - keep


def _covers_decimal(target: Decimal, deltas, counts) -> bool:
    """``target >= 1 - prod (1 - d_i)^{n_i}`` if an 80-digit lower bound on the product shows
    it (every product rounded down, so the mass is rounded up); False when undecided."""
    with localcontext() as ctx:
        ctx.prec, ctx.rounding = 80, ROUND_FLOOR
        keep = Decimal(1)
        for d, n in zip(deltas, counts, strict=True):
            base, power = Decimal(1) - Decimal(d), Decimal(1)
            while n:  # binary powering: every rounding is down, the product stays below
                if n & 1:
                    power *= base
                base *= base
                n >>= 1
            keep *= power
        ctx.rounding = ROUND_CEILING
        return target >= Decimal(1) - keep
