"""Exact reference for one run of the Laplace mechanism.

With ``eps0 = sensitivity / scale`` the pair ``Lap(0, b)`` vs ``Lap(D, b)`` has
``delta(eps) = 1 - e^((eps - eps0)/2)`` for ``0 <= eps < eps0`` and 0 beyond (integrate
``(p - e^eps q)_+`` over the three pieces of the line; e.g. Koskela et al. 2021, Sec. 5).
"""

from __future__ import annotations

import math

from plda._internal import validation as check
from plda._internal.floats import UNIT_ROUNDOFF
from plda.testing._internal.numerics import (
    DEFAULT_DPS,
    TINY,
    Profile,
    profile_delta,
    profile_epsilon,
)


def _profile(scale, sensitivity) -> Profile:
    scale = check.positive_float("scale", scale)
    sensitivity = check.positive_float("sensitivity", sensitivity)
    epsilon0 = sensitivity / scale

    def float_delta(eps):
        x = 0.5 * (eps - epsilon0)
        x_err = 2 * UNIT_ROUNDOFF * (abs(eps) + 2 * epsilon0)
        if x >= 0:
            return 0.0, max(x_err - x, 0.0)
        value = -math.expm1(x)
        # |d(1 - e^x)| <= e^x |dx|
        return value, x_err + 2 * UNIT_ROUNDOFF * value + TINY

    def precise_delta(mp, eps):
        e0 = mp.mpf(sensitivity) / mp.mpf(scale)
        if eps >= e0:
            return mp.zero, mp.zero
        return -mp.expm1((eps - e0) / 2), mp.exp(-(e0 + eps) / 2) / 2

    return Profile(float_delta, precise_delta, max_loss=epsilon0 * (1 + 64 * UNIT_ROUNDOFF))


def laplace_delta(
    epsilon, scale: float, sensitivity: float = 1.0, *, precise: bool = False,
    dps: int = DEFAULT_DPS,
):
    """Exact ``delta(epsilon)`` of one Laplace run.

    ``1 - e^((eps - eps0)/2)`` for ``eps < eps0 = sensitivity / scale``, else 0 (e.g. Koskela
    et al. 2021, Sec. 5). The mechanism is symmetric (add = remove).

    Parameters
    ----------
    epsilon : float or array_like
        ``epsilon >= 0``.
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
        ``delta(epsilon)``, rounded to nearest (an array for an array ``epsilon``).

    Raises
    ------
    ValueError
        If an argument is out of range (``TypeError``: not a number).
    ImportError
        With ``precise=True``, if mpmath is not installed.
    """
    return profile_delta(_profile(scale, sensitivity), epsilon, precise, dps)


def laplace_epsilon(
    delta, scale: float, sensitivity: float = 1.0, *, precise: bool = False,
    dps: int = DEFAULT_DPS,
):
    """Exact ``epsilon(delta) = max(0, eps0 + 2 log(1 - delta))`` of one Laplace run, rounded up.

    Parameters
    ----------
    delta : float or array_like
        ``delta`` in ``[0, 1]``.
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
        ``epsilon(delta)``, rounded up: the exact ``delta`` at it is at most ``delta``.

    Raises
    ------
    ValueError
        If an argument is out of range (``TypeError``: not a number).
    ImportError
        With ``precise=True``, if mpmath is not installed.
    """
    return profile_epsilon(_profile(scale, sensitivity), delta, precise, dps)
