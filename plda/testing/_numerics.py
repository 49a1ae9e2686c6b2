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
from plda._internal.caches import cached

#: unit roundoff of float64
U = 2.0**-53
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
        return (value + error) * (1 + 4 * U) <= target

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


# --------------------------------------------------------------- atom laws
def _split(value: float) -> tuple[float, float]:
    """``value = high + low`` with ``high`` holding the top 26 bits, so ``n * high`` is exact for
    integers ``|n| < 2^26`` (Dekker's splitting)."""
    mantissa, exponent = math.frexp(value)
    high = math.ldexp(math.floor(math.ldexp(mantissa, 26)), exponent - 26)
    return high, value - high


@dataclass(frozen=True)
class FloatAtoms:
    """A privacy-loss law on the lattice ``loss = n * unit``, in float with error bounds.

    ``multiples`` ascending integers; ``unit > 0`` with relative error ``unit_rel_err`` (0 when
    the unit is an input, e.g. ``epsilon0``); ``log_probs`` the log ``P``-masses (``-inf`` for
    masses that underflowed) with absolute errors ``log_errors``; ``abs_floor`` bounds the
    absolute error of every listed mass; atoms left out of the list have total mass at most
    ``dropped_mass`` and losses at most ``dropped_max_loss``; ``infinity_mass`` is
    ``P(L = +inf)``.
    """

    multiples: np.ndarray
    unit: float
    log_probs: np.ndarray
    log_errors: np.ndarray | float
    unit_rel_err: float = 0.0
    infinity_mass: float = 0.0
    abs_floor: float = 0.0
    dropped_mass: float = 0.0
    dropped_max_loss: float = -math.inf

    def _gaps(self, eps: float) -> tuple[np.ndarray, np.ndarray]:
        """``eps - n * unit`` to within a few ulps of the *result* (split product), and its
        error bound."""
        high, low = _split(self.unit)
        n = self.multiples.astype(float)
        x = (eps - n * high) - n * low
        loss = np.abs(n) * self.unit
        x_err = 4 * U * np.abs(x) + loss * (self.unit_rel_err + 4 * U * 2.0**-26)
        return x, x_err

    def delta(self, eps: float) -> tuple[float, float]:
        """``P(L = inf) + sum_{l > eps} p_l (1 - e^{eps - l})``, term by term in log space (every
        term is positive, so there is no cancellation), with an absolute error bound."""
        x, x_err = self._gaps(eps)
        above = x < -x_err
        near = ~above & (x <= x_err)  # at eps up to rounding: each may add up to p * x_err
        abs_err = self.abs_floor * int(np.count_nonzero(above | near))
        if eps < self.dropped_max_loss:
            abs_err += self.dropped_mass
        if np.any(near):
            abs_err += float(np.sum(np.exp(self.log_probs[near]) * 2 * x_err[near]))
        finite, rel = 0.0, 0.0
        terms = np.flatnonzero(above & (self.log_probs > -math.inf))
        if len(terms):
            xa = x[terms]
            log_terms = self.log_probs[terms] + np.log(-np.expm1(xa))
            top = float(np.max(log_terms))
            weights = np.exp(log_terms - top)
            total = float(np.sum(weights))
            finite = math.exp(top + math.log(total))
            log_err = self.log_errors[terms] if np.ndim(self.log_errors) else self.log_errors
            # relative error of 1 - e^x from the error of x is at most x_err / |x|
            kappa = (
                log_err + x_err[terms] / np.abs(xa)
                + 4 * U * (np.abs(log_terms) + abs(top) + 4)
            )
            rel = float(np.dot(weights, kappa)) / total + U * (16 + math.log2(len(xa)))
        value = self.infinity_mass + finite
        tiny = 8 * TINY if finite > 0 else 0.0
        return value, finite * rel + self.infinity_mass * 4 * U + abs_err + tiny

    @property
    def max_loss(self) -> float:
        # beyond this no atom is within rounding of eps: delta is exactly the infinity mass
        return float(self.multiples[-1]) * self.unit * (1 + 2 * self.unit_rel_err + 64 * U)


def mp_atoms_delta(mp, losses, probs, infinity_mass, eps):
    """``(delta, slope)`` of an atom law in mpmath:
    ``delta = inf + sum_{l > eps} p (1 - e^{eps-l})`` and ``slope = sum_{l > eps} p e^{-l}``."""
    delta = mp.mpf(infinity_mass)
    slope = mp.zero
    for loss, p in zip(losses, probs, strict=True):
        if loss > eps:
            delta += p * -mp.expm1(eps - loss)
            slope += p * mp.exp(-loss)
    return delta, slope


