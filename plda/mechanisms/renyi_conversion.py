"""Rényi-DP and zCDP bounds converted to ``(epsilon, delta)`` guarantees, every delta rounded
up (Canonne, Kamath & Steinke 2020, Prop. 12): the privacy profiles that :class:`~plda.ZCDP` and
:class:`~plda.RenyiDP` are accounted through, and the conversion of a whole zCDP composition."""

from __future__ import annotations

import math

import numpy as np

from plda._internal.floats import TINY  # a converted delta that underflows is reported as this

#: points of the epsilon grid a zCDP or Rényi guarantee is converted at
PROFILE_POINTS = 2048
#: the smallest delta the converted profile resolves: beyond the epsilon where the conversion
#: gives it, the rest is charged to the infinite loss
DELTA_FLOOR = 1e-300
#: relative amount every converted delta is rounded up by (the float error of the formula is
#: below 1e-12 relative)
ROUND_UP = 1e-9
#: the orders a zCDP guarantee is converted through: 1 + 10^-6 ... 1 + 10^6
ZCDP_ORDERS = 1.0 + np.logspace(-6, 6, 1201)


def log_delta_from_renyi(alpha, renyi_epsilons, epsilon):
    """``log delta`` that the Rényi bound ``D_alpha <= eps_alpha`` certifies at ``epsilon``.

    ``(alpha - 1)(eps_alpha - eps) + (alpha - 1) log(1 - 1/alpha) - log alpha`` (Canonne,
    Kamath & Steinke 2020, Prop. 12), per order; the arguments broadcast. The one place the
    formula is written: :func:`renyi_delta`, the zCDP conversion and
    :func:`plda.conversions.renyi.delta_from_renyi` take the minimum over the orders.

    Parameters
    ----------
    alpha : array_like of float
        Orders, each above 1.
    renyi_epsilons : array_like of float
        ``eps_alpha``.
    epsilon : array_like of float
        Where delta is read.

    Returns
    -------
    numpy.ndarray
        ``log delta`` per order and epsilon (broadcast shape).
    """
    alpha = np.asarray(alpha, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return (alpha - 1) * (np.asarray(renyi_epsilons) - epsilon) + (
            (alpha - 1) * np.log1p(-1 / alpha) - np.log(alpha))


def epsilon_from_log_delta(alpha, renyi_epsilons, log_delta):
    """``epsilon`` that the Rényi bound ``D_alpha <= eps_alpha`` certifies at ``log delta``.

    ``eps_alpha + log(1 - 1/alpha) - (log delta + log alpha) / (alpha - 1)``, the inverse of
    :func:`log_delta_from_renyi` (same reference), per order; the arguments broadcast.

    Parameters
    ----------
    alpha : array_like of float
        Orders, each above 1.
    renyi_epsilons : array_like of float
        ``eps_alpha``.
    log_delta : array_like of float
        ``log delta`` where epsilon is read.

    Returns
    -------
    numpy.ndarray
        ``epsilon`` per order and delta (broadcast shape), not yet floored at 0.
    """
    alpha = np.asarray(alpha, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        penalty = np.log1p(-1 / alpha) - np.log(alpha) / (alpha - 1)
        return np.asarray(renyi_epsilons) + penalty - log_delta / (alpha - 1)


def renyi_delta(orders, renyi_epsilons, epsilon):
    """``delta(eps)`` certified by Rényi bounds ``D_alpha <= eps_alpha``, rounded up.

    ``min_alpha exp((alpha - 1)(eps_alpha - eps)) (1 - 1/alpha)^(alpha - 1) / alpha``, at most
    1 (Canonne, Kamath & Steinke 2020, Prop. 12; Asoodeh et al. 2021), times ``1 + ROUND_UP``.

    Parameters
    ----------
    orders : array_like of float
        Orders ``alpha > 1``.
    renyi_epsilons : array_like of float
        ``eps_alpha >= 0``, one per order.
    epsilon : array_like of float
        Where delta is read.

    Returns
    -------
    numpy.ndarray
        ``delta``, one per epsilon.
    """
    alpha = np.asarray(orders, dtype=float)[None, :]
    rdp = np.asarray(renyi_epsilons, dtype=float)[None, :]
    eps = np.atleast_1d(np.asarray(epsilon, dtype=float))[:, None]
    log_delta = log_delta_from_renyi(alpha, rdp, eps)
    # a delta above 1 is 1: its exponent capped at 0 first (e^log overflowed past 709)
    delta = np.exp(np.minimum(np.min(log_delta, axis=1), 0.0)) * (1 + ROUND_UP)
    return np.minimum(delta, 1.0)


def renyi_epsilon(orders, renyi_epsilons, delta: float) -> float:
    """The smallest ``eps`` whose converted ``delta`` is at most ``delta`` (before rounding).

    ``min_alpha eps_alpha + log(1 - 1/alpha) - (log delta + log alpha) / (alpha - 1)``, at
    least 0 (the inverse of :func:`renyi_delta`, same references).

    Parameters
    ----------
    orders : array_like of float
        Orders ``alpha > 1``.
    renyi_epsilons : array_like of float
        ``eps_alpha >= 0``, one per order.
    delta : float
        In ``(0, 1]``.

    Returns
    -------
    float
        Epsilon.
    """
    eps = epsilon_from_log_delta(orders, np.asarray(renyi_epsilons, dtype=float),
                                 math.log(delta))
    return max(float(np.min(eps)), 0.0)


def converted_profile(orders, renyi_epsilons) -> tuple[np.ndarray, np.ndarray]:
    """A privacy profile certified by Rényi bounds, on a grid of ``PROFILE_POINTS`` epsilons.

    The grid runs evenly from where the converted ``delta`` drops below 1 to where it reaches
    ``DELTA_FLOOR``; each ``delta`` is :func:`renyi_delta`'s (rounded up), so every point is a
    valid ``(eps, delta)`` guarantee.

    Parameters
    ----------
    orders : array_like of float
        Orders ``alpha > 1``.
    renyi_epsilons : array_like of float
        ``eps_alpha >= 0``, one per order.

    Returns
    -------
    tuple of numpy.ndarray
        ``(epsilons, deltas)``, epsilons increasing, deltas non-increasing.
    """
    low = renyi_epsilon(orders, renyi_epsilons, 1.0)
    high = max(renyi_epsilon(orders, renyi_epsilons, DELTA_FLOOR), low * (1 + 1e-12) + 1e-300)
    eps = np.linspace(low, high, PROFILE_POINTS)
    delta = np.empty_like(eps)
    for start in range(0, eps.size, 256):  # orders x epsilons in blocks
        delta[start:start + 256] = renyi_delta(orders, renyi_epsilons, eps[start:start + 256])
    return eps, np.minimum.accumulate(delta)


def _refined_orders(score) -> np.ndarray:
    """Orders per query: the coarse ``ZCDP_ORDERS`` plus 65 between the best one's neighbours
    (``score(alpha)`` maps orders shaped ``(n, m)`` to values to minimize; any order is valid,
    so refining only tightens)."""
    coarse = np.broadcast_to(ZCDP_ORDERS, (score.n, ZCDP_ORDERS.size))
    best = np.argmin(score(coarse), axis=1)
    lo = ZCDP_ORDERS[np.maximum(best - 1, 0)][:, None]
    hi = ZCDP_ORDERS[np.minimum(best + 1, ZCDP_ORDERS.size - 1)][:, None]
    return np.concatenate([coarse, lo + (hi - lo) * np.linspace(0, 1, 65)[None, :]], axis=1)


class _Score:
    """``log delta`` (``kind="delta"``) or ``eps`` (``kind="epsilon"``) of the zCDP conversion
    at orders ``alpha`` (shaped ``(n, m)``), for ``n`` queries."""

    def __init__(self, rho: float, values: np.ndarray, kind: str):
        self.rho, self.values, self.kind, self.n = rho, values[:, None], kind, values.size

    def __call__(self, alpha: np.ndarray) -> np.ndarray:
        # rho-zCDP is D_alpha <= rho alpha at every order
        if self.kind == "delta":
            return log_delta_from_renyi(alpha, self.rho * alpha, self.values)
        with np.errstate(divide="ignore"):
            log_values = np.log(self.values)
        return epsilon_from_log_delta(alpha, self.rho * alpha, log_values)


def zcdp_delta(rho: float, epsilon) -> np.ndarray:
    """``delta(eps)`` certified by ``rho``-zCDP, rounded up.

    Canonne, Kamath & Steinke 2020, Prop. 12, as :func:`renyi_delta` with ``eps_alpha = rho
    alpha``, at the best of ``ZCDP_ORDERS`` refined around the best.

    Parameters
    ----------
    rho : float
        ``>= 0``.
    epsilon : array_like of float
        Where delta is read, ``>= 0`` (``inf`` gives 0).

    Returns
    -------
    numpy.ndarray
        ``delta``, shaped like ``epsilon``; 0 everywhere for ``rho = 0``.
    """
    eps = np.asarray(epsilon, dtype=float)
    if rho == 0:
        return np.zeros(eps.shape)
    flat = eps.ravel()
    score = _Score(rho, np.where(np.isinf(flat), 0.0, flat), "delta")
    log_delta = np.min(score(_refined_orders(score)), axis=1)
    # rounded up, and never to 0 by underflow (the smallest float is above the true delta)
    # (its exponent capped at 0 first: a delta above 1 is 1, and at a large rho, e.g. the cap
    # of a Gaussian-DP step of mu 1e8, e^log overflowed with a RuntimeWarning)
    delta = np.clip(np.exp(np.minimum(log_delta, 0.0)) * (1 + ROUND_UP), TINY, 1.0)
    return np.where(np.isinf(flat), 0.0, delta).reshape(eps.shape)


def zcdp_epsilon(rho: float, delta) -> np.ndarray:
    """``epsilon(delta)`` certified by ``rho``-zCDP, rounded up.

    The inverse of :func:`zcdp_delta`: ``min_alpha rho alpha + log(1 - 1/alpha) - (log delta +
    log alpha) / (alpha - 1)``, at least 0, times ``1 + ROUND_UP``.

    Parameters
    ----------
    rho : float
        ``>= 0``.
    delta : array_like of float
        In ``[0, 1]``.

    Returns
    -------
    numpy.ndarray
        ``epsilon``, shaped like ``delta``: ``inf`` at ``delta = 0`` (unless ``rho = 0``).
    """
    d = np.asarray(delta, dtype=float)
    if rho == 0:
        return np.zeros(d.shape)
    score = _Score(rho, d.ravel(), "epsilon")
    best = np.maximum(np.min(score(_refined_orders(score)), axis=1), 0.0)
    return (best * (1 + ROUND_UP)).reshape(d.shape)
