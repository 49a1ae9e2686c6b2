"""The largest of ``T`` Laplace coordinates, one of them shifted: a lower-bound pair for
shuffling with Laplace noise."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from plda.mechanisms.law import PrivacyLossLaw

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
