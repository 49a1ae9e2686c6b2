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
#: smallest positive normal float
_SMALLEST_NORMAL = 2.0**-1022
#: relative distance below a float epsilon at which delta must be certified above the target
#: for the float solve to stand (typical brackets are 1e-15 to 2e-13)
TIGHT = 1e-12
#: decimal digits of the mpmath solve behind a float epsilon the float solve cannot pin down
#: (float needs 17; the rest keeps a target one ulp above the infinity mass resolved)
FALLBACK_DPS = 30


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
            # no cap below the float range: mu-GDP at mu = 1e7 has epsilon(1e-5) = 5e13, and a
            # cap at 1e12 returned inf for it; at most 1024 doublings reach inf
            hi *= 2.0
            if math.isinf(hi):
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


def tight_float_epsilon(profile: Profile, target: float) -> float | None:
    """The float solve's epsilon when it is known to be within ``TIGHT`` (relative) of the
    exact one, else ``None`` (the caller then solves in mpmath).

    The float solve returns the smallest epsilon whose delta is *certified* at most ``target``:
    always an upper bound, but tight only when the error bound of the float delta is small
    against the distance of ``target`` from ``delta(+inf)``. It is not for a target within a
    few ulps of the mass at infinity ``1 - (1 - d0)^k`` of a composition (one ulp above it
    gave ``inf`` for the exact 1.0345 of ``(0.01, 0.01) x 200``, eight ulps 2.588 for the exact
    2.481 of ``(0.05, 0.1) x 60``), nor for a subnormal target, below the bound's floor of a
    few ``TINY`` (``epsilon(5e-324)`` of 1-GDP came out 7.9e15 for the exact 38.9). The test:
    ``delta`` just below the solution, at ``eps (1 - TIGHT)``, is certified *above* the target,
    which brackets the exact epsilon in ``[eps (1 - TIGHT), eps]``.
    """
    if 0 < target < _SMALLEST_NORMAL:
        return None  # skip the float solve: up to 1024 doublings that cannot certify
    eps = float_epsilon(profile, target)
    if eps == 0:
        return eps
    if math.isinf(eps):
        # exact only for target 0 with losses unbounded above (delta > 0 everywhere)
        return eps if target == 0 and math.isinf(profile.max_loss) else None
    value, error = profile.float_delta(eps * (1 - TIGHT))
    return eps if (value - error) * (1 - 4 * UNIT_ROUNDOFF) > target else None


def float_epsilon_via_mpmath(profile: Profile, target: float) -> float:
    """The float epsilon(delta), rounded up, from the mpmath solve at ``FALLBACK_DPS`` digits,
    for the targets :func:`tight_float_epsilon` cannot solve in float. ``inf`` only when the
    exact infinity mass is at least ``target``."""
    mp = load_mpmath()
    with mp.workdps(FALLBACK_DPS + GUARD_DIGITS):
        if profile.precise_infinity_mass is not None:
            # decided exactly before any (costly) evaluation of delta at finite epsilons
            mass = profile.precise_infinity_mass(mp)
            if mp.mpf(target) < mass:
                return math.inf
    # the (loose) float solution, an upper bound, is a good start when it is finite
    start = float_epsilon(profile, target) if target >= _SMALLEST_NORMAL else math.inf
    exact = precise_epsilon(profile, target, FALLBACK_DPS, start)
    if mp.isinf(exact):
        return math.inf
    result = float(exact)  # to nearest: step up if that fell below the certified value
    return math.nextafter(result, math.inf) if mp.mpf(result) < exact else result


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
            guess = tight_float_epsilon(profile, math.nextafter(float(target), 0.0))
            return precise_epsilon(profile, target, dps, math.inf if guess is None else guess)
        target = check.probability("delta", target)
        guess = tight_float_epsilon(profile, target)
        if precise:
            return precise_epsilon(profile, target, dps, math.inf if guess is None else guess)
        return float_epsilon_via_mpmath(profile, target) if guess is None else guess

    return map_scalar(one, delta, precise)
