"""Closed-form Rényi divergences ``D_alpha(P || Q) = log E_Q[(dP/dQ)^alpha] / (alpha - 1)``.

Of the Gaussian, the Laplace and the Poisson-sampled Gaussian mechanisms (Mironov 2017; Mironov,
Talwar & Zhang 2019), each in float64 or, with ``precise=True``, in mpmath.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from plda._internal import validation as check
from plda._internal.deprecation import warn_moved
from plda.testing._internal.numerics import (
    DEFAULT_DPS,
    GUARD_DIGITS,
    check_dps,
    load_mpmath,
    map_scalar,
    round_nearest,
)


def _order(value, minimum: float, integer: bool = False, open_low: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"order must be a real number, got {type(value).__name__}")
    order = float(value)
    low_ok = order > minimum if open_low else order >= minimum
    if not (low_ok and math.isfinite(order)) or (integer and not order.is_integer()):
        kind = "an integer" if integer else "a finite number"
        bracket = "(" if open_low else "["
        raise ValueError(f"order must be {kind} in {bracket}{minimum:g}, inf), got {value!r}")
    return order


def _evaluate(float_fn, precise_fn, order, precise: bool, dps: int, check_order):
    dps = check_dps(dps)

    def one(alpha):
        alpha = check_order(alpha)
        if not precise:
            return float_fn(alpha)
        mp = load_mpmath()
        with mp.workdps(dps + GUARD_DIGITS):
            value = precise_fn(mp, alpha)
        return round_nearest(mp, value, dps)

    return map_scalar(one, order, precise)


def gaussian_renyi(
    order, sigma: float | None = None, sensitivity: float | None = None, *,
    mu: float | None = None, precise: bool = False, dps: int = DEFAULT_DPS,
):
    """``D_alpha`` of the Gaussian mechanism of ``mu``-GDP: ``alpha mu^2 / 2``.

    ``N(mu, 1)`` against ``N(0, 1)``, for any ``order = alpha > 0`` (Mironov 2017, Prop. 7);
    ``mu = sensitivity / sigma`` (``sqrt(k) sensitivity / sigma`` for ``k`` runs), the
    parameter of :func:`gaussian_delta`, :func:`gaussian_epsilon` and
    :func:`gaussian_tradeoff`.

    Parameters
    ----------
    order : float or array_like
        ``alpha`` in ``(0, inf)``.
    sigma, sensitivity : float, optional
        Deprecated (removed in plda 0.2.0): the former ``gaussian_renyi(order, sigma,
        sensitivity=1)``, ``alpha sensitivity^2 / (2 sigma^2)``; pass ``mu=sensitivity /
        sigma``.
    mu : float
        ``mu > 0`` (keyword: a second positional argument is the former ``sigma``).
    precise : bool, optional
        Evaluate with mpmath at ``dps`` digits and return ``mpmath.mpf``.
    dps : int, optional
        Decimal digits of the precise evaluation, in ``[15, 10000]``.

    Returns
    -------
    float, numpy.ndarray or mpmath.mpf
        ``D_alpha``, rounded to nearest (an array for an array ``order``).

    Raises
    ------
    ValueError
        If an argument is out of range.
    TypeError
        If an argument is not a number, ``mu`` is missing, or ``mu`` is given with ``sigma``.
    ImportError
        With ``precise=True``, if mpmath is not installed.

    Warns
    -----
    DeprecationWarning
        For the former form (``sigma``, ``sensitivity``).
    """
    if sigma is None and sensitivity is None:
        if mu is None:
            raise TypeError("gaussian_renyi() needs mu (keyword), the Gaussian's mu-GDP parameter")
        mu = check.positive_float("mu", mu)
        return _evaluate(
            lambda a: a * mu**2 / 2,
            lambda mp, a: mp.mpf(a) * mp.mpf(mu) ** 2 / 2,
            order, precise, dps, lambda a: _order(a, 0.0, open_low=True),
        )
    if mu is not None:
        raise TypeError("gaussian_renyi() takes mu, or the deprecated sigma and sensitivity, "
                        "not both")
    warn_moved("plda.testing.gaussian_renyi(order, sigma, sensitivity)",
               "plda.testing.gaussian_renyi(order, mu=sensitivity / sigma)")
    sigma = check.positive_float("sigma", sigma)
    sensitivity = check.positive_float("sensitivity", 1.0 if sensitivity is None else sensitivity)
    return _evaluate(
        lambda a: a * sensitivity**2 / (2 * sigma**2),
        lambda mp, a: mp.mpf(a) * mp.mpf(sensitivity) ** 2 / (2 * mp.mpf(sigma) ** 2),
        order, precise, dps, lambda a: _order(a, 0.0, open_low=True),
    )


def laplace_renyi(
    order, scale: float, sensitivity: float = 1.0, *, precise: bool = False,
    dps: int = DEFAULT_DPS,
):
    """``D_alpha`` of the Laplace mechanism, for any ``order = alpha > 0``.

    ``log(a/(2a-1) e^{(a-1)t} + (a-1)/(2a-1) e^{-a t}) / (a-1)`` with ``t = sensitivity/scale``,
    the KL divergence ``t + e^-t - 1`` at ``alpha = 1`` (Mironov 2017, Table II, stated there
    for ``alpha > 1``; the integral is the same for ``0 < alpha < 1``, where it is evaluated as
    ``e^{-a t} (1 + a t (e^u - 1)/u)`` with ``u = (2a-1) t``, continuous at ``alpha = 1/2``).

    Parameters
    ----------
    order : float or array_like
        ``alpha`` in ``(0, inf)``.
    scale : float
        The Laplace scale ``b > 0``.
    sensitivity : float, optional
        The query's L1 sensitivity ``> 0``.
    precise : bool, optional
        Evaluate with mpmath at ``dps`` digits and return ``mpmath.mpf``.
    dps : int, optional
        Decimal digits of the precise evaluation, in ``[15, 10000]``.

    Returns
    -------
    float, numpy.ndarray or mpmath.mpf
        ``D_alpha``, rounded to nearest (an array for an array ``order``).

    Raises
    ------
    ValueError
        If an argument is out of range (``TypeError``: not a number).
    ImportError
        With ``precise=True``, if mpmath is not installed.
    """
    scale = check.positive_float("scale", scale)
    sensitivity = check.positive_float("sensitivity", sensitivity)
    t = sensitivity / scale

    def float_fn(a):
        if a == 1:
            return t + math.expm1(-t)
        if a < 1:
            return _laplace_below_one(a, t)
        # log of the sum, factored so that nothing overflows: e^{(a-1)t} a/(2a-1) (1 + ...)
        log_sum = (
            -math.log1p((a - 1) / a) + (a - 1) * t
            + math.log1p((a - 1) / a * math.exp(-(2 * a - 1) * t))
        )
        return log_sum / (a - 1)

    def precise_fn(mp, a):
        a, tt = mp.mpf(a), mp.mpf(sensitivity) / mp.mpf(scale)
        if a == 1:
            return tt + mp.expm1(-tt)
        if a < 1:  # 1 + a t (e^u - 1)/u, u = (2a - 1) t: no division by 2a - 1
            u = (2 * a - 1) * tt
            growth = mp.expm1(u) / u if u != 0 else mp.mpf(1)
            return (-a * tt + mp.log1p(a * tt * growth)) / (a - 1)
        inner = a / (2 * a - 1) * mp.exp((a - 1) * tt) + (a - 1) / (2 * a - 1) * mp.exp(-a * tt)
        return mp.log(inner) / (a - 1)

    return _evaluate(
        float_fn, precise_fn, order, precise, dps, lambda a: _order(a, 0.0, open_low=True)
    )


def _laplace_below_one(a: float, t: float) -> float:
    """``D_a`` of the Laplace pair at ``0 < a < 1``: ``log E = -a t + log(1 + a t g(u))`` with
    ``g(u) = (e^u - 1)/u``, ``u = (2a - 1) t`` (``g(0) = 1``), in logs when ``e^u`` overflows."""
    u = (2 * a - 1) * t
    if u > 0:  # log(a t g(u)) = log(a t) + u + log(1 - e^-u) - log(u)
        log_x = math.log(a * t) + u + math.log(-math.expm1(-u)) - math.log(u)
        log_sum = float(np.logaddexp(0.0, log_x))
    else:
        log_sum = math.log1p(a * t * (math.expm1(u) / u if u != 0 else 1.0))
    return (-a * t + log_sum) / (a - 1)


def poisson_gaussian_renyi(
    order, sigma: float, sample_rate: float, sensitivity: float = 1.0, *,
    precise: bool = False, dps: int = DEFAULT_DPS,
):
    """``D_alpha`` of one Poisson-sampled Gaussian step at integer ``order = alpha >= 2``.

    By the exact binomial expansion for the remove pair ``(1-q) N(0) + q N(D)`` against
    ``N(0)``, ``log(1 + sum_{j>=2} C(a,j) (1-q)^(a-j) q^j (e^{j(j-1) c} - 1)) / (a - 1)`` with
    ``c = sensitivity^2 / (2 sigma^2)`` (Mironov, Talwar & Zhang 2019, Sec. 3.3); it dominates
    the add direction at every integer order (ibid., Thm. 5), so it is the step's RDP.

    Parameters
    ----------
    order : int or array_like
        Integer ``alpha >= 2``.
    sigma : float
        The noise's standard deviation ``> 0``.
    sample_rate : float
        The Poisson rate ``q`` in ``(0, 1]``.
    sensitivity : float, optional
        The query's L2 sensitivity ``> 0``.
    precise : bool, optional
        Evaluate with mpmath at ``dps`` digits and return ``mpmath.mpf``.
    dps : int, optional
        Decimal digits of the precise evaluation, in ``[15, 10000]``.

    Returns
    -------
    float, numpy.ndarray or mpmath.mpf
        ``D_alpha``, rounded to nearest (an array for an array ``order``).

    Raises
    ------
    ValueError
        If an argument is out of range (``TypeError``: not a number).
    ImportError
        With ``precise=True``, if mpmath is not installed.
    """
    sigma = check.positive_float("sigma", sigma)
    q = check.probability("sample_rate", sample_rate, open_low=True)
    sensitivity = check.positive_float("sensitivity", sensitivity)
    c = sensitivity**2 / (2 * sigma**2)

    def float_fn(a):
        n = int(a)
        if q == 1:
            return a * c
        j = np.arange(2, n + 1)
        log_binomial = np.array([math.log(math.comb(n, k)) for k in j])
        growth = j * (j - 1) * c
        log_terms = (
            log_binomial + (n - j) * math.log1p(-q) + j * math.log(q)
            + growth + np.log(-np.expm1(-growth))  # log(e^g - 1)
        )
        top = float(np.max(log_terms))
        log_total = top + math.log(float(np.sum(np.exp(log_terms - top))))
        return float(np.logaddexp(0.0, log_total)) / (a - 1)

    def precise_fn(mp, a):
        n = int(a)
        qq, cc = mp.mpf(q), mp.mpf(sensitivity) ** 2 / (2 * mp.mpf(sigma) ** 2)
        total = mp.fsum(
            mp.binomial(n, k) * (1 - qq) ** (n - k) * qq**k * mp.expm1(k * (k - 1) * cc)
            for k in range(2, n + 1)
        )
        return mp.log1p(total) / (n - 1)

    return _evaluate(
        float_fn, precise_fn, order, precise, dps, lambda a: _order(a, 2.0, integer=True)
    )
