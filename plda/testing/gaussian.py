"""Exact references for the Gaussian mechanism: ``k``-fold composition and one Poisson-sampled step.

Every profile reduces to one kernel, the hockey-stick divergence of two unit Gaussians at a
shift ``s``, ``H(a, s) = Phi(-a) - e^(s a + s^2/2) Phi(-(a + s))``, evaluated with ``erfcx`` so
that nothing underflows before ``delta`` itself does.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erfcx, log_ndtr, ndtr, ndtri

from plda._internal import validation as check
from plda._internal.floats import UNIT_ROUNDOFF
from plda.testing._internal.numerics import (
    DEFAULT_DPS,
    GUARD_DIGITS,
    TINY,
    Profile,
    check_dps,
    load_mpmath,
    map_scalar,
    profile_delta,
    profile_epsilon,
    round_nearest,
)

_SQRT2 = math.sqrt(2.0)
_LOG_HALF_SQRT_2PI = 0.5 * math.log(2 * math.pi)
DIRECTIONS = ("max", "remove", "add")
#: above this epsilon the sampled-Gaussian forms avoid e^eps (it overflows past ~709.78)
_LARGE_EPS = 700.0


# ------------------------------------------------------------------ kernel
def _hockey_float(a: float, s: float, a_err: float, s_err: float) -> tuple[float, float]:
    """``(H(a, s), absolute error bound)``; ``a_err``/``s_err`` bound the errors of the inputs.

    ``dH/da = -s B`` and ``|dH/ds| <= |a+s| B + phi(a)`` with ``B = e^(s a + s^2/2) Phi(-(a+s))``.
    """
    phi_a = math.exp(-0.5 * a * a - _LOG_HALF_SQRT_2PI)
    if a >= 0:
        # H = e^{-a^2/2} (erfcx(a/sqrt2) - erfcx((a+s)/sqrt2)) / 2: no underflow before H does
        e1, e2 = float(erfcx(a / _SQRT2)), float(erfcx((a + s) / _SQRT2))
        diff = e1 - e2
        log_half = -0.5 * a * a - math.log(2.0)
        second = math.exp(log_half) * e2
        if diff <= 0:  # s below the resolution of erfcx: 0 <= H <= Phi(-a) - Phi(-a-s) <= s phi(a)
            return 0.0, s * phi_a
        value = math.exp(log_half + math.log(diff))
        error = value * (12 * UNIT_ROUNDOFF * (e1 + e2) / diff + 4 * UNIT_ROUNDOFF * (2 + a * a))
    else:
        first = float(ndtr(-a))
        log_second = s * a + 0.5 * s * s + float(log_ndtr(-(a + s)))
        second = math.exp(log_second)
        value = first - second
        if value <= 0:  # H <= s sup |dH/ds| <= s ((|a| + s) Phi(-a) + phi(a))
            return 0.0, s * ((abs(a) + s) * first + phi_a)
        error = 8 * UNIT_ROUNDOFF * first + second * 8 * UNIT_ROUNDOFF * (
            4 + abs(s * a) + 0.5 * s * s + abs(log_second)
        )
    error += a_err * s * second + s_err * (abs(a + s) * second + phi_a)
    return value, error + 8 * TINY


def _hockey_precise(mp, inputs):
    """``H(a, s)`` in mpmath with guard digits raised until the cancellation is covered.

    ``inputs()`` computes ``(a, s, factor)`` at the current precision (so that raising the
    precision also sharpens them); returns ``factor * H(a, s)``, ``factor * Phi(-(a+s))`` (for
    slopes), ``a`` and ``s``.
    """
    extra = 0
    while True:
        with mp.workdps(mp.dps + extra):
            a, s, factor = inputs()
            first = mp.ncdf(-a)
            tail = mp.ncdf(-(a + s))
            value = first - mp.exp(s * a + s * s / 2) * tail
            lost = mp.log10(first / value) if value > 0 else mp.inf
            if lost < GUARD_DIGITS - 5 or extra > 4000:
                return +(factor * value), +(factor * tail), a, s
        extra = int(min(lost, 4000)) + 10 if mp.isfinite(lost) else max(2 * extra, 50)


# --------------------------------------------------------------- Gaussian
def _gaussian_profile(mu: float) -> Profile:
    def float_delta(eps):
        a = eps / mu - 0.5 * mu
        a_err = 4 * UNIT_ROUNDOFF * (eps / mu + 0.5 * mu + abs(a))
        return _hockey_float(a, mu, a_err, 0.0)

    def precise_delta(mp, eps):
        m = mp.mpf(mu)
        value, _, a, s = _hockey_precise(mp, lambda: (mp.mpf(eps) / m - m / 2, m, 1))
        return value, mp.ncdf(-(a + s))

    return Profile(float_delta, precise_delta)


def gaussian_delta(epsilon, mu: float, *, precise: bool = False, dps: int = DEFAULT_DPS):
    """Exact ``delta(epsilon)`` of ``mu``-GDP, i.e. of a (composed) Gaussian mechanism.

    ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (Balle & Wang 2018, Thm. 8).
    ``k`` runs of ``N(0, sigma^2)`` noise on a query of L2 sensitivity ``D`` give
    ``mu = sqrt(k) D / sigma``.

    Parameters
    ----------
    epsilon : float or array_like
        ``epsilon >= 0``.
    mu : float
        Gaussian-DP parameter ``> 0``.
    precise : bool, optional
        Evaluate with mpmath at ``dps`` digits and return ``mpmath.mpf``.
    dps : int, optional
        Decimal digits of the precise evaluation, in ``[15, 10000]``.

    Returns
    -------
    float, numpy.ndarray or mpmath.mpf
        Rounded to nearest; float results have relative error far below ``1e-10`` (bounded
        internally and checked against mpmath in the tests).

    Raises
    ------
    ValueError
        If an argument is out of range (``TypeError``: not a number).
    ImportError
        With ``precise=True``, if mpmath is not installed.
    """
    mu = check.positive_float("mu", mu)
    return profile_delta(_gaussian_profile(mu), epsilon, precise, dps)


def gaussian_epsilon(delta, mu: float, *, precise: bool = False, dps: int = DEFAULT_DPS):
    """Exact ``epsilon(delta)`` of ``mu``-GDP, rounded *up*.

    The smallest ``eps >= 0`` with ``delta(eps) <= delta``, solved to float (or ``dps``-digit)
    precision and certified, so the returned value is never below the exact one.

    Parameters
    ----------
    delta : float or array_like
        ``delta`` in ``[0, 1]``.
    mu : float
        Gaussian-DP parameter ``> 0``.
    precise : bool, optional
        Evaluate with mpmath at ``dps`` digits and return ``mpmath.mpf``.
    dps : int, optional
        Decimal digits of the precise evaluation, in ``[15, 10000]``.

    Returns
    -------
    float, numpy.ndarray or mpmath.mpf
        ``epsilon(delta)``, rounded up: the exact ``delta`` at it is at most ``delta``.
        ``inf`` for ``delta = 0``.

    Raises
    ------
    ValueError
        If an argument is out of range (``TypeError``: not a number).
    ImportError
        With ``precise=True``, if mpmath is not installed.
    """
    mu = check.positive_float("mu", mu)
    return profile_epsilon(_gaussian_profile(mu), delta, precise, dps)


# --------------------------------------------------- Poisson-sampled Gaussian
def _poisson_profile(sigma: float, sample_rate: float, sensitivity: float, direction: str):
    s_float = sensitivity / sigma
    q = sample_rate

    def remove_float(eps):
        if eps <= _LARGE_EPS:
            log_ratio = math.log1p(math.expm1(eps) / q)
        else:
            # e^eps overflows past ~709.78 (delta is still defined, and tiny): use
            # log(1 + (e^eps - 1)/q) = eps - log q + log1p(-(1 - q) e^-eps), a sum of terms of
            # one sign (-log q >= 0, the log1p term is above -1e-300), so the error bound
            # below still holds
            log_ratio = eps - math.log(q) + math.log1p(-(1.0 - q) * math.exp(-eps))
        a = log_ratio / s_float - 0.5 * s_float
        a_err = 8 * UNIT_ROUNDOFF * (abs(log_ratio) / s_float + 1 / s_float + s_float + abs(a))
        value, error = _hockey_float(a, s_float, a_err, 2 * UNIT_ROUNDOFF * s_float)
        return q * value, q * error + 2 * UNIT_ROUNDOFF * q * value + 8 * TINY

    def add_float(eps):
        if q == 1.0 and eps > _LARGE_EPS:
            # the add pair at q = 1 is the remove pair mirrored, (N(D), N(0)) vs (N(0), N(D)),
            # with the same delta; its own form multiplies by e^eps, which overflows here
            return remove_float(eps)
        # 1 + y with y = (e^-eps - 1)/q in (-1, 0]: log1p near 0, the direct difference near -1
        # q (1 + y) = q + expm1(-eps) = e^-eps - (1 - q): take the form with the smaller terms
        y = math.expm1(-eps) / q
        small, large = q + abs(math.expm1(-eps)), math.exp(-eps) + (1.0 - q)
        numerator = q + math.expm1(-eps) if small <= large else math.exp(-eps) - (1.0 - q)
        numerator_err = 4 * UNIT_ROUNDOFF * min(small, large)
        if numerator < -numerator_err:  # beyond the edge eps = -log(1 - q): delta is 0
            return 0.0, 0.0
        if numerator <= 0:  # at the edge up to rounding: delta <= e^eps |numerator|
            return 0.0, math.exp(eps) * numerator_err + 8 * TINY
        one_plus_y = numerator / q
        scale_err = 4 * UNIT_ROUNDOFF * (1 + min(small, large) / numerator)
        log_ratio = math.log1p(y) if y > -0.5 else math.log(one_plus_y)
        a = -log_ratio / s_float - 0.5 * s_float
        a_err = (
            8 * UNIT_ROUNDOFF * (abs(log_ratio) / s_float + s_float + abs(a))
            + scale_err / s_float
        )
        value, error = _hockey_float(a, s_float, a_err, 2 * UNIT_ROUNDOFF * s_float)
        factor = math.exp(eps) * q * one_plus_y  # e^eps (q + e^-eps - 1)
        error = factor * (error + value * (scale_err + 4 * UNIT_ROUNDOFF * (1 + eps)))
        return factor * value, error + 8 * TINY

    def float_delta(eps):
        if direction == "remove":
            return remove_float(eps)
        if direction == "add":
            return add_float(eps)
        (v1, r1), (v2, r2) = remove_float(eps), add_float(eps)
        value = max(v1, v2)
        return value, max(v1 + r1, v2 + r2) - value

    def remove_precise(mp, eps):
        def inputs():
            s, qq, e = mp.mpf(sensitivity) / mp.mpf(sigma), mp.mpf(q), mp.mpf(eps)
            return mp.log1p(mp.expm1(e) / qq) / s - s / 2, s, qq

        value, tail, _, _ = _hockey_precise(mp, inputs)
        return value, tail / q  # Q-tail is Phi(-(a+s)) without the factor q

    def add_precise(mp, eps):
        qq, e = mp.mpf(q), mp.mpf(eps)
        if qq + mp.expm1(-e) <= 0:
            return mp.zero, mp.zero

        def inputs():
            s, qq, e = mp.mpf(sensitivity) / mp.mpf(sigma), mp.mpf(q), mp.mpf(eps)
            return -mp.log1p(mp.expm1(-e) / qq) / s - s / 2, s, mp.exp(e) * (qq + mp.expm1(-e))

        value, _, a, s = _hockey_precise(mp, inputs)
        # Q' = (1-q) N(0) + q N(D): Q'(L' > eps) = (1-q) Phi(-a) + q Phi(-(a+s))
        slope = (1 - qq) * mp.ncdf(-a) + qq * mp.ncdf(-(a + s))
        return value, slope

    def precise_delta(mp, eps):
        if direction == "remove":
            return remove_precise(mp, eps)
        if direction == "add":
            return add_precise(mp, eps)
        r, a = remove_precise(mp, eps), add_precise(mp, eps)
        return r if r[0] >= a[0] else a

    # the add loss is below -log(1 - q); a margin keeps the edge outside rounding
    add = direction == "add" and q < 1
    max_loss = -math.log1p(-q) * (1 + 64 * UNIT_ROUNDOFF) if add else math.inf
    return Profile(float_delta, precise_delta, max_loss=max_loss)


def _poisson_args(sigma, sample_rate, sensitivity, direction):
    sigma = check.positive_float("sigma", sigma)
    sample_rate = check.probability("sample_rate", sample_rate, open_low=True)
    sensitivity = check.positive_float("sensitivity", sensitivity)
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    return _poisson_profile(sigma, sample_rate, sensitivity, direction)


def poisson_gaussian_delta(
    epsilon,
    sigma: float,
    sample_rate: float,
    sensitivity: float = 1.0,
    *,
    direction: str = "max",
    precise: bool = False,
    dps: int = DEFAULT_DPS,
):
    """Exact ``delta(epsilon)`` of *one* Poisson-sampled Gaussian step.

    Remove pair ``P = (1-q) N(0, sigma^2) + q N(D, sigma^2)`` vs ``Q = N(0, sigma^2)``; the add
    pair is ``(Q, P)``. With ``s = D / sigma`` and ``H(a, s) = Phi(-a) - e^(s a + s^2/2)
    Phi(-a-s)``: remove ``q H(log(1 + (e^eps - 1)/q)/s - s/2, s)``; add
    ``e^eps (q + e^-eps - 1) H(-log(1 + (e^-eps - 1)/q)/s - s/2, s)`` for ``eps < -log(1-q)``
    and 0 beyond (Zhu, Dong & Wang 2022, Thm. 11).

    Parameters
    ----------
    epsilon : float or array_like
        ``epsilon >= 0``.
    sigma : float
        The noise's standard deviation ``> 0``.
    sample_rate : float
        The Poisson rate ``q`` in ``(0, 1]``.
    sensitivity : float, optional
        The query's L2 sensitivity ``D > 0``.
    direction : str, optional
        ``"remove"``, ``"add"`` or ``"max"`` (the worse of the two).
    precise : bool, optional
        Evaluate with mpmath at ``dps`` digits and return ``mpmath.mpf``.
    dps : int, optional
        Decimal digits of the precise evaluation, in ``[15, 10000]``.

    Returns
    -------
    float, numpy.ndarray or mpmath.mpf
        ``delta(epsilon)``, rounded to nearest (an array for an array ``epsilon``).

    Raises
    ------
    ValueError
        If an argument is out of range (``TypeError``: not a number).
    ImportError
        With ``precise=True``, if mpmath is not installed.
    """
    profile = _poisson_args(sigma, sample_rate, sensitivity, direction)
    return profile_delta(profile, epsilon, precise, dps)


def poisson_gaussian_epsilon(
    delta,
    sigma: float,
    sample_rate: float,
    sensitivity: float = 1.0,
    *,
    direction: str = "max",
    precise: bool = False,
    dps: int = DEFAULT_DPS,
):
    """Exact ``epsilon(delta)`` of one Poisson-sampled Gaussian step, rounded up.

    The pair is that of :func:`poisson_gaussian_delta`, the rounding that of
    :func:`gaussian_epsilon`.

    Parameters
    ----------
    delta : float or array_like
        ``delta`` in ``[0, 1]``.
    sigma : float
        The noise's standard deviation ``> 0``.
    sample_rate : float
        The Poisson rate ``q`` in ``(0, 1]``.
    sensitivity : float, optional
        The query's L2 sensitivity ``D > 0``.
    direction : str, optional
        ``"remove"``, ``"add"`` or ``"max"`` (the worse of the two).
    precise : bool, optional
        Evaluate with mpmath at ``dps`` digits and return ``mpmath.mpf``.
    dps : int, optional
        Decimal digits of the precise evaluation, in ``[15, 10000]``.

    Returns
    -------
    float, numpy.ndarray or mpmath.mpf
        ``epsilon(delta)``, rounded up: the exact ``delta`` at it is at most ``delta``.

    Raises
    ------
    ValueError
        If an argument is out of range (``TypeError``: not a number).
    ImportError
        With ``precise=True``, if mpmath is not installed.
    """
    profile = _poisson_args(sigma, sample_rate, sensitivity, direction)
    return profile_epsilon(profile, delta, precise, dps)


# ---------------------------------------------------------------- tradeoff
def gaussian_tradeoff(alpha, mu: float, *, precise: bool = False, dps: int = DEFAULT_DPS):
    """Tradeoff function of ``mu``-GDP: ``beta(alpha) = Phi(Phi^-1(1 - alpha) - mu)``.

    The smallest type-II error of a test with type-I error ``alpha`` (Dong, Roth & Su 2019,
    Def. 2.7).

    Parameters
    ----------
    alpha : float or array_like
        Type-I error(s) in ``[0, 1]``.
    mu : float
        Gaussian-DP parameter ``> 0``.
    precise : bool, optional
        Evaluate with mpmath at ``dps`` digits and return ``mpmath.mpf``.
    dps : int, optional
        Decimal digits of the precise evaluation, in ``[15, 10000]``.

    Returns
    -------
    float, numpy.ndarray or mpmath.mpf
        ``beta(alpha)``, rounded to nearest.

    Raises
    ------
    ValueError
        If an argument is out of range (``TypeError``: not a number).
    ImportError
        With ``precise=True``, if mpmath is not installed.
    """
    mu = check.positive_float("mu", mu)
    dps = check_dps(dps)

    if not precise:
        a = check.array_in("alpha", alpha, 0.0, 1.0)
        beta = ndtr(-ndtri(a) - mu)
        return float(beta) if np.ndim(alpha) == 0 else beta

    def one(alpha):
        alpha = check.probability("alpha", alpha)
        mp = load_mpmath()
        with mp.workdps(dps + GUARD_DIGITS):
            if alpha in (0.0, 1.0):
                return mp.mpf(1 - alpha)
            # z with Phi(-z) = alpha by Newton from the float quantile
            target, z = mp.mpf(alpha), mp.mpf(float(-ndtri(alpha)))
            for _ in range(100):
                step = (mp.ncdf(-z) - target) / mp.npdf(z)
                z += step
                if abs(step) < mp.mpf(10) ** (-(dps + GUARD_DIGITS - 5)) * (1 + abs(z)):
                    break
            value = mp.ncdf(z - mu)
        return round_nearest(mp, value, dps)

    return map_scalar(one, alpha, precise)
