"""Laws of the largest coordinate of a random allocation of Gaussian shifts: one of ``t``
coordinates shifted (:class:`MaxShiftLaw`, the lower pair of :class:`~plda.Shuffled`), or ``k``
of ``t`` (:class:`MaxShiftManyLaw`).

A certified *lower* pair for :class:`~plda.RandomAllocation` with ``num_selected = k > 1``:
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
from plda.mechanisms.max_laplace_law import (
    LOG2,
    LaplaceMaxShiftLaw,
    laplace_log_cdf,
    laplace_log_pdf,
    laplace_reversed_hazard,
)

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _log_phi(z):
    return -0.5 * z * z - _LOG_SQRT_2PI


def _hazard(z):
    """``phi(z) / Phi(z)`` from logs (no ``1 - Phi``)."""
    return np.exp(_log_phi(z) - log_ndtr(z))


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
        num_r = _hazard(y - m) - _hazard(y)
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
            a = _log_phi(y - m) + (t - 1) * log_ndtr(y)
            b = math.log(t - 1) + log_ndtr(y - m) + (t - 2) * log_ndtr(y) + _log_phi(y)
            log_density = np.logaddexp(a, b)
        else:
            log_density = math.log(t) + (t - 1) * log_ndtr(y) + _log_phi(y)
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
        d_log_r = _hazard(y - m) - _hazard(y)  # >= 0
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
            shifted = math.log(k) + _log_phi(y - m) + log_ndtr(y) + base
            if k < t:
                plain = math.log(t - k) + _log_phi(y) + log_ndtr(y - m) + base
                log_density = np.logaddexp(shifted, plain)
            else:
                log_density = shifted
        else:
            log_density = math.log(t) + (t - 1) * log_ndtr(y) + _log_phi(y)
        return np.exp(log_density) / self._slope(y)


@dataclass(frozen=True, eq=False)
class LaplaceMaxShiftManyLaw(LaplaceMaxShiftLaw):
    r"""Loss law of ``Y = max_i X_i``, ``X_i`` i.i.d. standard Laplace plus ``m`` on a uniform
    ``k``-subset of the ``t`` coordinates (``P``), against no shift (``Q``); ``k = 1`` is
    :class:`~plda.mechanisms.max_laplace_law.LaplaceMaxShiftLaw`.

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
