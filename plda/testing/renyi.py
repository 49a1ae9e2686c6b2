"""Closed-form Rényi divergences ``D_alpha(P || Q) = log E_Q[(dP/dQ)^alpha] / (alpha - 1)``.

Of the Gaussian, the Laplace and the Poisson-sampled Gaussian mechanisms (Mironov 2017; Mironov,
Talwar & Zhang 2019), each in float64 or, with ``precise=True``, in mpmath.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from plda._internal import validation as check
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
    order, sigma: float, sensitivity: float = 1.0, *, precise: bool = False,
    dps: int = DEFAULT_DPS,
):
    """``D_alpha`` of the Gaussian mechanism: ``alpha sensitivity^2 / (2 sigma^2)``.

    ``N(D, sigma^2)`` against ``N(0, sigma^2)``, for any ``order = alpha > 0`` (Mironov 2017,
    Prop. 7).

    Parameters
    ----------
    order : float or array_like
        ``alpha > 0``.
    sigma : float
        The noise's standard deviation ``> 0``.
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
    sensitivity = check.positive_float("sensitivity", sensitivity)
    return _evaluate(
        lambda a: a * sensitivity**2 / (2 * sigma**2),
        lambda mp, a: mp.mpf(a) * mp.mpf(sensitivity) ** 2 / (2 * mp.mpf(sigma) ** 2),
        order, precise, dps, lambda a: _order(a, 0.0, open_low=True),
    )


def laplace_renyi(
    order, scale: float, sensitivity: float = 1.0, *, precise: bool = False,
    dps: int = DEFAULT_DPS,
):
    """``D_alpha`` of the Laplace mechanism for ``order = alpha >= 1``.

    ``log(a/(2a-1) e^{(a-1)t} + (a-1)/(2a-1) e^{-a t}) / (a-1)`` with ``t = sensitivity/scale``,
    the KL divergence ``t + e^-t - 1`` at ``alpha = 1`` (Mironov 2017, Table II).

    Parameters
    ----------
    order : float or array_like
        ``alpha >= 1``.
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
        inner = a / (2 * a - 1) * mp.exp((a - 1) * tt) + (a - 1) / (2 * a - 1) * mp.exp(-a * tt)
        return mp.log(inner) / (a - 1)

    return _evaluate(float_fn, precise_fn, order, precise, dps, lambda a: _order(a, 1.0))


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
