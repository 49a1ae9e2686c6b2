"""Shared numerics of the exact references.

Float path: every privacy profile returns ``(value, absolute_error_bound)`` so that solving for
epsilon can round *outward* (the returned epsilon is certified: the exact ``delta`` there is at
most the target). Precise path: mpmath at ``dps`` digits plus guard digits, imported only when a
caller asks for ``precise=True``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from plda._internal import validation as check
from plda._internal.floats import UNIT_ROUNDOFF

#: default decimal digits of the precise (mpmath) path
DEFAULT_DPS = 50
#: extra digits carried by the precise path beyond ``dps``
GUARD_DIGITS = 20
#: smallest positive subnormal: absolute error floor of one float product
TINY = 2.0**-1074


def load_mpmath():
    """The mpmath context ``mpmath.mp``, imported on first use so that ``import plda.testing``
    stays cheap."""
    try:
        import mpmath
    except ImportError as exc:  # pragma: no cover - mpmath is a test dependency
        raise ImportError("precise=True needs mpmath (pip install mpmath)") from exc
    return mpmath.mp


def check_dps(dps) -> int:
    if isinstance(dps, bool) or not isinstance(dps, int) or not 15 <= dps <= 10_000:
        raise ValueError(f"dps must be an integer in [15, 10000], got {dps!r}")
    return dps


def map_scalar(function: Callable, value, precise: bool):
    """Apply a scalar ``function`` to ``value`` or to each entry of an array ``value``."""
    if np.ndim(value) == 0:
        return function(value)
    entries = np.asarray(value, dtype=object if precise else float)
    flat = [function(v) for v in np.ravel(entries)]
    out = np.array(flat, dtype=object if precise else float)
    return out.reshape(np.shape(value))


# ----------------------------------------------------------------- profiles
@dataclass(frozen=True)
class Profile:
    """A privacy profile ``delta(epsilon)`` known in float (with an error bound) and in mpmath.

    ``float_delta(eps) -> (value, error)`` with ``|value - exact| <= error``.
    ``precise_delta(mp, eps) -> (value, slope)`` at the current mpmath precision, where ``slope``
    is ``-d delta / d exp(eps)`` (the ``Q``-mass of losses above ``eps``): ``delta`` is convex
    and piecewise smooth in ``exp(eps)``, which the Newton solver uses.
    ``infinity_mass`` is ``delta(+inf)`` and ``max_loss`` the largest finite loss (``inf`` for
    unbounded laws): ``delta(eps) = infinity_mass`` for ``eps >= max_loss``.
    """

    float_delta: Callable[[float], tuple[float, float]]
    precise_delta: Callable
    infinity_mass: float = 0.0
    precise_infinity_mass: Callable | None = None
    max_loss: float = math.inf


def float_epsilon(profile: Profile, target: float) -> float:
    """Smallest float ``eps >= 0`` (to within 2 ulps) with ``delta(eps) <= target`` *certified*:
    ``value + error <= target``. Bisection on that predicate: every accepted point is certified,
    so the result is an upper bound on the exact epsilon(delta)."""

    def ok(eps: float) -> bool:
        value, error = profile.float_delta(eps)
        # (1 + 4u) covers the rounding of the sum itself
        return (value + error) * (1 + 4 * UNIT_ROUNDOFF) <= target

    if ok(0.0):
        return 0.0
    if math.isfinite(profile.max_loss):
        hi = profile.max_loss  # delta is flat (= the infinity mass) from here on
        if not ok(hi):
            return math.inf
    else:
        if target <= profile.infinity_mass:
            return math.inf
        hi = 1.0
        while not ok(hi):
            hi *= 2.0
            if hi > 1e12:
                return math.inf
    lo = 0.0
    while hi - lo > 2.0 * math.ulp(hi):
        mid = 0.5 * (lo + hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def precise_epsilon(profile: Profile, target: float, dps: int, float_guess: float):
    """Certified upper bound on epsilon(delta) at ``dps`` digits, rounded up.

    Safeguarded Newton in ``gamma = exp(eps)`` from the left (``delta`` is convex in ``gamma``, so
    Newton steps from the left never overshoot), started from the float solution.
    """
    mp = load_mpmath()
    with mp.workdps(dps + GUARD_DIGITS):
        tgt = mp.mpf(target)
        slack = 1 + mp.mpf(10) ** (-(dps + 5))
        tol = mp.mpf(10) ** (-(dps + 3))

        def ok(eps):
            return profile.precise_delta(mp, eps)[0] * slack <= tgt

        if ok(mp.zero):
            return mp.mpf(0)
        inf_mass = profile.precise_infinity_mass(mp) if profile.precise_infinity_mass else 0
        if tgt < inf_mass or (tgt == inf_mass and not math.isfinite(profile.max_loss)):
            return mp.inf
        if not math.isfinite(float_guess):
            float_guess = profile.max_loss if math.isfinite(profile.max_loss) else 1e6
        guess = mp.mpf(float_guess)
        width = guess * mp.mpf(1e-9) + mp.mpf(1e-300)
        hi = guess + width
        while not ok(hi):
            width *= 16
            hi = guess + width
        lo = max(guess - width, mp.zero)
        while ok(lo):
            if lo == 0:
                return mp.mpf(0)
            width *= 16
            lo = max(guess - width, mp.zero)
        for _ in range(1000):
            if hi - lo <= tol * hi:
                break
            width = hi - lo
            value, slope = profile.precise_delta(mp, lo)
            candidate = None
            if slope > 0:
                gamma = mp.exp(lo) + (value - tgt) / slope
                candidate = mp.log(gamma) if gamma > 0 else None
            if candidate is None or not lo < candidate < hi:
                candidate = (lo + hi) / 2
            if ok(candidate):
                hi = candidate
            else:
                lo = candidate
                nudged = candidate + tol * hi / 2
                if nudged < hi and ok(nudged):
                    hi = nudged
            if hi - lo > width / 2:  # Newton stalls where delta is very flat: bisect as well
                middle = (lo + hi) / 2
                if ok(middle):
                    hi = middle
                else:
                    lo = middle
        result = hi
    return mp.mpf(result, dps=dps, rounding="u")


def round_nearest(mp, value, dps: int):
    return mp.mpf(value, dps=dps)


# ------------------------------------------------------- public wrappers
def _is_mpf(value) -> bool:
    return type(value).__name__ == "mpf"


def profile_delta(profile: Profile, epsilon, precise: bool, dps: int):
    """``delta(epsilon)`` of ``profile`` (scalar or array), float or mpmath rounded to nearest.
    With ``precise=True`` an ``mpmath.mpf`` epsilon is taken at its full precision."""
    dps = check_dps(dps)

    def one(eps):
        if precise and _is_mpf(eps):
            if not eps >= 0:
                raise ValueError(f"epsilon must be in [0, inf], got {eps!r}")
        else:
            eps = check.nonnegative_float("epsilon", eps, upper=math.inf)
        if not precise:
            return profile.float_delta(eps)[0]
        mp = load_mpmath()
        with mp.workdps(dps + GUARD_DIGITS):
            value = profile.precise_delta(mp, mp.mpf(eps))[0]
        return round_nearest(mp, value, dps)

    return map_scalar(one, epsilon, precise)


def profile_epsilon(profile: Profile, delta, precise: bool, dps: int):
    """Certified upper bound on ``epsilon(delta)`` of ``profile`` (scalar or array)."""
    dps = check_dps(dps)

    def one(target):
        if precise and _is_mpf(target):
            if not 0 <= target <= 1:
                raise ValueError(f"delta must be in [0, 1], got {target!r}")
            # the float solve needs a float target at or below the exact one
            guess = float_epsilon(profile, math.nextafter(float(target), 0.0))
            return precise_epsilon(profile, target, dps, guess)
        target = check.probability("delta", target)
        guess = float_epsilon(profile, target)
        if not precise:
            return guess
        return precise_epsilon(profile, target, dps, guess)

    return map_scalar(one, delta, precise)
