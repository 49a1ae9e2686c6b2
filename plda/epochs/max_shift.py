"""Laws of the largest coordinate of an epoch whose record shifts ``k`` of its ``t`` coordinates.

Gaussian (:class:`MaxShiftLaw`, :class:`MaxShiftManyLaw`) and Laplace coordinates
(:class:`LaplaceMaxShiftLaw`, :class:`LaplaceMaxShiftManyLaw`), against no shift. The largest
coordinate is a post-processing of the epoch's output, so its pair is dominated by the epoch's
in both directions: a certified *lower* pair for :class:`~plda.Shuffled` and
:class:`~plda.RandomAllocation` (``docs/howto/samplers.md``, "How the shuffled bracket is
certified").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import erfcx, log_ndtr, ndtri, ndtri_exp

from plda._internal.roots import increasing_inverse
from plda.mechanisms.law import PrivacyLossLaw

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_SQRT_2_OVER_PI, _SQRT_HALF = math.sqrt(2 / math.pi), math.sqrt(0.5)


def normal_log_pdf(z):
    """``log phi(z)``: the log density of the standard normal law.

    Parameters
    ----------
    z : float or ndarray
        Points.

    Returns
    -------
    float or ndarray
        ``-z^2 / 2 - log(sqrt(2 pi))``.
    """
    return -0.5 * z * z - _LOG_SQRT_2PI


def normal_reversed_hazard(z):
    """``phi(z) / Phi(z)``: the reversed hazard rate of the standard normal law.

    ``sqrt(2 / pi) / erfcx(-z / sqrt 2)``, accurate far in both tails (``log phi - log Phi``
    lost ``z^2`` ulps: NaN at ``z = -1e10``, which sent Newton steps to bisection).

    Parameters
    ----------
    z : float or ndarray
        Points.

    Returns
    -------
    ndarray
        ``phi(z) / Phi(z)``, the derivative of ``log Phi`` at ``z``.
    """
    return _SQRT_2_OVER_PI / erfcx(-np.asarray(z, dtype=float) * _SQRT_HALF)


@dataclass(frozen=True, eq=False)
class MaxShiftLaw(PrivacyLossLaw):
    """Loss law of the largest of ``T`` Gaussian coordinates, one of them shifted by ``mu``.

    ``Y = max_t X_t`` with ``X ~ N(mu e_J, I)``, ``J`` uniform on the ``T`` coordinates
    (``P``), against ``X ~ N(0, I)`` (``Q``): ``P(Y <= y) = Phi(y - mu) Phi(y)^(T-1)``,
    ``Q(Y <= y) = Phi(y)^T``. The loss
    ``l(y) = log((e^(mu y - mu^2/2) + (T-1) Phi(y-mu)/Phi(y)) / T)`` is increasing in ``y``
    (the ratio of cdfs is, by log-concavity of ``Phi``), so the law of the loss is that of
    ``Y`` through ``l``, inverted by safeguarded Newton; everything is evaluated from
    ``log_ndtr`` (no ``1 - Phi``).

    Attributes
    ----------
    mu : float
        The shift, ``sensitivity / sigma``.
    num_steps : int
        The number of coordinates ``T``, at least 2.
    """

    mu: float = 1.0
    num_steps: int = 2
    has_continuous_part = True

    @property
    def continuous_support(self):
        """Support of the continuous part: the whole real line."""
        return (-np.inf, np.inf)

    def _loss(self, y):
        y = np.asarray(y, dtype=float)
        m, t = self.mu, self.num_steps
        ratio = math.log(t - 1) + log_ndtr(y - m) - log_ndtr(y)
        return np.logaddexp(m * y - m * m / 2, ratio) - math.log(t)

    def _slope(self, y):
        y = np.asarray(y, dtype=float)
        m, t = self.mu, self.num_steps
        a = m * y - m * m / 2
        log_r = math.log(t - 1) + log_ndtr(y - m) - log_ndtr(y)
        # d/dy log Phi(z) = phi(z)/Phi(z)
        num_a = m
        num_r = normal_reversed_hazard(y - m) - normal_reversed_hazard(y)
        top = np.logaddexp(a, log_r)
        return np.exp(a - top) * num_a + np.exp(log_r - top) * num_r

    def _inverse(self, loss):
        """``y`` with ``l(y) = loss`` (vectorized; the loss is increasing in ``y``)."""
        return increasing_inverse(self._loss, self._slope, loss)

    def _log_cdf_y(self, y, hypothesis):
        t = self.num_steps
        if hypothesis == "P":
            return log_ndtr(y - self.mu) + (t - 1) * log_ndtr(y)
        return t * log_ndtr(y)

    def _cont_cdf(self, x, hypothesis):
        return np.exp(self._log_cdf_y(self._inverse(x), hypothesis))

    def _cont_sf(self, x, hypothesis):
        # 1 - e^{log cdf}, from expm1: no cancellation in the upper tail
        return -np.expm1(self._log_cdf_y(self._inverse(x), hypothesis))

    def _cont_pdf(self, x, hypothesis):
        y = self._inverse(x)
        m, t = self.mu, self.num_steps
        if hypothesis == "P":
            a = normal_log_pdf(y - m) + (t - 1) * log_ndtr(y)
            b = math.log(t - 1) + log_ndtr(y - m) + (t - 2) * log_ndtr(y) + normal_log_pdf(y)
            log_density = np.logaddexp(a, b)
        else:
            log_density = math.log(t) + (t - 1) * log_ndtr(y) + normal_log_pdf(y)
        return np.exp(log_density) / self._slope(y)

    def _cont_tail(self, mass, hypothesis):
        t = self.num_steps
        # below y_a both cdfs are <= Phi(y_a)^T = mass (Phi(y - mu) <= Phi(y), however many
        # coordinates are shifted); above y_b both sfs are <= T (1 - Phi(y_b - mu)) = mass
        # (union bound over the T coordinates)
        y_a = ndtri(math.exp(math.log(mass) / t))
        # in logs: mass / T underflows for the discretizer's far tail (1e-320) once T > 2000
        y_b = self.mu - ndtri_exp(math.log(mass) - math.log(t))
        return float(self._loss(np.array([y_a]))[0]), float(self._loss(np.array([y_b]))[0])


@dataclass(frozen=True, eq=False)
class MaxShiftManyLaw(MaxShiftLaw):
    """Loss law of the largest of ``t`` Gaussian coordinates, ``k`` of them shifted by ``mu``.

    ``Y = max_i X_i`` with ``X ~ N(mu 1_S, I_t)``, ``S`` a uniform ``k``-subset (``P``), against
    ``X ~ N(0, I_t)`` (``Q``): ``P(Y <= y) = Phi(y-mu)^k Phi(y)^(t-k)``,
    ``Q(Y <= y) = Phi(y)^t``. With ``R = Phi(y - mu) / Phi(y)`` and ``a = mu y - mu^2/2`` the
    loss ``l(y) = (k-1) log R + log((k/t) e^a + (1 - k/t) R)`` is increasing in ``y``, so the
    law of the loss is that of ``Y`` through ``l``. ``k = 1`` is :class:`MaxShiftLaw`.

    Attributes
    ----------
    mu : float
        The shift, ``sensitivity / sigma``.
    num_steps : int
        The number of coordinates ``t``.
    num_selected : int
        The number of shifted coordinates ``k``, in ``[1, t]``.
    """

    mu: float = 1.0
    num_steps: int = 2
    num_selected: int = 1
    def _parts(self, y):
        """``a(y)``, ``log R(y)`` and the log of the bracket in ``l``."""
        m, t, k = self.mu, self.num_steps, self.num_selected
        a = m * y - m * m / 2
        log_r = log_ndtr(y - m) - log_ndtr(y)
        if k == t:  # every coordinate shifted: the bracket is e^a
            return a, log_r, a
        return a, log_r, np.logaddexp(math.log(k / t) + a, math.log1p(-k / t) + log_r)

    def _loss(self, y):
        y = np.asarray(y, dtype=float)
        _, log_r, top = self._parts(y)
        return (self.num_selected - 1) * log_r + top

    def _slope(self, y):
        y = np.asarray(y, dtype=float)
        m, t, k = self.mu, self.num_steps, self.num_selected
        a, log_r, top = self._parts(y)
        d_log_r = normal_reversed_hazard(y - m) - normal_reversed_hazard(y)  # >= 0
        inner = np.exp(math.log(k / t) + a - top) * m
        if k < t:
            inner = inner + np.exp(math.log1p(-k / t) + log_r - top) * d_log_r
        return (k - 1) * d_log_r + inner

    def _log_cdf_y(self, y, hypothesis):
        t, k = self.num_steps, self.num_selected
        if hypothesis == "P":
            return k * log_ndtr(y - self.mu) + (t - k) * log_ndtr(y)
        return t * log_ndtr(y)

    def _cont_pdf(self, x, hypothesis):
        y = self._inverse(x)
        m, t, k = self.mu, self.num_steps, self.num_selected
        if hypothesis == "P":
            # d/dy [Phi(y-mu)^k Phi(y)^(t-k)]: the maximum is a shifted or an unshifted coordinate
            base = (k - 1) * log_ndtr(y - m) + (t - k - 1) * log_ndtr(y)
            shifted = math.log(k) + normal_log_pdf(y - m) + log_ndtr(y) + base
            if k < t:
                plain = math.log(t - k) + normal_log_pdf(y) + log_ndtr(y - m) + base
                log_density = np.logaddexp(shifted, plain)
            else:
                log_density = shifted
        else:
            log_density = math.log(t) + (t - 1) * log_ndtr(y) + normal_log_pdf(y)
        return np.exp(log_density) / self._slope(y)


# ------------------------------------------------------------------ Laplace coordinates
LOG2 = math.log(2.0)


def laplace_log_cdf(z):
    """``log F(z)``: the log cdf of the standard Laplace law.

    ``z - log 2`` below 0 and ``log1p(-e^-z / 2)`` above: no cancellation on either side.

    Parameters
    ----------
    z : float or ndarray
        Points.

    Returns
    -------
    ndarray
        ``log F(z)``.
    """
    z = np.asarray(z, dtype=float)
    with np.errstate(over="ignore"):
        return np.where(z < 0, z - LOG2, np.log1p(-0.5 * np.exp(-np.abs(z))))


def laplace_log_pdf(z):
    """``log f(z) = -|z| - log 2``: the log density of the standard Laplace law.

    Parameters
    ----------
    z : float or ndarray
        Points.

    Returns
    -------
    ndarray
        ``log f(z)``.
    """
    return -np.abs(np.asarray(z, dtype=float)) - LOG2


def laplace_reversed_hazard(z):
    """``f(z) / F(z)``: the reversed hazard rate of the standard Laplace law.

    Parameters
    ----------
    z : float or ndarray
        Points.

    Returns
    -------
    ndarray
        1 below 0, ``1 / (2 e^z - 1)`` above.
    """
    z = np.asarray(z, dtype=float)
    with np.errstate(over="ignore"):
        return np.where(z < 0, 1.0, 1.0 / (2.0 * np.exp(np.maximum(z, 0.0)) - 1.0))


@dataclass(frozen=True, eq=False)
class LaplaceMaxShiftLaw(PrivacyLossLaw):
    """Loss law of the largest of ``T`` Laplace coordinates, one of them shifted by ``m``.

    ``Y = max_t X_t``, ``X_t`` i.i.d. standard Laplace plus ``m`` on one uniformly random
    coordinate (``P``), against no shift (``Q``). With ``a = log f(y-m) - log f(y)`` and
    ``r = log F(y-m) - log F(y)`` the loss is ``l(y) = log((e^a + (T-1) e^r) / T)``: constant
    ``-m`` for ``y <= 0`` (an atom, of masses ``F(-m) F(0)^(T-1)`` under P and ``2^-T`` under
    Q), then strictly increasing towards ``log((e^m + T - 1) / T)``; the continuous part is
    read through the inverse of ``l`` on ``(0, inf)`` (safeguarded Newton).

    Attributes
    ----------
    m : float
        The shift in units of the scale, ``sensitivity / scale``.
    num_steps : int
        The number of coordinates ``T``, at least 2.
    """

    m: float = 1.0
    num_steps: int = 2
    has_continuous_part = True

    def __post_init__(self):
        m, t = self.m, self.num_steps
        # log-space masses of the atom: 2^-T underflows for T > 1074, the atom then carries 0
        log_q = -t * LOG2
        object.__setattr__(self, "atom_losses", np.array([-m]))
        object.__setattr__(self, "atom_probs", np.array([math.exp(log_q - m)]))

    @property
    def flat_end(self) -> float:
        """The point up to which the loss is constant (the atom): 0 here.

        Above it the loss is strictly increasing; subclasses with a shifted ``Q`` move it.
        """
        return 0.0

    @property
    def continuous_support(self):
        """Support of the continuous part: ``(-m, log((e^m + T - 1) / T))``."""
        m, t = self.m, self.num_steps
        return (-m, math.log((math.exp(m) + t - 1) / t))

    def _loss(self, y):
        y = np.asarray(y, dtype=float)
        m, t = self.m, self.num_steps
        a = laplace_log_pdf(y - m) - laplace_log_pdf(y)
        r = math.log(t - 1) + laplace_log_cdf(y - m) - laplace_log_cdf(y)
        return np.logaddexp(a, r) - math.log(t)

    def _slope(self, y):
        y = np.asarray(y, dtype=float)
        m, t = self.m, self.num_steps
        a = laplace_log_pdf(y - m) - laplace_log_pdf(y)
        r = math.log(t - 1) + laplace_log_cdf(y - m) - laplace_log_cdf(y)
        da = np.where((y > 0) & (y < m), 2.0, 0.0)
        dr = laplace_reversed_hazard(y - m) - laplace_reversed_hazard(y)
        top = np.logaddexp(a, r)
        return np.exp(a - top) * da + np.exp(r - top) * dr

    def _inverse(self, loss):
        """``y > flat_end`` with ``l(y) = loss`` for losses inside the continuous support
        (bisection on a bracket grown by doubling, then safeguarded Newton; ``inf`` where the
        loss is not reached)."""
        loss = np.asarray(loss, dtype=float)
        start = self.flat_end
        lo = np.full(loss.shape, start)
        hi = lo + 1.0
        for _ in range(12):  # up to 4096 past the flat end: beyond, e^-y is below every gap
            grow = self._loss(hi) < loss
            if not grow.any():
                break
            lo = np.where(grow, hi, lo)
            hi = np.where(grow, 2 * hi - start, hi)
        unreached = self._loss(hi) < loss
        # safeguarded Newton: a Newton step inside the bracket, else bisection
        y = 0.5 * (lo + hi)
        for _ in range(100):
            f = self._loss(y) - loss
            lo = np.where(f < 0, y, lo)
            hi = np.where(f > 0, y, hi)
            with np.errstate(divide="ignore", invalid="ignore"):
                nxt = y - f / self._slope(y)
            nxt = np.where((nxt > lo) & (nxt < hi), nxt, 0.5 * (lo + hi))
            done = (np.abs(nxt - y) <= 4e-16 * (1 + np.abs(y))) | (f == 0) | unreached
            y = nxt
            if np.all(done):
                break
        return np.where(unreached, np.inf, y)

    def _log_cdf_y(self, y, hypothesis):
        t = self.num_steps
        if hypothesis == "P":
            return laplace_log_cdf(y - self.m) + (t - 1) * laplace_log_cdf(y)
        return t * laplace_log_cdf(y)

    def _points(self, x):
        lo, hi = self.continuous_support
        x = np.asarray(x, dtype=float)
        y = self._inverse(np.clip(x, lo, hi))
        return np.where(x <= lo, self.flat_end, np.where(x >= hi, np.inf, y))

    def _cont_cdf(self, x, hypothesis):
        # F(y(x)) - F(y0) = F(y) (1 - e^{-d}), d = log F(y) - log F(y0) >= 0, y0 the flat
        # end: no cancellation near the atom, and no overflow where F(y0) is subnormal (2^-T
        # for long epochs: F(y0) e^d overflowed to inf for T = 1000, m = 20)
        y = self._points(x)
        at_zero = self._log_cdf_y(np.full(1, self.flat_end), hypothesis)[0]
        with np.errstate(invalid="ignore"):
            log_f = self._log_cdf_y(y, hypothesis)
            out = np.exp(log_f) * -np.expm1(-np.maximum(log_f - at_zero, 0.0))
        return np.where(np.isinf(y), -math.expm1(at_zero), out)

    def _cont_sf(self, x, hypothesis):
        y = self._points(x)
        lo, _ = self.continuous_support
        at_zero = self._log_cdf_y(np.full(1, self.flat_end), hypothesis)[0]
        out = -np.expm1(self._log_cdf_y(y, hypothesis))
        out = np.where(np.isinf(y), 0.0, out)
        return np.where(np.asarray(x) <= lo, -math.expm1(at_zero), out)

    def _cont_pdf(self, x, hypothesis):
        x = np.asarray(x, dtype=float)
        lo, hi = self.continuous_support
        inside = (x > lo) & (x < hi)
        y = self._points(np.where(inside, x, 0.5 * (lo + hi)))
        m, t = self.m, self.num_steps
        if hypothesis == "P":
            first = laplace_log_pdf(y - m) + (t - 1) * laplace_log_cdf(y)
            second = (math.log(t - 1) + laplace_log_cdf(y - m) + (t - 2) * laplace_log_cdf(y)
                      + laplace_log_pdf(y))
            log_density = np.logaddexp(first, second)
        else:
            log_density = math.log(t) + (t - 1) * laplace_log_cdf(y) + laplace_log_pdf(y)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = np.exp(log_density) / self._slope(y)
        return np.where(inside & np.isfinite(out), out, 0.0)

    def _cont_tail(self, mass, hypothesis):
        return self.continuous_support


@dataclass(frozen=True, eq=False)
class LaplaceMaxShiftManyLaw(LaplaceMaxShiftLaw):
    """Loss law of the largest of ``t`` Laplace coordinates, ``k`` of them shifted by ``m``.

    ``P(Y <= y) = F(y-m)^k F(y)^(t-k)``, ``Q(Y <= y) = F(y)^t``: an atom at loss ``-k m`` for
    ``y <= 0`` (masses ``2^-t e^(-k m)`` under P and ``2^-t`` under Q), then
    ``l(y) = (k-1) r + log((k/t) e^a + (1 - k/t) e^r)`` (``a``, ``r`` as in
    :class:`LaplaceMaxShiftLaw`), strictly increasing towards ``log((k/t) e^m + 1 - k/t)``.
    ``k = 1`` is :class:`LaplaceMaxShiftLaw`.

    Attributes
    ----------
    m : float
        The shift in units of the scale, ``sensitivity / scale``.
    num_steps : int
        The number of coordinates ``t``.
    num_selected : int
        The number of shifted coordinates ``k``, in ``[1, t]``.
    """

    num_selected: int = 1

    def __post_init__(self):
        m, t, k = self.m, self.num_steps, self.num_selected
        object.__setattr__(self, "atom_losses", np.array([-k * m]))
        # 2^-t underflows for t > 1074: the atom then carries 0
        object.__setattr__(self, "atom_probs", np.array([math.exp(-t * LOG2 - k * m)]))

    @property
    def continuous_support(self):
        """Support of the continuous part: ``(-k m, log((k/t) e^m + 1 - k/t))``."""
        m, t, k = self.m, self.num_steps, self.num_selected
        return (-k * m, math.log((k / t) * math.exp(m) + 1 - k / t))

    def _parts(self, y):
        m, t, k = self.m, self.num_steps, self.num_selected
        a = laplace_log_pdf(y - m) - laplace_log_pdf(y)
        r = laplace_log_cdf(y - m) - laplace_log_cdf(y)
        if k == t:
            return a, r, a
        return a, r, np.logaddexp(math.log(k / t) + a, math.log1p(-k / t) + r)

    def _loss(self, y):
        y = np.asarray(y, dtype=float)
        _, r, top = self._parts(y)
        return (self.num_selected - 1) * r + top

    def _slope(self, y):
        y = np.asarray(y, dtype=float)
        m, t, k = self.m, self.num_steps, self.num_selected
        a, r, top = self._parts(y)
        da = np.where((y > 0) & (y < m), 2.0, 0.0)
        dr = laplace_reversed_hazard(y - m) - laplace_reversed_hazard(y)
        inner = np.exp(math.log(k / t) + a - top) * da
        if k < t:
            inner = inner + np.exp(math.log1p(-k / t) + r - top) * dr
        return (k - 1) * dr + inner

    def _log_cdf_y(self, y, hypothesis):
        t, k = self.num_steps, self.num_selected
        if hypothesis == "P":
            return k * laplace_log_cdf(y - self.m) + (t - k) * laplace_log_cdf(y)
        return t * laplace_log_cdf(y)

    def _cont_pdf(self, x, hypothesis):
        x = np.asarray(x, dtype=float)
        lo, hi = self.continuous_support
        inside = (x > lo) & (x < hi)
        y = self._points(np.where(inside, x, 0.5 * (lo + hi)))
        m, t, k = self.m, self.num_steps, self.num_selected
        if hypothesis == "P":
            base = (k - 1) * laplace_log_cdf(y - m) + (t - k - 1) * laplace_log_cdf(y)
            shifted = math.log(k) + laplace_log_pdf(y - m) + laplace_log_cdf(y) + base
            if k < t:
                plain = (math.log(t - k) + laplace_log_pdf(y) + laplace_log_cdf(y - m)
                         + base)
                log_density = np.logaddexp(shifted, plain)
            else:
                log_density = shifted
        else:
            log_density = math.log(t) + (t - 1) * laplace_log_cdf(y) + laplace_log_pdf(y)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = np.exp(log_density) / self._slope(y)
        return np.where(inside & np.isfinite(out), out, 0.0)
