"""Rényi differential privacy and zero-concentrated DP of a composition, and their conversion to
``(epsilon, delta)``.

Rényi divergence of order ``alpha > 1`` of one ordered pair (Mironov 2017):
``D_alpha(P || Q) = log E_Q[(dP/dQ)^alpha] / (alpha - 1) = log E_P[e^{(alpha-1) L}] / (alpha - 1)``,
``+inf`` when ``P(L = +inf) > 0``. The cumulant ``K(alpha) = (alpha - 1) D_alpha`` adds up under
composition, so the composition's Rényi curve is computed *per step*, exactly up to the per-step
discretization, and never from the composed grid (whose truncated tail would make it infinite):
``eps_alpha = max_direction sum_f k_f K_f(alpha) / (alpha - 1)``.

Per step, lower and upper bounds on ``K_f`` come from, in order of preference:

* closed forms — Gaussian ``alpha mu^2 / 2``; Laplace (Mironov 2017, Table II); discrete Gaussian
  through its theta function (Canonne, Kamath & Steinke 2020); finite atom laws (exact sums);
* the Poisson-sampled Gaussian: ``E_Q0[h(R)]`` over the base Gaussian pair, ``R = dP0/dQ0``,
  for the convex ``h(y) = (1 - q + q y)^beta`` (``beta = alpha`` remove, ``1 - alpha`` add),
  bounded cell by cell below by Jensen and above by the chord (the per-cell versions of the
  optimistic merge and the pessimistic connect-the-dots), with closed-form Gaussian tails;
* any other law: its optimistic and pessimistic per-step grid laws (dominated and dominating
  pairs); a pessimistic law that charged a tail to ``+inf`` falls back to joint convexity for a
  Poisson-sampled step, ``e^{K} <= 1 - q + q e^{K_base}``, else ``+inf``.

zCDP (Bun & Steinke 2016): the smallest ``rho`` with ``eps_alpha <= rho alpha`` for all
``alpha > 1``.

Conversion to ``(epsilon, delta)`` (Canonne, Kamath & Steinke 2020, Prop. 12; Asoodeh et al.
2021; the same as Balle et al. 2020, Thm. 21): for every ``alpha > 1``
``delta = exp((alpha - 1)(eps_alpha - epsilon)) (1 - 1/alpha)^(alpha - 1) / alpha``, i.e.
``epsilon = eps_alpha + log(1 - 1/alpha) - (log delta + log alpha) / (alpha - 1)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr

from plda._internal import validation as check
from plda._internal.caches import cached
from plda._internal.floats import UNIT_ROUNDOFF, round_up
from plda.discretize import discretize
from plda.mechanisms.approximate import ApproximateDP
from plda.mechanisms.base import DIRECTIONS, Mechanism
from plda.mechanisms.discrete import DiscreteGaussian
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.laplace import Laplace
from plda.mechanisms.subsampled import PoissonSampled
from plda.pld import Bounds, PrivacyLossDistribution

__all__ = [
    "delta_from_renyi",
    "epsilon_from_renyi",
    "renyi",
    "renyi_bounds",
    "renyi_delta",
    "renyi_epsilon",
    "zcdp",
    "zcdp_bounds",
]

_U = 2.0**-53
#: relative safety margin on cumulants (rounding in sums, special functions and cell masses)
_MARGIN = 1e-9
#: default orders of the RDP -> (epsilon, delta) conversion and of the zCDP search
DEFAULT_ORDERS = np.concatenate([1 + np.geomspace(1e-3, 0.5, 30), np.geomspace(1.5, 1e4, 120)])
#: cell width of the sampled-Gaussian quadrature in ``log R`` (relative to min(mu, 1))
_CELL_WIDTH = 0.02
#: lowest base-noise coordinate of the cells (the mass below is bounded in closed form)
_X_LOW = -9.0
#: grid points of a generic per-step discretization
_GRID_POINTS = 1 << 15


# ------------------------------------------------------------------ inputs
def _orders(name: str, value) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a number or an array of numbers > 1") from exc
    bad = ~(np.isfinite(arr) & (arr > 1))
    if np.any(bad):
        raise ValueError(f"{name} must be finite and in (1, inf), got {arr[bad].flat[0]!r}")
    return arr


def _scalar(value, like):
    return float(value) if np.ndim(like) == 0 else value


def _log_sum_exp(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """``log(sum(exp(values)))`` along ``axis`` (``-inf`` entries allowed)."""
    top = np.max(values, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(values - top), axis=axis)) + np.squeeze(top, axis=axis)
    return out


# -------------------------------------------------------- per-step cumulants
@dataclass(frozen=True)
class _Cumulant:
    """Lower and upper bounds on ``K(alpha) = log E_P[e^{(alpha-1) L}]`` at given orders."""

    lower: np.ndarray
    upper: np.ndarray


def _exact(values: np.ndarray, magnitude=0.0) -> _Cumulant:
    """A value known up to rounding: relative error, plus ``magnitude`` times a few ulps for the
    cancellation of terms of that size."""
    margin = 1e-13 * np.abs(values) + 64 * _U * np.asarray(magnitude)
    return _Cumulant(values - margin, values + margin)


def _gaussian(mu: float, alpha: np.ndarray) -> _Cumulant:
    return _exact(alpha * (alpha - 1) * mu * mu / 2)


def _laplace(epsilon0: float, alpha: np.ndarray) -> _Cumulant:
    """Mironov 2017, Table II: ``(a-1) D = log(a/(2a-1) e^{(a-1)t} + (a-1)/(2a-1) e^{-a t})``."""
    t = epsilon0
    first = np.log(alpha / (2 * alpha - 1))
    values = first + (alpha - 1) * t + np.log1p((alpha - 1) / alpha * np.exp(-(2 * alpha - 1) * t))
    return _exact(values, np.abs(first) + (alpha - 1) * t + 1)


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
        log_s = _log_sum_exp(-((x[None, :] - s[:, None]) ** 2) / (2 * sigma * sigma), axis=1)
        log_0 = _log_sum_exp(-(x.astype(float) ** 2) / (2 * sigma * sigma))
        return log_s - log_0
    k = np.arange(1, 6)
    weights = np.exp(-2 * math.pi**2 * sigma * sigma * k * k)
    top = 2 * np.sum(weights[None, :] * np.cos(2 * math.pi * k[None, :] * s[:, None]), axis=1)
    return np.log1p(top) - np.log1p(2 * np.sum(weights))


def _discrete_gaussian(sigma: float, sensitivity: int, alpha: np.ndarray) -> _Cumulant:
    """``sum_x P^a Q^{1-a} = e^{a(a-1) D^2/(2 s^2)} theta((a-1) D) / theta(0)`` for the integer
    Gaussian (complete the square); at integer ``a D`` it equals the continuous value."""
    base = alpha * (alpha - 1) * sensitivity**2 / (2 * sigma * sigma)
    values = base + _log_theta_ratio((alpha - 1) * sensitivity, sigma)
    return _exact(np.minimum(values, base), 1.0)


def _atoms(losses: np.ndarray, probs: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """``log sum_i p_i e^{(alpha-1) l_i}``."""
    keep = probs > 0
    if not keep.any():
        return np.full(alpha.shape, -np.inf)
    log_p, losses = np.log(probs[keep]), losses[keep]
    return _log_sum_exp(log_p[None, :] + np.multiply.outer(alpha - 1, losses), axis=1)


def _atoms_exact(losses: np.ndarray, probs: np.ndarray, alpha: np.ndarray) -> _Cumulant:
    values = _atoms(losses, probs, alpha)
    # log-sum-exp rounds like its largest term; the atoms themselves carry relative rounding
    largest = np.max(np.abs(losses)) if len(losses) else 0.0
    return _exact(values, 1 + (alpha - 1) * largest + len(losses))


# ------------------------------------------------- Poisson-sampled Gaussian
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
    series = -(t**2) / 2 + t**3 / 3 - t**4 / 4 + t**5 / 5 - t**6 / 6 + t**7 / 7
    with np.errstate(divide="ignore", invalid="ignore"):
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
            return cls(t, np.log1p(t), _log1p_minus(t), np.log(np.abs(t)))


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
        mu, q, x, mass, mass * w_up, mass * w_down,
        _Points.at(log_edge, q), _Points.at(log_mean, q), _Points.at(np.array([-np.inf]), q),
        low_log_mass, low_log_mean - float(log_edge[0]), _Points.at(np.array([low_log_mean]), q),
        high_log_mass, high_log_diff, _Points.at(np.array([high_log_p - high_log_mass]), q),
        math.log(math.expm1(mu * mu)),
    )


def _x_high(mu: float, q: float, alpha_max: float) -> float:
    """Top of the cells: far enough that ``alpha (1-q)/(q R) <= 1e-6`` there, so the closed-form
    tail is tight for every order up to ``alpha_max``; rounded up to reuse cached cells."""
    alpha_max = 2.0 ** math.ceil(math.log2(max(alpha_max, 2.0)))
    log_r = math.log((1 - q) / q) + math.log(1e6 * alpha_max)
    # above 36 the cells' masses (< e^-650) would underflow: orders past ~1e6 get a looser tail
    return min(max(-_X_LOW, math.ceil((log_r + mu * mu / 2) / mu) + 1.0), 36.0)


def _sampled_gaussian(mu: float, q: float, direction: str, alpha: np.ndarray) -> _Cumulant:
    """``K(alpha) = log E_Q0[(1 + t)^beta]``, ``t = q (R - 1)``, with ``beta = alpha`` (remove:
    pair ``(q P0 + (1-q) Q0, Q0)``) or ``beta = 1 - alpha`` (add: the reversed pair).

    ``E[(1+t)^beta] - 1 = c E[(R-1)^2] + E[g(R)]`` with ``c = beta (beta-1) q^2 / 2``,
    ``E_Q0[(R-1)^2] = e^{mu^2} - 1`` exactly (``E_Q0[R - 1] = 0``), and
    ``g = (1+t)^beta - 1 - beta t - beta (beta-1) t^2 / 2``, whose second derivative has the sign
    of ``(beta - 2) t``: ``g`` is convex or concave on each cell, so the cell's ``E[g(R)]`` lies
    between ``m g(y)`` (Jensen at the cell's ``Q0``-mass ``m`` and mean ``R`` ``y``) and the
    chord value ``m ((1-w) g(R_lo) + w g(R_hi))``. Subtracting the quadratic part makes the
    cell error third order in ``q``. Below the cells the same holds on ``[0, R_0]``; above them
    closed forms: remove, ``(qR)^alpha <= (1 - q + qR)^alpha <= (qR)^alpha (1 + (1-q)/(q
    R_hi))^alpha`` with ``E_Q0[R^a; x > c] = e^{a(a-1) mu^2/2} Phi(a mu - c)``; add,
    ``0 <= h <= (alpha - 1) q (R - 1)`` for ``h = (1+t)^beta - 1 - beta t``.
    """
    if q == 1.0:
        return _gaussian(mu, alpha)
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
    return _Cumulant(lower, upper)


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
        with np.errstate(divide="ignore", invalid="ignore"):
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
    lower_sum = (np.sum(np.minimum(jensen, chord), axis=1) + np.minimum(low_j, low_c)
                 + high_low + quadratic)
    upper_sum = (np.sum(np.maximum(jensen, chord), axis=1) + np.maximum(low_j, low_c)
                 + high_up + quadratic)
    magnitude = (np.sum(np.abs(jensen) + np.abs(chord), axis=1) + np.abs(low_j) + np.abs(low_c)
                 + np.abs(high_up) + np.abs(high_low) + quadratic)
    # K = log(1 + E[...]); the margin covers rounding in masses, weights and g, relative to the
    # magnitude of the terms (the sums have both signs)
    with np.errstate(divide="ignore"):
        log_lower = np.log(np.maximum(lower_sum - _MARGIN * magnitude, 0.0)) + s
        log_upper = np.log(upper_sum + _MARGIN * magnitude) + s
    return np.logaddexp(0.0, log_lower), np.logaddexp(0.0, log_upper)


# ------------------------------------------------------------ generic laws
def _grid_cumulant(law, alpha: np.ndarray):
    """Bounds from the per-step optimistic and pessimistic grid laws (dominated / dominating
    pairs keep the order of every f-divergence); ``None`` for the upper one when the
    pessimistic law charged a continuous tail to ``+inf`` (a bound would need that tail)."""
    lo, hi = _support(law)
    step = max((hi - lo) / _GRID_POINTS, 1e-12)
    upper_law, lower_law = discretize(law, step)
    lower = _atoms(lower_law.losses, lower_law.probs, alpha)
    if law.infinity_mass > 0:
        inf = np.full(alpha.shape, np.inf)
        return inf, inf
    charged = upper_law.infinity_mass > law.infinity_mass
    upper = None if charged else _atoms(upper_law.losses, upper_law.probs, alpha)
    return lower, upper


def _support(law) -> tuple[float, float]:
    lo, hi = np.inf, -np.inf
    if law.has_continuous_part:
        a, b = law.tail_points(1e-24, "P")
        lo, hi = min(lo, a), max(hi, b)
    if len(law.atom_losses):
        lo, hi = min(lo, law.atom_losses.min()), max(hi, law.atom_losses.max())
    if not (np.isfinite(lo) and np.isfinite(hi)) or hi <= lo:
        return (0.0, 1.0)
    return float(lo), float(hi)


def _factor(mechanism: Mechanism, direction: str, alpha: np.ndarray) -> _Cumulant:
    """Bounds on one step's cumulant ``K(alpha)`` for ``direction``."""
    if type(mechanism) is Gaussian:
        return _gaussian(mechanism.mu, alpha)
    if type(mechanism) is Laplace:
        return _laplace(mechanism.epsilon, alpha)
    if type(mechanism) is DiscreteGaussian:
        return _discrete_gaussian(mechanism.sigma, mechanism.sensitivity, alpha)
    if type(mechanism) is ApproximateDP and mechanism.delta > 0:
        inf = np.full(alpha.shape, np.inf)
        return _Cumulant(inf, inf)
    if type(mechanism) is PoissonSampled and mechanism.sample_rate < 1:
        base = mechanism.mechanism
        if type(base) is Gaussian:
            return _sampled_gaussian(base.mu, mechanism.sample_rate, direction, alpha)
    law = mechanism.privacy_loss(direction)
    if law.infinity_mass > 0:
        inf = np.full(alpha.shape, np.inf)
        return _Cumulant(inf, inf)
    if not law.has_continuous_part and law.truncated_mass == 0:
        return _atoms_exact(law.atom_losses, law.atom_probs, alpha)
    if law.has_continuous_part:
        lower, upper = _grid_cumulant(law, alpha)
    else:  # atoms with a truncated tail: the kept atoms are a lower bound
        lower, upper = _atoms(law.atom_losses, law.atom_probs, alpha), None
    if upper is None:
        upper = _convexity_upper(mechanism, direction, alpha)
    margin = _MARGIN * (1 + np.abs(upper))
    return _Cumulant(np.minimum(lower, upper), upper + margin)


def _convexity_upper(mechanism: Mechanism, direction: str, alpha: np.ndarray) -> np.ndarray:
    """Joint convexity of ``(a, b) -> a^alpha b^(1-alpha)``: a Poisson-sampled step has
    ``e^K <= 1 - q + q e^{K_base}`` in both directions (the base's own direction); ``+inf`` for
    anything else."""
    if type(mechanism) is PoissonSampled:
        q = mechanism.sample_rate
        base = _factor(mechanism.mechanism, direction, alpha).upper
        with np.errstate(over="ignore"):
            return np.logaddexp(math.log1p(-q), math.log(q) + base) if q < 1 else base
    return np.full(alpha.shape, np.inf)


# ----------------------------------------------------------- compositions
def _factors(pld: PrivacyLossDistribution):
    if not isinstance(pld, PrivacyLossDistribution):
        raise TypeError(f"pld must be a PrivacyLossDistribution, got {type(pld).__name__}")
    out = []
    for mechanism, count in pld.components:
        if count == 0:
            continue
        if pld.relation == "replace_one":
            mechanism = mechanism.under_replace_one()
        out.append((mechanism, count))
    return out


def _cumulant(pld: PrivacyLossDistribution, alpha: np.ndarray) -> _Cumulant:
    """Bounds on the composition's ``K(alpha) = (alpha - 1) eps_alpha``, worse direction."""
    factors = _factors(pld)
    directions = ("remove",) if all(m.symmetric for m, _ in factors) else DIRECTIONS
    lower = np.full(alpha.shape, -np.inf)
    upper = np.full(alpha.shape, -np.inf)
    for direction in directions:
        lo = np.zeros(alpha.shape)
        up = np.zeros(alpha.shape)
        for mechanism, count in factors:
            bounds = _factor(mechanism, direction, alpha)
            lo = lo + count * bounds.lower
            up = up + count * bounds.upper
        lower, upper = np.maximum(lower, lo), np.maximum(upper, up)
    return _Cumulant(np.maximum(np.minimum(lower, upper), 0.0), np.maximum(upper, 0.0))


def renyi_bounds(pld: PrivacyLossDistribution, order) -> Bounds:
    """``(lower, upper)`` bounds on the Rényi-DP curve ``eps_alpha`` of the composition at
    ``order`` (any real ``alpha > 1``, vectorized); ``inf`` where it is infinite (a mass at
    infinite loss, e.g. an ``(epsilon, delta > 0)`` step)."""
    alpha = _orders("order", order)
    flat = np.atleast_1d(alpha).ravel()
    k = _cumulant(pld, flat)
    lower = (k.lower / (flat - 1)).reshape(alpha.shape)
    upper = (k.upper / (flat - 1)).reshape(alpha.shape)
    return Bounds(_scalar(lower, order), _scalar(upper, order))


def renyi(pld: PrivacyLossDistribution, order):
    """Certified Rényi-DP curve: the composition is ``(alpha, eps_alpha)``-RDP with this
    ``eps_alpha`` (an upper bound) at each ``order = alpha > 1``.

    ``eps_alpha = max_direction sum_f k_f D_alpha(step_f)`` (Mironov 2017, Prop. 1), each step's
    divergence bounded from its per-step law, never from the composed grid.
    """
    return renyi_bounds(pld, order).upper


# ----------------------------------------------------------------- zCDP
def _step_rho(mechanism: Mechanism) -> float:
    """``sup_alpha D_alpha / alpha`` bound of one step (both directions)."""
    if type(mechanism) is Gaussian:
        return mechanism.mu**2 / 2
    if type(mechanism) is DiscreteGaussian:
        # D_alpha <= alpha D^2 / (2 s^2) with equality at integer alpha D (CKS20)
        return mechanism.sensitivity**2 / (2 * mechanism.sigma**2)
    if type(mechanism) is PoissonSampled:
        # D_alpha(sampled) <= D_alpha(base) by joint convexity, in both directions
        rho = _step_rho(mechanism.mechanism)
        return min(rho, _pure_rho(mechanism))
    return _pure_rho(mechanism)


def _largest_loss(mechanism: Mechanism) -> float:
    """Largest absolute finite loss over both directions (``inf`` if unbounded): the step is
    pure ``eps``-DP for this ``eps``."""
    largest = 0.0
    for direction in DIRECTIONS:
        law = mechanism.privacy_loss(direction)
        if law.infinity_mass > 0 or law.truncated_mass > 0:
            return math.inf
        if law.has_continuous_part:
            lo, hi = law.continuous_support
            largest = max(largest, abs(lo), abs(hi))
        if len(law.atom_losses):
            largest = max(largest, float(np.max(np.abs(law.atom_losses))))
    return largest


def _pure_rho(mechanism: Mechanism) -> float:
    """An ``eps``-DP step is ``eps^2/2``-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
    return _largest_loss(mechanism) ** 2 / 2


def zcdp_bounds(pld: PrivacyLossDistribution) -> Bounds:
    """``(lower, upper)`` bounds on the smallest ``rho`` with ``eps_alpha <= rho alpha`` for every
    ``alpha > 1`` (Bun & Steinke 2016).

    Upper: the smaller of ``sum_f k_f rho_f`` (closed forms per step: ``mu^2/2`` for Gaussians,
    sampled or not; ``eps^2/2`` for ``eps``-DP steps) and a sandwich over a geometric grid of
    orders, ``eps_alpha / alpha <= eps_{alpha_{i+1}} / alpha_i`` on ``[alpha_i, alpha_{i+1}]``
    (``eps_alpha`` does not decrease in ``alpha``), past whose end ``D_alpha / alpha`` is at most
    ``rho_f`` and, for an ``eps_f``-DP step, ``eps_f / alpha``.
    Lower: ``max_i eps_{alpha_i} / alpha_i`` from the lower Rényi bounds.
    """
    factors = _factors(pld)
    # each step's rho is a product of a few correctly rounded operations (3u relative, see
    # _step_rho) and the sum of N non-negative terms adds N u: widen by twice that, upward
    closed = round_up(
        math.fsum(k * _step_rho(m) for m, k in factors), 2 * (len(factors) + 4) * UNIT_ROUNDOFF
    )
    grid = np.concatenate(
        [[1 + 1e-6], 1 + np.geomspace(1e-5, 1e-2, 30), np.geomspace(1.011, 1e4, 300)]
    )
    # past the grid: D_alpha / alpha <= rho_f, and <= eps_f / alpha for an eps_f-DP step
    beyond = sum(k * min(_step_rho(m), _largest_loss(m) / grid[-1]) for m, k in factors)
    bounds = renyi_bounds(pld, grid)
    lower = float(np.max(bounds.lower / grid))
    with np.errstate(invalid="ignore"):
        sandwich = max(
            float(bounds.upper[0]),  # (1, alpha_0]: eps_alpha <= eps_{alpha_0}, alpha > 1
            float(np.max(bounds.upper[1:] / grid[:-1])),
            beyond,  # [alpha_last, inf)
        )
    upper = min(closed, sandwich)
    return Bounds(min(lower, upper), upper)


def zcdp(pld: PrivacyLossDistribution) -> float:
    """Certified zCDP parameter: ``eps_alpha <= rho alpha`` for all ``alpha > 1`` (``inf`` when
    no finite ``rho`` is known, e.g. an ``(epsilon, delta > 0)`` step)."""
    return zcdp_bounds(pld).upper


# ------------------------------------------------------------- conversion
def _check_orders(orders) -> np.ndarray:
    return np.atleast_1d(_orders("orders", DEFAULT_ORDERS if orders is None else orders))


def epsilon_from_renyi(curve_orders, curve_epsilons, delta):
    """Smallest ``epsilon`` the RDP curve ``(orders, eps_alpha)`` certifies at ``delta``:
    ``min_alpha eps_alpha + log(1 - 1/alpha) - (log delta + log alpha)/(alpha - 1)``, at least 0
    (Canonne, Kamath & Steinke 2020, Prop. 12; Asoodeh et al. 2021)."""
    alpha = np.atleast_1d(_orders("orders", curve_orders))
    eps_alpha = np.atleast_1d(np.asarray(curve_epsilons, dtype=float))
    if eps_alpha.shape != alpha.shape or np.any(np.isnan(eps_alpha)):
        raise ValueError("curve_epsilons must be one number per order, without NaN")
    d = check.array_in("delta", delta, 0.0, 1.0)
    flat = np.ravel(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        penalty = np.log1p(-1 / alpha) - np.log(alpha) / (alpha - 1)
        eps = eps_alpha[None, :] + penalty[None, :] - np.log(flat)[:, None] / (alpha - 1)[None, :]
    eps = np.where(np.isnan(eps), np.inf, eps)
    out = np.maximum(np.min(eps, axis=1), 0.0).reshape(d.shape)
    return _scalar(out, delta)


def delta_from_renyi(curve_orders, curve_epsilons, epsilon):
    """Smallest ``delta`` the RDP curve certifies at ``epsilon``:
    ``min_alpha exp((alpha - 1)(eps_alpha - epsilon)) (1 - 1/alpha)^(alpha - 1) / alpha``,
    at most 1."""
    alpha = np.atleast_1d(_orders("orders", curve_orders))
    eps_alpha = np.atleast_1d(np.asarray(curve_epsilons, dtype=float))
    if eps_alpha.shape != alpha.shape or np.any(np.isnan(eps_alpha)):
        raise ValueError("curve_epsilons must be one number per order, without NaN")
    e = check.array_in("epsilon", epsilon, 0.0, np.inf)
    flat = np.ravel(e)
    with np.errstate(over="ignore", invalid="ignore"):
        log_delta = (alpha - 1)[None, :] * (eps_alpha[None, :] - flat[:, None]) + (
            (alpha - 1) * np.log1p(-1 / alpha) - np.log(alpha)
        )[None, :]
    log_delta = np.where(np.isnan(log_delta), np.inf, log_delta)
    out = np.minimum(np.exp(np.min(log_delta, axis=1)), 1.0).reshape(e.shape)
    return _scalar(out, epsilon)


def _refined(pld, orders, score):
    """Orders plus a fine grid around the best of them for ``score`` (any order is valid, so
    refining only tightens the conversion)."""
    alpha = _check_orders(orders)
    if orders is not None:
        return alpha, renyi(pld, alpha)
    curve = renyi(pld, alpha)
    best = np.unique(np.argmin(np.atleast_2d(score(alpha, curve)), axis=1))
    fine = [np.linspace(alpha[max(i - 1, 0)], alpha[min(i + 1, len(alpha) - 1)], 41) for i in best]
    fine = np.concatenate(fine)
    return np.concatenate([alpha, fine]), np.concatenate([curve, renyi(pld, fine)])


def renyi_epsilon(pld: PrivacyLossDistribution, delta, *, orders=None):
    """Certified ``epsilon(delta)`` by RDP accounting: the certified Rényi curve of the
    composition converted with :func:`epsilon_from_renyi` at ``orders`` (default: a geometric
    grid refined around its best order) — what an RDP accountant reports, for comparison with
    ``pld.epsilon(delta)`` on the same composition."""
    d = check.array_in("delta", delta, 0.0, 1.0)
    flat = np.atleast_1d(d).ravel()

    def score(alpha, curve):
        with np.errstate(divide="ignore", invalid="ignore"):
            penalty = np.log1p(-1 / alpha) - np.log(alpha) / (alpha - 1)
            return curve[None, :] + penalty[None, :] - np.log(flat)[:, None] / (alpha - 1)

    alpha, curve = _refined(pld, orders, score)
    return epsilon_from_renyi(alpha, curve, delta)


def renyi_delta(pld: PrivacyLossDistribution, epsilon, *, orders=None):
    """Certified ``delta(epsilon)`` by RDP accounting (see :func:`renyi_epsilon`)."""
    e = check.array_in("epsilon", epsilon, 0.0, np.inf)
    flat = np.atleast_1d(e).ravel()

    def score(alpha, curve):
        with np.errstate(invalid="ignore", over="ignore"):
            return (alpha - 1)[None, :] * (curve[None, :] - flat[:, None]) + (
                (alpha - 1) * np.log1p(-1 / alpha) - np.log(alpha)
            )[None, :]

    alpha, curve = _refined(pld, orders, score)
    return delta_from_renyi(alpha, curve, epsilon)
