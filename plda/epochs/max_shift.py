"""Laws of the largest coordinate of an epoch whose record shifts ``k`` of its ``t`` coordinates,
against no shift: Gaussian (:class:`MaxShiftLaw` for ``k = 1``, the lower pair of
:class:`~plda.Shuffled`; :class:`MaxShiftManyLaw` for ``k`` of ``t``) and Laplace coordinates
(:class:`LaplaceMaxShiftLaw`, :class:`LaplaceMaxShiftManyLaw`).

A certified *lower* pair for :class:`~plda.Shuffled` and for :class:`~plda.RandomAllocation`:
the maximum coordinate is a post-processing of the epoch's output, so its pair is dominated by
the epoch's own pair in both directions (data processing inequality for the hockey-stick
divergence), and per-epoch post-processings compose.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr, ndtri, ndtri_exp

from plda._internal.roots import increasing_inverse
from plda.mechanisms.law import PrivacyLossLaw

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def normal_log_pdf(z):
    """``log phi(z)`` of the standard normal law."""
    return -0.5 * z * z - _LOG_SQRT_2PI


def normal_reversed_hazard(z):
    """``phi(z) / Phi(z)`` from logs (no ``1 - Phi``)."""
    return np.exp(normal_log_pdf(z) - log_ndtr(z))


@dataclass(frozen=True, eq=False)
class MaxShiftLaw(PrivacyLossLaw):
    r"""Loss law of ``Y = max_t X_t`` with ``X ~ N(mu e_J, I)``, ``J`` uniform on ``T`` coordinates
    (``P``), against ``X ~ N(0, I)`` (``Q``).

    ``P(Y <= y) = Phi(y - mu) Phi(y)^(T-1)``, ``Q(Y <= y) = Phi(y)^T``, and the loss
    ``l(y) = log((e^(mu y - mu^2/2) + (T-1) Phi(y-mu)/Phi(y)) / T)`` is increasing in ``y``
    (both terms are: the Gaussian likelihood ratio and, by log-concavity of ``Phi``, the ratio
    of cdfs), so the law of the loss is that of ``Y`` through ``l``; ``l`` is inverted by a
    safeguarded Newton iteration. Everything is evaluated from ``log_ndtr`` (no ``1 - Phi``).
    """

    mu: float = 1.0
    num_steps: int = 2
    has_continuous_part = True

    @property
    def continuous_support(self):
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
    r"""Loss law of ``Y = max_i X_i`` with ``X ~ N(mu 1_S, I_t)``, ``S`` a uniform ``k``-subset
    of the ``t`` coordinates (``P``), against ``X ~ N(0, I_t)`` (``Q``).

    Given ``S`` the coordinates are independent, and the cdf of their maximum does not depend
    on which ``k`` are shifted:

    .. math::

        P(Y \le y) = \Phi(y-\mu)^k \Phi(y)^{t-k}, \qquad Q(Y \le y) = \Phi(y)^t .

    With ``R(y) = Phi(y - mu) / Phi(y)`` and ``a(y) = mu y - mu^2/2`` the density ratio is

    .. math::

        \ell(y) = (k-1) \log R + \log\Big(\tfrac{k}{t} e^{a} + (1 - \tfrac{k}{t}) R\Big),

    increasing in ``y`` (``R`` is, by log-concavity of ``Phi``; so is ``e^a``), so the law of
    the loss is that of ``Y`` through ``l``, inverted by safeguarded Newton. ``k = 1`` is the
    law of :class:`MaxShiftLaw`, whose loss map it replaces (the cdf, sf and tail points are
    its, through ``_log_cdf_y``).
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
    """``log F(z)`` of the standard Laplace law, without cancellation on either side."""
    z = np.asarray(z, dtype=float)
    with np.errstate(over="ignore"):
        return np.where(z < 0, z - LOG2, np.log1p(-0.5 * np.exp(-np.abs(z))))


def laplace_log_pdf(z):
    return -np.abs(np.asarray(z, dtype=float)) - LOG2


def laplace_reversed_hazard(z):
    """``f(z) / F(z)``: 1 below 0, ``1 / (2 e^z - 1)`` above."""
    z = np.asarray(z, dtype=float)
    with np.errstate(over="ignore"):
        return np.where(z < 0, 1.0, 1.0 / (2.0 * np.exp(np.maximum(z, 0.0)) - 1.0))


@dataclass(frozen=True, eq=False)
class LaplaceMaxShiftLaw(PrivacyLossLaw):
    r"""Loss law of ``Y = max_t X_t`` with ``X_t`` i.i.d. standard Laplace plus ``m`` on one
    uniformly random coordinate (``P``), against no shift (``Q``).

    With ``a(y) = log f(y-m) - log f(y)`` and ``r(y) = log F(y-m) - log F(y)`` the loss is
    ``l(y) = log((e^a + (T-1) e^r) / T)``: constant ``-m`` for ``y <= 0`` (an atom, of masses
    ``F(-m) F(0)^(T-1)`` under P and ``F(0)^T = 2^-T`` under Q), then strictly increasing
    towards ``log((e^m + T - 1) / T)`` as ``y -> inf`` (``a`` and ``r`` are nondecreasing and
    ``r`` increases strictly on ``y > 0``). The continuous part is read through the inverse of
    ``l`` on ``(0, inf)``, found by safeguarded Newton iteration.
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
        """The loss is constant (the atom) for ``y <= flat_end`` and strictly increasing
        above: 0 here (subclasses with a shifted ``Q`` move it)."""
        return 0.0

    @property
    def continuous_support(self):
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
    r"""Loss law of ``Y = max_i X_i``, ``X_i`` i.i.d. standard Laplace plus ``m`` on a uniform
    ``k``-subset of the ``t`` coordinates (``P``), against no shift (``Q``); ``k = 1`` is
    :class:`LaplaceMaxShiftLaw`.

    ``P(Y <= y) = F(y-m)^k F(y)^(t-k)``, ``Q(Y <= y) = F(y)^t``. For ``y <= 0`` the ratio of
    the two is ``e^(-k m)``: an atom at loss ``-k m`` of masses ``2^-t e^(-k m)`` (P) and
    ``2^-t`` (Q). Above, with ``a = log f(y-m) - log f(y)`` and ``r = log F(y-m) - log F(y)``
    (both nondecreasing, ``r`` strictly for ``y > 0``: ``F`` is log-concave),

    .. math::

        \ell(y) = (k-1) r + \log\Big(\tfrac{k}{t} e^{a} + (1 - \tfrac{k}{t}) e^{r}\Big),

    strictly increasing from ``-k m`` towards ``log((k/t) e^m + 1 - k/t)``. The inverse, cdfs
    and sfs are the parent's, read through these functions.
    """

    num_selected: int = 1

    def __post_init__(self):
        m, t, k = self.m, self.num_steps, self.num_selected
        object.__setattr__(self, "atom_losses", np.array([-k * m]))
        # 2^-t underflows for t > 1074: the atom then carries 0
        object.__setattr__(self, "atom_probs", np.array([math.exp(-t * LOG2 - k * m)]))

    @property
    def continuous_support(self):
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