# ----------------------------------------------------- exact float convolution
@dataclass(frozen=True)
class ScaledPmf:
    """Non-negative masses ``exp(log_scale) * values`` (``max(values) == 1``) with a relative error
    bound per entry and an absolute floor (per entry, in units of ``exp(log_scale)``)."""

    values: np.ndarray
    log_scale: float
    rel_err: float
    floor: float = 0.0

    @classmethod
    def from_log(cls, log_masses: np.ndarray, log_err: float) -> ScaledPmf:
        top = float(np.max(log_masses))
        values = np.exp(log_masses - top)
        return cls(values, top, log_err + 4 * U * (1 + float(np.max(np.abs(log_masses)))), TINY)

    def convolve(self, other: ScaledPmf) -> ScaledPmf:
        """Direct (not FFT) convolution: sums of non-negative products keep their relative
        accuracy (an FFT would add an absolute error of about ``u * max``)."""
        raw = np.convolve(self.values, other.values)
        top = float(np.max(raw))
        n = min(len(self.values), len(other.values))
        floor = (
            self.floor * float(np.sum(other.values)) + other.floor * float(np.sum(self.values))
            + n * TINY
        ) / top
        return ScaledPmf(
            raw / top,
            self.log_scale + other.log_scale + math.log(top),
            self.rel_err + other.rel_err + (n + 4) * U,
            floor + TINY,
        )

    def power(self, count: int) -> ScaledPmf:
        result, base = None, self
        while True:
            if count & 1:
                result = base if result is None else result.convolve(base)
            count >>= 1
            if not count:
                return result
            base = base.convolve(base)


def mp_convolve(mp, a: list, b: list) -> list:
    out = []
    for m in range(len(a) + len(b) - 1):
        lo, hi = max(0, m - len(b) + 1), min(m, len(a) - 1)
        out.append(mp.fdot((a[i], b[m - i]) for i in range(lo, hi + 1)))
    return out


def mp_power(mp, pmf: list, count: int) -> list:
    result, base = None, pmf
    while True:
        if count & 1:
            result = base if result is None else mp_convolve(mp, result, base)
        count >>= 1
        if not count:
            return result
        base = mp_convolve(mp, base, base)


# ------------------------------------------------ binomial log-masses (Loader)
# stirlerr(n) = log n! - log(sqrt(2 pi n) (n/e)^n) for n = 0..15 (n = 0 unused)
_STIRLERR = np.array([
    np.nan, 0.08106146679532726, 0.0413406959554093, 0.02767792568499834,
    0.020790672103765093, 0.016644691189821193, 0.013876128823070748, 0.01189670994589177,
    0.010411265261972096, 0.009255462182712733, 0.00833056343336287, 0.007573675487951841,
    0.00694284010720953, 0.006408994188004207, 0.0059513701127588475, 0.005554733551962801,
])


def _stirlerr(n: np.ndarray) -> np.ndarray:
    n = np.asarray(n, dtype=float)
    small = n <= 15
    out = np.empty_like(n)
    out[small] = _STIRLERR[n[small].astype(np.int64)]
    m = n[~small]
    nn = m * m
    # Stirling series 1/12n - 1/360n^3 + 1/1260n^5 - 1/1680n^7 + 1/1188n^9: < u for n > 15
    series = 1 / 1260 - (1 / 1680 - 1 / (1188 * nn)) / nn
    out[~small] = (1 / 12 - (1 / 360 - series / nn) / nn) / m
    return out


def _bd0(x: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """``x log(x / mean) + mean - x`` without cancellation (Loader 2000)."""
    x = np.asarray(x, dtype=float)
    mean = np.broadcast_to(np.asarray(mean, dtype=float), x.shape)
    diff = x - mean
    close = np.abs(diff) < 0.1 * (x + mean)
    out = np.empty_like(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        far = ~close
        xf, mf = x[far], mean[far]
        out[far] = np.where(xf > 0, xf * np.log(xf / mf), 0.0) + mf - xf
    v = diff[close] / (x[close] + mean[close])
    s = diff[close] * v
    term = 2 * x[close] * v
    v2 = v * v
    for j in range(1, 20):  # |v| < 0.1: 20 terms reach far below u
        term = term * v2
        s = s + term / (2 * j + 1)
    out[close] = s
    return out


def log_binomial_pmf(i: np.ndarray, n: int, log_p: float, log_q: float):
    """``log C(n, i) p^i q^(n-i)`` accurately for large ``n`` (Loader's saddle-point form), and
    a bound on its absolute error."""
    i = np.asarray(i, dtype=np.int64)
    out = np.empty(i.shape)
    p, q = math.exp(log_p), math.exp(log_q)
    edge0, edgen = i == 0, i == n
    out[edge0] = n * log_q
    out[edgen] = n * log_p
    mid = ~(edge0 | edgen)
    x = i[mid].astype(float)
    y = n - x
    out[mid] = (
        _stirlerr(np.array([n]))[0] - _stirlerr(x) - _stirlerr(y)
        - _bd0(x, n * p) - _bd0(y, n * q)
        + 0.5 * (math.log(n) - math.log(2 * math.pi) - np.log(x) - np.log(y))
    )
    # bd0 inherits 2u|n p - i| from the rounding of n p; other terms are a few ulps each
    err = 8 * U * (8 + np.abs(out) + np.abs(n * p - i) + math.log(n + 1))
    return out, err


@cached(maxsize=4)
def kov_log_masses(epsilon0: float, count: int):
    """Log ``P``-masses of the ``count``-fold pure randomized response ``RR_epsilon0``: ``i``
    negative steps out of ``count`` (loss ``(count - 2 i) epsilon0``) is Binomial(count,
    ``1/(1+e^epsilon0)``)."""
    i = np.arange(count + 1)
    log_p = -float(np.logaddexp(0.0, epsilon0))  # a step with loss -epsilon0
    log_q = -float(np.logaddexp(0.0, -epsilon0))
    return log_binomial_pmf(i, count, log_p, log_q)
