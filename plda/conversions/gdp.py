"""Gaussian differential privacy of a composition (Dong, Roth & Su 2019).

``mu``-GDP means ``delta(eps) <= Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` for all
``eps >= 0`` (ibid., Cor. 2.13): certified through the pessimistic profile, refuted through the
optimistic one, exact for compositions of Gaussians (Cor. 3.3). See ``docs/tradeoff.md``."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import erfcx, log_ndtr, ndtr, ndtri

from plda._internal import validation as check
from plda._internal.errors import GaussianDPWarning, warn
from plda._internal.floats import UNIT_ROUNDOFF, round_down, round_up
from plda.conversions.common import scalar_like, unit_interval
from plda.conversions.composed import ComposedLaws
from plda.conversions.per_step import step_gdp_mu
from plda.conversions.profile import (
    DELTA_FLOOR,
    ProfileSamples,
    chernoff_at,
    grid_segments,
    segment_values,
    select_laws,
    symmetric_profile,
)
from plda.conversions.tradeoff import tradeoff_bounds
from plda.mechanisms.gaussian import Gaussian


def gaussian_tradeoff(alpha, mu: float):
    """The tradeoff function of ``mu``-GDP: ``G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu)``.

    Parameters
    ----------
    alpha : float or array_like
        False-positive rates (type I errors), in [0, 1].
    mu : float
        The GDP parameter, ``>= 0``.

    Returns
    -------
    float or numpy.ndarray
        ``G_mu(alpha)``, shaped like ``alpha``.

    Raises
    ------
    ValueError
        If ``mu`` is negative or NaN, or an ``alpha`` is outside [0, 1].
    TypeError
        If a value is not numeric.
    """
    mu = check.nonnegative_float("mu", mu, upper=math.inf)
    a = unit_interval("alpha", alpha)
    with np.errstate(divide="ignore"):
        value = ndtr(-ndtri(a) - mu)
    return scalar_like(np.where(a >= 1, 0.0, np.where(a <= 0, 1.0, value)), alpha)


def log_gaussian_delta(epsilon, mu: float) -> np.ndarray:
    """``log delta_mu(eps)`` of ``mu``-GDP, accurate far into the tail.

    ``delta_mu(eps) = Phi(a) - e^eps Phi(a - mu)`` with ``a = -eps/mu + mu/2``; where the
    difference cancels it is evaluated as ``phi(a) (m(-a) - m(mu - a))``, ``m(x) = Phi(-x) /
    phi(x) = sqrt(pi/2) erfcx(x/sqrt2)`` the Mills ratio (since ``e^eps phi(a - mu) = phi(a)``).
    Arguments are not checked.

    Parameters
    ----------
    epsilon : float or array_like
        Where the profile is read.
    mu : float
        The GDP parameter, ``>= 0``.

    Returns
    -------
    numpy.ndarray
        ``log delta_mu(epsilon)``, shaped like ``epsilon``.
    """
    eps = np.asarray(epsilon, dtype=float)
    if mu <= 0:
        return np.where(eps >= 0, -np.inf, np.log(-np.expm1(eps)))
    if mu <= _MU_SERIES:
        return _log_gaussian_delta_small(eps, mu)
    a = -eps / mu + mu / 2
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        near = np.log(np.maximum(ndtr(a) - np.exp(eps) * ndtr(a - mu), 0.0))
        mills = erfcx(-a / math.sqrt(2)) - erfcx((mu - a) / math.sqrt(2))
        far = -0.5 * a * a - 0.5 * math.log(2 * math.pi) + 0.5 * math.log(math.pi / 2)
        far = far + np.log(np.maximum(mills, 0.0))
    # the direct form cancels once delta is far below Phi(a); the Mills form needs a < 0
    return np.where(a < -1.0, far, near)


#: below this ``mu`` both forms cancel (relative error ~u/mu); the series' error is ~mu^2
_MU_SERIES = 1e-5


def _log_gaussian_delta_small(eps: np.ndarray, mu: float) -> np.ndarray:
    """``log delta_mu(eps)`` for a tiny ``mu``: with ``m = -eps/mu`` (the midpoint of ``a`` and
    ``b = a - mu``), ``delta = Phi(b) (e^r - e^eps)``, ``r = log Phi(a) - log Phi(b) = mu h(m) +
    O(mu^3)`` (``h = phi/Phi``, odd Taylor terms about ``m``) and ``eps = -mu m``, so ``log delta
    = log Phi(b) + eps + log expm1(mu g(m))``, ``g = h(m) + m > 0``: no cancellation, relative
    truncation ``O(mu^2)``."""
    x = eps / mu  # -m >= 0 for eps >= 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # g = (1 - x M(x)) / M(x), M(x) = Phi(-x) / phi(x) the Mills ratio; 1 - x M(x) cancels
        # (~1/x^2) for large x: there its asymptotic series (next term < 1e-20 relatively)
        mills = math.sqrt(math.pi / 2) * erfcx(x / math.sqrt(2))
        y = 1.0 / np.maximum(x, 1.0) ** 2
        series = y * (1 - y * (3 - y * (15 - y * (105 - y * 945))))
        g = np.where(x >= 100, series, 1.0 - x * mills) / mills
        out = log_ndtr(-x - mu / 2) + eps + np.log(np.expm1(mu * g))
        return np.where(eps >= 0, out, np.log(-np.expm1(eps)))


def gaussian_delta(epsilon, mu: float):
    """Privacy profile of ``mu``-GDP (Dong, Roth & Su 2019, Cor. 2.13).

    ``delta_mu(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``.

    Parameters
    ----------
    epsilon : float or array_like
        Where the profile is read, ``>= 0``.
    mu : float
        The GDP parameter, ``>= 0``.

    Returns
    -------
    float or numpy.ndarray
        ``delta_mu(epsilon)``, shaped like ``epsilon``.

    Raises
    ------
    ValueError
        If ``mu`` or an ``epsilon`` is negative or NaN.
    TypeError
        If a value is not numeric.
    """
    mu = check.nonnegative_float("mu", mu, upper=math.inf)
    e = check.array_in("epsilon", epsilon, 0.0, np.inf)
    return scalar_like(np.exp(log_gaussian_delta(e, mu)), epsilon)


@dataclass(frozen=True)
class GaussianDPSummary:
    """Gaussian-DP reading of a composition: the certified ``mu``, its refutation and a best fit.

    Attributes
    ----------
    mu
        Certified: the composition is ``(eps, max(delta_mu(eps), delta_floor))``-DP for every
        ``eps >= 0`` — ``mu``-GDP wherever the GDP profile is above ``delta_floor`` (``inf`` if
        no ``mu`` is certified).
    mu_lower
        No ``mu`` below this satisfies that: the optimistic profile already exceeds it.
    best_fit
        ``mu`` whose ``G_mu`` is closest to the composition's tradeoff curve in the sup norm —
        an approximation, not a guarantee.
    max_deviation
        That sup-norm distance ``max_alpha |f(alpha) - G_best_fit(alpha)|``.
    delta_floor
        The profile level below which the comparison stops.
    """

    mu: float
    mu_lower: float
    best_fit: float
    max_deviation: float
    delta_floor: float = DELTA_FLOOR


def _threshold_mu(holds) -> tuple[float, float]:
    """``(lo, hi)`` around the threshold of a predicate that is monotone in ``mu``: ``holds`` was
    false at ``lo`` and true at ``hi``, ``hi / lo <= 1 + 1e-10`` (bisection in log scale);
    ``(inf, inf)`` if it holds for no ``mu <= 1e12``, ``(0, hi)`` if it holds down to 1e-12."""
    hi = 1.0
    while not holds(hi):
        hi *= 4.0
        if hi > 1e12:
            return math.inf, math.inf
    lo = hi / 4.0
    while holds(lo):
        hi, lo = lo, lo / 4.0
        if lo < 1e-12:
            return 0.0, hi
    while hi / lo > 1 + 1e-10:
        mid = math.sqrt(lo * hi)
        if holds(mid):
            hi = mid
        else:
            lo = mid
    return lo, hi


def _gdp_refutation(samples: ProfileSamples, delta_floor: float):
    """``mu -> (optimistic profile <= max(delta_mu, floor) at every sample)``: where it fails,
    the true profile (above the optimistic one) exceeds ``delta_mu`` too."""
    keep = (samples.epsilon >= 0) & (samples.delta > delta_floor)
    eps, log_delta = samples.epsilon[keep], np.log(samples.delta[keep])

    def holds(mu: float) -> bool:
        return bool(np.all(log_delta <= log_gaussian_delta(eps, mu)))

    return holds


def _gdp_certificate(composed: ComposedLaws, delta_floor: float):
    """``mu -> (certified profile <= max(delta_mu, floor) for every eps >= 0)``, or ``None`` when
    the certified profile never gets below the floor.

    On each stretch ``[eps_0, eps_1]`` of one line (a grid segment; those below the support
    merged, :func:`~plda.conversions.profile.grid_segments`) a direction's profile is at most
    ``A - x B`` (``x = e^eps``) while ``delta_mu`` is convex in ``x`` with slope
    ``-Phi(-eps/mu - mu/2)``, so ``delta_mu - (A - x B)`` is at least its tangent at ``x_0``: the
    stretch is certified when
    ``delta_mu(eps_0) >= A - x_0 B + max(0, Phi(-eps_0/mu - mu/2) - B) (x_1 - x_0)``, or when
    the Chernoff bound at ``eps_0`` is below ``delta_mu(eps_1)`` (both profiles decrease), or
    when ``A - x_0 B`` is below the floor. Past the grid, consecutive Chernoff-tail samples are
    compared the same way, and the last one must be below the floor.
    """
    laws = select_laws(composed, "upper", None)
    step = laws[0].step
    left, m = grid_segments(laws)
    eps0, eps1 = left * step, m * step
    x0, x1 = np.exp(eps0), np.exp(eps1)
    checks = []
    for law in laws:
        a, b, _ = law.segments()
        k = np.clip(m - law.offset, 0, len(law.probs))
        value = segment_values(law, k, x0)
        chernoff = (chernoff_at(law, eps0) if law.chernoff() is not None
                    else np.full(len(m), np.inf))
        active = (value > delta_floor) & (chernoff > delta_floor)
        checks.append(
            (
                eps0[active],
                eps1[active],
                value[active],
                b[k][active],
                np.log(chernoff[active]),
                x1[active] - x0[active],
            )
        )
    tail = symmetric_profile(composed, "upper")
    beyond = tail.epsilon >= eps1[-1] if len(eps1) else tail.epsilon >= 0
    t_eps, t_delta = tail.epsilon[beyond], tail.delta[beyond]
    if len(t_delta) and t_delta[-1] > delta_floor:
        return None
    t_active = t_delta[:-1] > delta_floor
    t_at, t_log = t_eps[1:][t_active], np.log(t_delta[:-1][t_active])

    def holds(mu: float) -> bool:
        for e0, e1, value, slope_b, log_chernoff, dx in checks:
            log_mu0 = log_gaussian_delta(e0, mu)
            q_tail = ndtr(-e0 / mu - mu / 2)
            need = value + np.maximum(0.0, q_tail - slope_b) * dx
            tangent = np.log(np.maximum(need, 1e-320)) <= log_mu0
            sandwich = log_chernoff <= log_gaussian_delta(e1, mu)
            if not np.all(tangent | sandwich):
                return False
        return bool(np.all(t_log <= log_gaussian_delta(t_at, mu)))

    return holds


def _floor(delta_floor) -> float:
    return check.fraction("delta_floor", delta_floor, low=DELTA_FLOOR, closed_low=True)


def gdp_mu(composed: ComposedLaws, *, delta_floor: float = DELTA_FLOOR) -> float:
    """Smallest certified ``mu`` such that the composition is ``mu``-GDP.

    Exact for Gaussian steps (Dong, Roth & Su 2019, Cor. 3.3); else certified by the pessimistic
    profile, segment by segment, down to ``delta_floor``.

    Parameters
    ----------
    composed : ComposedLaws
        The composition.
    delta_floor : float, optional
        The profile level below which the comparison stops, in [1e-250, 1).

    Returns
    -------
    float
        ``mu``; ``inf`` when none up to 1e12 is certified, with a ``GaussianDPWarning`` saying
        why and which ``delta_floor`` to pass instead.

    Raises
    ------
    ValueError
        If ``delta_floor`` is out of range.
    TypeError
        If it is not a real number.
    """
    floor = _floor(delta_floor)
    exact = gaussian_mu(composed.steps, upper=True)
    if exact is not None:
        return exact
    holds = _gdp_certificate(composed, floor)
    mu = math.inf if holds is None else _threshold_mu(holds)[1]
    # the steps' dominating Gaussian pairs, composed: certified at every delta, but without
    # the amplification the profile sees (a grid that failed, a profile above the floor)
    # (laws given without their steps: none known)
    dominated = _quadrature([(step_gdp_mu(m), k) for m, k in composed.steps], upper=True) \
        if composed.steps else math.inf
    if mu == math.inf:
        reason = _no_mu_reason(composed, floor)
        if dominated < math.inf:
            reason += (f"; returned instead: mu = {dominated:.6g}, of the Gaussian pairs that "
                       "dominate the steps (certified, without amplification by sampling)")
        warn(reason, GaussianDPWarning)
    return min(mu, dominated)


def _no_mu_reason(composed: ComposedLaws, floor: float) -> str:
    """Why no finite ``mu`` is certified at ``floor``, and what to pass instead."""
    laws = select_laws(composed, "upper", None)
    mass = max(law.infinity_mass for law in laws)
    instead = (
        "gdp_summary().best_fit gives the closest mu (an approximation, not a bound); "
        "epsilon_bounds and tradeoff_bounds remain certified"
    )
    if mass >= floor:
        return (
            f"gdp_mu: no finite mu is certified at delta_floor={floor:g}: the certified upper "
            f"bound puts probability {mass:.3g} on an infinite privacy loss (a mechanism with a "
            "delta, or an analysis whose bound keeps one), so delta(eps) >= that mass for every "
            f"eps, which no Gaussian-DP curve allows; pass delta_floor above {mass:.3g} to "
            f"certify mu-GDP above it, or note that {instead}"
        )
    plateau = float(np.min(symmetric_profile(composed, "upper").delta))
    if plateau > floor:
        return (
            f"gdp_mu: no finite mu is certified at delta_floor={floor:g}: the certified privacy "
            f"profile gets no lower than {plateau:.3g} (the resolution of the composition's "
            f"grid); pass delta_floor above {plateau:.3g} (e.g. 1e-9) to certify mu-GDP above "
            f"it, or note that {instead}"
        )
    return (
        f"gdp_mu: no mu up to 1e12 is certified at delta_floor={floor:g} (the certified "
        f"profile decays more slowly than any Gaussian-DP curve above the floor); pass a larger "
        f"delta_floor (e.g. {max(1e-9, min(1e-3, floor * 1e3)):g}), or note that {instead}"
    )


def gaussian_mu(steps, *, upper: bool) -> float | None:
    """``sqrt(sum_f k_f mu_f^2)`` when every step is a plain Gaussian, else None.

    A composition of Gaussians is exactly GDP with that ``mu`` (Dong, Roth & Su 2019,
    Cor. 3.3).

    Parameters
    ----------
    steps : tuple
        ``((mechanism, count), ...)`` under add/remove semantics.
    upper : bool
        Round up (True) or down.

    Returns
    -------
    float or None
        The rounded ``mu``; None if a step is not a :class:`~plda.Gaussian`.
    """
    if not steps or any(type(mechanism) is not Gaussian for mechanism, _ in steps):
        return None
    return _quadrature([(mechanism.mu, count) for mechanism, count in steps], upper=upper)


def _quadrature(terms, *, upper: bool) -> float:
    """``sqrt(sum k mu^2)`` over ``(mu, k)`` terms, rounded up (or down); ``inf`` if a ``mu``
    is."""
    # mu_f = sensitivity / sigma and its square are correctly rounded (2u), the sum of N
    # non-negative terms adds N u and the square root halves the relative error and adds u: the
    # float is within (N + 4) u of the exact value, and is widened by twice that
    total = sum(count * mu**2 for mu, count in terms)
    if not math.isfinite(total):
        return math.inf
    error = 2 * (len(terms) + 4) * UNIT_ROUNDOFF
    value = math.sqrt(total)
    return round_up(value, error) if upper else round_down(value, error)


def gaussian_dp(composed: ComposedLaws, *, delta_floor: float = DELTA_FLOOR) -> GaussianDPSummary:
    """Gaussian-DP reading of a composition: certified ``mu``, refuted ``mu`` and best fit.

    Parameters
    ----------
    composed : ComposedLaws
        The composition.
    delta_floor : float, optional
        The profile level below which the comparison stops, in [1e-250, 1).

    Returns
    -------
    GaussianDPSummary
        ``mu`` (:func:`gdp_mu`), ``mu_lower`` (no smaller ``mu`` holds), ``best_fit`` (an
        approximation, not a guarantee) and its sup-norm deviation.

    Raises
    ------
    ValueError
        If ``delta_floor`` is out of range.
    TypeError
        If it is not a real number.
    """
    floor = _floor(delta_floor)
    mu = gdp_mu(composed, delta_floor=floor)
    below = gaussian_mu(composed.steps, upper=False)
    if below is not None:
        return GaussianDPSummary(
            mu=mu, mu_lower=below, best_fit=mu, max_deviation=0.0, delta_floor=floor
        )
    refutation = _gdp_refutation(symmetric_profile(composed, "lower"), floor)
    mu_lower = min(_threshold_mu(refutation)[0], mu)
    # sup-norm fit on a grid dense at both ends of [0, 1]
    alpha = ndtr(np.linspace(-9, 9, 801))
    lower, upper = tradeoff_bounds(composed, alpha)
    middle = 0.5 * (lower + upper)

    def distance(m):
        return float(np.max(np.abs(middle - ndtr(-ndtri(alpha) - m))))

    hi = max(mu_lower, 1e-3) * 4 if math.isfinite(mu_lower) else 1e3
    fit = minimize_scalar(distance, bounds=(0.0, hi), method="bounded", options={"xatol": 1e-10})
    return GaussianDPSummary(
        mu=mu,
        mu_lower=mu_lower,
        best_fit=float(fit.x),
        max_deviation=float(fit.fun),
        delta_floor=floor,
    )


@dataclass(frozen=True)
class GaussianComparison:
    """A composition's tradeoff bounds next to ``G_mu`` on the same ``alpha``.

    Attributes
    ----------
    alpha : numpy.ndarray
        The false-positive rates.
    lower, upper : numpy.ndarray
        Certified bounds on the composition's tradeoff curve there.
    gaussian : numpy.ndarray
        ``G_mu(alpha)`` (zeros if ``mu`` is infinite).
    mu : float
        The GDP parameter compared with.
    """

    alpha: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    gaussian: np.ndarray
    mu: float


def gdp_comparison(composed: ComposedLaws, alpha=None, mu: float | None = None):
    """The composition's tradeoff bounds and ``G_mu`` on the same false-positive rates.

    Parameters
    ----------
    composed : ComposedLaws
        The composition.
    alpha : array_like, optional
        False-positive rates in [0, 1]; default: 400 points dense at both ends.
    mu : float, optional
        The GDP parameter; default: the certified :func:`gdp_mu`.

    Returns
    -------
    GaussianComparison
        Both curves.

    Raises
    ------
    ValueError
        If an ``alpha`` is outside [0, 1].
    """
    a = ndtr(np.linspace(-8, 8, 400)) if alpha is None else unit_interval("alpha", alpha)
    a = np.atleast_1d(a)
    if mu is None:
        mu = gdp_mu(composed)
    lower, upper = tradeoff_bounds(composed, a)
    if math.isfinite(mu):
        reference = gaussian_tradeoff(a, mu)
    else:
        reference = np.zeros_like(a)
    return GaussianComparison(
        alpha=a, lower=lower, upper=upper, gaussian=np.asarray(reference), mu=float(mu)
    )
