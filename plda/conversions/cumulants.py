"""Closed-form Rényi cumulants of single steps, with certified lower and upper bounds.

``K(alpha) = log E_P[e^{(alpha-1) L}]`` is ``(alpha - 1)`` times the Rényi divergence of order
``alpha`` (Mironov 2017).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from plda._internal.floats import UNIT_ROUNDOFF


def log_sum_exp(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """``log(sum(exp(values)))`` along an axis, without overflow.

    Parameters
    ----------
    values : numpy.ndarray
        Logs of the terms (``-inf`` entries allowed).
    axis : int, optional
        The axis summed over.

    Returns
    -------
    numpy.ndarray
        The log of the sums.
    """
    top = np.max(values, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(values - top), axis=axis)) + np.squeeze(top, axis=axis)
    return out


#: entries of one (orders x atoms) block in :func:`log_atom_sum` (32 MB of float64)
_BLOCK_ENTRIES = 1 << 22


@dataclass(frozen=True)
class Cumulant:
    """Lower and upper bounds on ``K(alpha) = log E_P[e^{(alpha-1) L}]`` at given orders.

    Attributes
    ----------
    lower, upper : numpy.ndarray
        The bounds, one per order.
    """

    lower: np.ndarray
    upper: np.ndarray


def exact_cumulant(values: np.ndarray, magnitude=0.0) -> Cumulant:
    """Bounds on a cumulant known up to rounding.

    Parameters
    ----------
    values : numpy.ndarray
        The computed cumulants.
    magnitude : float or numpy.ndarray, optional
        Size of the terms that cancelled in computing them.

    Returns
    -------
    Cumulant
        ``values`` widened by a relative 1e-13 plus ``magnitude`` times 64 ulps.
    """
    margin = 1e-13 * np.abs(values) + 64 * UNIT_ROUNDOFF * np.asarray(magnitude)
    return Cumulant(lower=values - margin, upper=values + margin)


def gaussian_cumulant(mu: float, alpha: np.ndarray) -> Cumulant:
    """Cumulant of a Gaussian step: ``K(alpha) = alpha (alpha - 1) mu^2 / 2`` (Mironov 2017).

    Parameters
    ----------
    mu : float
        The step's ``sensitivity / sigma``.
    alpha : numpy.ndarray
        Rényi orders, each > 1.

    Returns
    -------
    Cumulant
        Bounds on ``K(alpha)``, one per order.
    """
    return exact_cumulant(alpha * (alpha - 1) * mu * mu / 2)


def laplace_cumulant(epsilon0: float, alpha: np.ndarray) -> Cumulant:
    """Cumulant of a Laplace step (Mironov 2017, Table II).

    ``K(a) = log(a/(2a-1) e^{(a-1)t} + (a-1)/(2a-1) e^{-a t})`` with ``t = epsilon0``.

    Parameters
    ----------
    epsilon0 : float
        The step's ``sensitivity / scale``.
    alpha : numpy.ndarray
        Rényi orders, each > 1.

    Returns
    -------
    Cumulant
        Bounds on ``K(alpha)``, one per order.
    """
    t = epsilon0
    first = np.log(alpha / (2 * alpha - 1))
    values = first + (alpha - 1) * t + np.log1p((alpha - 1) / alpha * np.exp(-(2 * alpha - 1) * t))
    return exact_cumulant(values, np.abs(first) + (alpha - 1) * t + 1)


def _log_theta_ratio(shift: np.ndarray, sigma: float) -> np.ndarray:
    """``log(theta(s) / theta(0))``, ``theta(s) = sum_{x in Z} exp(-(x - s)^2 / (2 sigma^2))``.

    Direct sums for small ``sigma`` (terms beyond ``40 sigma + 2`` are below ``e^-800``); the
    Poisson-summation form ``theta(s) ∝ 1 + 2 sum_k e^{-2 pi^2 sigma^2 k^2} cos(2 pi k s)``
    otherwise, whose terms fall as fast.
    """
    s = np.mod(shift, 1.0)
    if sigma < 2.0:
        reach = int(math.ceil(40 * sigma)) + 2
        x = np.arange(-reach, reach + 2)
        log_s = log_sum_exp(-((x[None, :] - s[:, None]) ** 2) / (2 * sigma * sigma), axis=1)
        log_0 = log_sum_exp(-(x.astype(float) ** 2) / (2 * sigma * sigma))
        return log_s - log_0
    k = np.arange(1, 6)
    weights = np.exp(-2 * math.pi**2 * sigma * sigma * k * k)
    top = 2 * np.sum(weights[None, :] * np.cos(2 * math.pi * k[None, :] * s[:, None]), axis=1)
    return np.log1p(top) - np.log1p(2 * np.sum(weights))


def discrete_gaussian_cumulant(sigma: float, sensitivity: int, alpha: np.ndarray) -> Cumulant:
    """Cumulant of a discrete Gaussian step, through its theta function.

    ``sum_x P^a Q^{1-a} = e^{a(a-1) D^2/(2 s^2)} theta((a-1) D) / theta(0)`` (complete the
    square); at integer ``a D`` it equals the continuous value (Canonne, Kamath & Steinke 2020).

    Parameters
    ----------
    sigma : float
        The noise scale ``s``.
    sensitivity : int
        The sensitivity ``D``.
    alpha : numpy.ndarray
        Rényi orders, each > 1.

    Returns
    -------
    Cumulant
        Bounds on ``K(alpha)``, one per order.
    """
    base = alpha * (alpha - 1) * sensitivity**2 / (2 * sigma * sigma)
    values = base + _log_theta_ratio((alpha - 1) * sensitivity, sigma)
    return exact_cumulant(np.minimum(values, base), 1.0)


def log_atom_sum(losses: np.ndarray, probs: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """``log sum_i p_i e^{(alpha-1) l_i}`` for a law of atoms.

    Parameters
    ----------
    losses, probs : numpy.ndarray
        The atoms' losses and probabilities.
    alpha : numpy.ndarray
        Rényi orders, each > 1.

    Returns
    -------
    numpy.ndarray
        One value per order (``-inf`` for a law without mass).
    """
    keep = probs > 0
    if not keep.any():
        return np.full(alpha.shape, -np.inf)
    log_p, losses = np.log(probs[keep]), losses[keep]
    alpha = np.asarray(alpha, dtype=float)
    # a block of orders at a time: a law of millions of atoms (an allocation epoch) at a
    # hundred orders would otherwise hold several (orders x atoms) arrays of gigabytes;
    # each row is summed on its own, so the blocks change no value
    rows = max(1, _BLOCK_ENTRIES // len(losses))
    flat = alpha.reshape(-1)
    out = np.empty(flat.shape)
    for start in range(0, len(flat), rows):
        block = flat[start:start + rows]
        out[start:start + rows] = log_sum_exp(
            log_p[None, :] + np.multiply.outer(block - 1, losses), axis=1)
    return out.reshape(alpha.shape)


def atoms_cumulant(losses: np.ndarray, probs: np.ndarray, alpha: np.ndarray) -> Cumulant:
    """Cumulant of a law of atoms, by its exact sum :func:`log_atom_sum`, with rounding bounds.

    Parameters
    ----------
    losses, probs : numpy.ndarray
        The atoms' losses and probabilities.
    alpha : numpy.ndarray
        Rényi orders, each > 1.

    Returns
    -------
    Cumulant
        Bounds on ``K(alpha)``, one per order.
    """
    values = log_atom_sum(losses, probs, alpha)
    # log-sum-exp rounds like its largest term; the atoms themselves carry relative rounding
    largest = np.max(np.abs(losses)) if len(losses) else 0.0
    return exact_cumulant(values, 1 + (alpha - 1) * largest + len(losses))
