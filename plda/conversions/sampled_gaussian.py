"""Rényi cumulants of the Poisson-sampled Gaussian, bounded cell by cell over the base noise.

Below by Jensen and above by the chord on each cell, with closed-form Gaussian tails; the
derivation is in ``docs/tradeoff.md`` ("How the per-step bounds are computed").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr

from plda._internal.caches import cached
from plda.conversions.cumulants import Cumulant, gaussian_cumulant

#: relative safety margin on cumulants (rounding in sums, special functions and cell masses)
MARGIN = 1e-9
#: the cells stop at x = 36 (beyond, their masses would underflow) and E[(R - 1)^2] = e^(mu^2) - 1
#: overflows past mu^2 = 709: larger shifts take the closed-form bounds of _large_shift_cumulant
LARGEST_CELLS_MU2 = 700.0
#: below this shift the cells' tail terms cancel (log ndtr(-x) and log ndtr(mu - x) agree to the
#: last digit near mu = 1e-15: a "math domain error"); the unsampled Gaussian bounds the step
SMALLEST_CELLS_MU = 1e-6
#: cell width of the sampled-Gaussian quadrature in ``log R`` (relative to min(mu, 1))
_CELL_WIDTH = 0.02
#: lowest base-noise coordinate of the cells (the mass below is bounded in closed form)
_X_LOW = -9.0


def _log_interval(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``log(Phi(hi) - Phi(lo))`` without cancellation (differences of the smaller tail)."""
    lo, hi = np.broadcast_arrays(np.asarray(lo, float), np.asarray(hi, float))
    out = np.empty(lo.shape)
    left = hi <= 0
    right = lo >= 0
    middle = ~(left | right)
    with np.errstate(divide="ignore"):
        a, b = log_ndtr(lo[left]), log_ndtr(hi[left])
        out[left] = b + np.log(-np.expm1(a - b))
        a, b = log_ndtr(-hi[right]), log_ndtr(-lo[right])
        out[right] = b + np.log(-np.expm1(a - b))
        out[middle] = np.log1p(-np.exp(log_ndtr(lo[middle])) - np.exp(log_ndtr(-hi[middle])))
    return out


def _log1p_minus(t: np.ndarray) -> np.ndarray:
    """``log1p(t) - t`` accurate for small ``t``."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # (the series is read only where |t| < 1e-2; elsewhere its powers may overflow)
        series = -(t**2) / 2 + t**3 / 3 - t**4 / 4 + t**5 / 5 - t**6 / 6 + t**7 / 7
        direct = np.log1p(t) - t
    return np.where(np.abs(t) < 1e-2, series, direct)


@dataclass(frozen=True, eq=False)
class _Points:
    """``t = q (R - 1)`` at some points, with ``log1p(t)``, ``log1p(t) - t`` and ``log|t|``."""

    t: np.ndarray
    log1p: np.ndarray
    minus: np.ndarray
    log_abs: np.ndarray

    @classmethod
    def at(cls, log_r: np.ndarray, q: float) -> _Points:
        t = q * np.expm1(np.asarray(log_r, dtype=float))
        with np.errstate(divide="ignore"):
            return cls(t=t, log1p=np.log1p(t), minus=_log1p_minus(t), log_abs=np.log(np.abs(t)))


@dataclass(frozen=True, eq=False)
class _SampledGaussianCells:
    """Order-independent data of the cells ``[x_i, x_{i+1}]`` of the base noise coordinate ``x``
    (``Q0 = N(0, 1)``, ``P0 = N(mu, 1)``, ``R = e^{mu x - mu^2/2}``); ``x = mu/2`` (``R = 1``)
    is an edge, so every cell lies on one side of ``R = 1``."""

    mu: float
    q: float
    x: np.ndarray
    mass: np.ndarray  # Q0(cell)
    mass_up: np.ndarray  # Q0(cell) w; w: chord weight of the right edge, mean R = (1-w)R_lo + wR_hi
    mass_down: np.ndarray  # Q0(cell) (1 - w)
    edges: _Points
    means: _Points
    zero: _Points  # R = 0
    low_log_mass: float  # below x[0]
    low_log_weight: float  # log(mean R / R(x[0])) there
    low_mean: _Points
    high_log_mass: float  # above x[-1]
    high_log_diff: float  # log(P0 - Q0) there
    high_mean: _Points
    log_variance: float  # log E_Q0[(R - 1)^2] = log expm1(mu^2)


@cached(maxsize=32)
def _sampled_gaussian_cells(
    mu: float, q: float, x_high: float, coarse: int = 1
) -> _SampledGaussianCells:
    width = coarse * _CELL_WIDTH / max(mu, 1.0)
    pivot = mu / 2
    k = np.arange(math.floor((_X_LOW - pivot) / width), math.ceil((x_high - pivot) / width) + 1)
    x = pivot + k * width
    x[k == 0] = pivot
    lo, hi = x[:-1], x[1:]
    log_q = _log_interval(lo, hi)
    log_mean = _log_interval(lo - mu, hi - mu) - log_q  # log of the cell's mean R
    log_edge = mu * x - mu * mu / 2
    step = mu * width
    w_up = np.clip(np.expm1(log_mean - log_edge[:-1]) / np.expm1(step), 0.0, 1.0)
    w_down = np.clip(-np.expm1(log_mean - log_edge[1:]) / -np.expm1(-step), 0.0, 1.0)
    mass = np.exp(log_q)
    low_log_mass = float(log_ndtr(x[0]))
    low_log_mean = float(log_ndtr(x[0] - mu)) - low_log_mass
    high_log_mass = float(log_ndtr(-x[-1]))
    high_log_p = float(log_ndtr(mu - x[-1]))
    high_log_diff = high_log_p + math.log(-math.expm1(high_log_mass - high_log_p))
    return _SampledGaussianCells(
        mu=mu,
        q=q,
        x=x,
        mass=mass,
        mass_up=mass * w_up,
        mass_down=mass * w_down,
        edges=_Points.at(log_edge, q),
        means=_Points.at(log_mean, q),
        zero=_Points.at(np.array([-np.inf]), q),
        low_log_mass=low_log_mass,
        low_log_weight=low_log_mean - float(log_edge[0]),
        low_mean=_Points.at(np.array([low_log_mean]), q),
        high_log_mass=high_log_mass,
        high_log_diff=high_log_diff,
        high_mean=_Points.at(np.array([high_log_p - high_log_mass]), q),
        # log expm1(mu^2) = mu^2 + log1p(-e^-mu^2): e^(mu^2) overflows past mu = 26.6
        log_variance=mu * mu + math.log(-math.expm1(-mu * mu)),
    )


def _x_high(mu: float, q: float, alpha_max: float) -> float:
    """Top of the cells: far enough that ``alpha (1-q)/(q R) <= 1e-6`` there, so the closed-form
    tail is tight for every order up to ``alpha_max``; rounded up to reuse cached cells."""
    alpha_max = 2.0 ** math.ceil(math.log2(max(alpha_max, 2.0)))
    log_r = math.log((1 - q) / q) + math.log(1e6 * alpha_max)
    # above 36 the cells' masses (< e^-650) would underflow: orders past ~1e6 get a looser tail
    return min(max(-_X_LOW, math.ceil((log_r + mu * mu / 2) / mu) + 1.0), 36.0)


def sampled_gaussian_cumulant(mu: float, q: float, direction: str, alpha: np.ndarray) -> Cumulant:
    """Certified bounds on the Rényi cumulant of one Poisson-sampled Gaussian step.

    ``K(alpha) = log E_Q0[(1 + q (R - 1))^beta]`` over the base pair ``P0 = N(mu, 1)``,
    ``Q0 = N(0, 1)``, ``R = dP0/dQ0``, with ``beta = alpha`` (remove: the pair ``(q P0 + (1-q)
    Q0, Q0)``) or ``beta = 1 - alpha`` (add: the reversed pair); bounded cell by cell over the
    base noise (derivation: ``docs/tradeoff.md``, "How the per-step bounds are computed").

    Parameters
    ----------
    mu : float
        The base Gaussian's ``sensitivity / sigma``.
    q : float
        The sample rate, in (0, 1].
    direction : str
        Which pair: ``"remove"`` or ``"add"``.
    alpha : numpy.ndarray
        Rényi orders, each > 1.

    Returns
    -------
    Cumulant
        Bounds on ``K(alpha)``, one per order.
    """
    if q == 1.0:
        return gaussian_cumulant(mu, alpha)
    if mu < SMALLEST_CELLS_MU:
        # D_alpha is convex in the mixture (first argument: E_Q[(dP/dQ)^alpha] is linear in P;
        # second: van Erven & Harremoes 2014, Thm 12), so either pair's divergence is at most
        # the unsampled Gaussian's, alpha mu^2 / 2; and at least 0
        return Cumulant(lower=np.zeros(alpha.shape), upper=gaussian_cumulant(mu, alpha).upper)
    if mu * mu > LARGEST_CELLS_MU2:
        return _large_shift_cumulant(mu, q, direction, alpha)
    if direction == "remove":
        cells = _sampled_gaussian_cells(mu, q, _x_high(mu, q, float(np.max(alpha))))
    else:
        # add: h <= (alpha - 1) q (R - 1) grows slowly, so the closed-form tail is tight early;
        # this direction is the smaller one (Mironov, Talwar & Zhang 2019), coarser cells do
        cells = _sampled_gaussian_cells(mu, q, -_X_LOW + 3, 3)
    lower = np.empty(alpha.shape)
    upper = np.empty(alpha.shape)
    order = np.argsort(alpha)
    for start in range(0, len(alpha), 16):  # chunks of sorted orders keep the arrays small
        pick = order[start : start + 16]
        lower[pick], upper[pick] = _sampled_gaussian_chunk(cells, direction, alpha[pick])
    return Cumulant(lower=lower, upper=upper)


def _large_shift_cumulant(mu: float, q: float, direction: str, alpha: np.ndarray) -> Cumulant:
    """Bounds without cells, for a shift past their reach (``mu^2 > LARGEST_CELLS_MU2``).

    Above, joint convexity: either pair is a ``q``-mixture of the base pair (in its own order)
    and an identical one, so ``e^K <= 1 - q + q e^{alpha (alpha - 1) mu^2 / 2}``. Below,
    ``K >= 0``, and for remove ``(1 - q + q R)^alpha >= (q R)^alpha``: ``K >= alpha log q +
    alpha (alpha - 1) mu^2 / 2``. Both rounded outwards by ``MARGIN``."""
    base = alpha * (alpha - 1) * (mu * mu) / 2
    upper = np.logaddexp(math.log1p(-q), math.log(q) + base)
    lower = np.zeros(alpha.shape)
    if direction == "remove":
        lower = np.maximum(lower, alpha * math.log(q) + base)
    return Cumulant(lower=np.maximum(lower - MARGIN * (1 + lower), 0.0),
                    upper=upper + MARGIN * (1 + np.abs(upper)))


def _high_tail(c: _SampledGaussianCells, direction: str, a: np.ndarray):
    """Logs of bounds on ``E[h; x > x_top]`` and on ``c q^2 E[(R-1)^2; x > x_top]``."""
    mu, q = c.mu, c.q
    log_c = np.log(a * (a - 1) / 2)  # beta (beta - 1) / 2 is the same for both directions
    log_rc = mu * c.x[-1] - mu * mu / 2
    log_r2 = mu * mu + log_ndtr(2 * mu - c.x[-1])  # log E[R^2; tail] >= log E[(R-1)^2; tail]
    square_low = log_r2 + 2 * math.log1p(-math.exp(-log_rc)) if log_rc > 0 else -np.inf
    if direction == "remove":
        r = (1 - q) / q * math.exp(-log_rc)
        moment = a * (a - 1) * mu * mu / 2 + log_ndtr(a * mu - c.x[-1])
        h_up = a * math.log(q) + a * math.log1p(r) + moment
        small = np.logaddexp(c.high_log_mass, math.log(q) + np.log(a) + c.high_log_diff)
        big = a * math.log(q) + moment
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # (the branch
            # not taken overflows)
            h_low = np.where(big > small, big + np.log(-np.expm1(small - big)), -np.inf)
    else:
        h_up = math.log(q) + np.log(a - 1) + c.high_log_diff
        h_low = np.full(a.shape, -np.inf)
    quad_up = log_c + 2 * math.log(q) + log_r2
    quad_low = log_c + 2 * math.log(q) + square_low
    return h_low, h_up, quad_low, quad_up


def _g_scaled(beta, half, scale, p: _Points) -> np.ndarray:
    """``g e^{-s}`` for ``g = (1+t)^beta - 1 - beta t - half t^2`` (``half = beta(beta-1)/2``)
    at points ``p``, one row per order. With ``u = beta log1p(t)``: ``h = u^2 phi(u) +
    beta (log1p(t) - t)``, ``phi(u) = (e^u - 1 - u)/u^2``, for ``|u| <= 1/2`` (no loss of
    relative accuracy for small ``t``), else ``h = e^u - 1 - beta t``; the scale keeps
    ``e^{u-s}`` finite."""
    u = beta * p.log1p[None, :]
    unit = np.exp(-scale)
    near = np.abs(u) <= 0.5
    e = np.expm1(np.where(near, u, 0.0))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        phi = np.where(
            np.abs(u) < 1e-2,
            0.5 + u / 6 + u * u / 24 + u**3 / 120 + u**4 / 720,
            (e - u) / (u * u),
        )
        small = (u * u * phi + beta * p.minus[None, :]) * unit
        far = np.exp(u - scale) - (1 + beta * p.t[None, :]) * unit
    h = np.where(near, small, far)
    return h - half * (p.t * p.t)[None, :] * unit


def _sampled_gaussian_chunk(c: _SampledGaussianCells, direction: str, a: np.ndarray):
    """Cell sums for a few orders, scaled by ``e^{-s}`` per order so that nothing overflows."""
    q = c.q
    beta = (a if direction == "remove" else 1.0 - a)[:, None]
    half = beta * (beta - 1) / 2
    h_low, h_up, quad_low, quad_up = _high_tail(c, direction, a)
    u_top = np.max(beta * c.edges.log1p[[0, -1]][None, :], axis=1)
    s = np.maximum(0.0, np.maximum(u_top, h_up) - 700.0)
    scale = s[:, None]
    g_edge = _g_scaled(beta, half, scale, c.edges)
    g_mean = _g_scaled(beta, half, scale, c.means)
    g_zero = _g_scaled(beta, half, scale, c.zero)[:, 0]
    g_low = _g_scaled(beta, half, scale, c.low_mean)[:, 0]
    jensen = c.mass * g_mean
    chord = c.mass_down * g_edge[:, :-1] + c.mass_up * g_edge[:, 1:]
    low_mass, w = math.exp(c.low_log_mass), math.exp(c.low_log_weight)
    low_j = low_mass * g_low
    low_c = low_mass * ((1 - w) * g_zero + w * g_edge[:, 0])
    # E[g; tail] = E[h; tail] - c q^2 E[(R-1)^2; tail], each part bounded in closed form
    high_up = np.exp(h_up - s) - np.exp(quad_low - s)
    high_low = np.exp(h_low - s) - np.exp(quad_up - s)
    quadratic = half[:, 0] * q * q * math.expm1(c.mu * c.mu) * np.exp(-s)
    lower_sum = (
        np.sum(np.minimum(jensen, chord), axis=1) + np.minimum(low_j, low_c) + high_low + quadratic
    )
    upper_sum = (
        np.sum(np.maximum(jensen, chord), axis=1) + np.maximum(low_j, low_c) + high_up + quadratic
    )
    magnitude = (
        np.sum(np.abs(jensen) + np.abs(chord), axis=1)
        + np.abs(low_j)
        + np.abs(low_c)
        + np.abs(high_up)
        + np.abs(high_low)
        + quadratic
    )
    # K = log(1 + E[...]); the margin covers rounding in masses, weights and g, relative to the
    # magnitude of the terms (the sums have both signs)
    with np.errstate(divide="ignore"):
        log_lower = np.log(np.maximum(lower_sum - MARGIN * magnitude, 0.0)) + s
        log_upper = np.log(upper_sum + MARGIN * magnitude) + s
    return np.logaddexp(0.0, log_lower), np.logaddexp(0.0, log_upper)
