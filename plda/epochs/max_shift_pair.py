"""Laws of the largest of ``T`` coordinates, one shifted by ``mu`` under P and ``mu_q`` under Q.

The lower pair of a shuffled epoch whose other records sit at ``-C``
(:class:`~plda.epochs.shuffled.ShuffledOppositeLowerBound`): ``(1/T) sum_t N(mu e_t, I)``
against ``(1/T) sum_t N(mu_q e_t, I)`` with ``mu = 2C/sigma``, ``mu_q = C/sigma``, read through
its largest coordinate (a post-processing, so dominated in both directions), whose loss is
increasing in it. The pair and the proof: ``docs/howto/samplers.md`` ("How the shuffled bracket
is certified").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr

from plda._internal.caches import remembered
from plda._internal.roots import tabulated_inverse
from plda.epochs.max_shift import (
    LOG2,
    LaplaceMaxShiftLaw,
    MaxShiftLaw,
    laplace_log_cdf,
    laplace_log_pdf,
    laplace_reversed_hazard,
    normal_log_pdf,
    normal_reversed_hazard,
)


def _check_shifts(name_p: str, shift_p: float, name_q: str, shift_q: float, num_steps: int):
    if not (math.isfinite(shift_p) and math.isfinite(shift_q) and 0 <= shift_q < shift_p):
        raise ValueError(f"{name_p} and {name_q} must be finite with 0 <= {name_q} < {name_p}, "
                         f"got {name_p}={shift_p!r}, {name_q}={shift_q!r}")
    if num_steps < 2:
        raise ValueError(f"num_steps must be at least 2, got {num_steps!r}")


@dataclass(frozen=True, eq=False)
class MaxShiftPairLaw(MaxShiftLaw):
    """Loss law of the largest of ``T`` Gaussian coordinates, one shifted by ``mu`` or ``mu_q``.

    ``Y = max_t X_t``, ``X ~ N(mu e_J, I)`` (``P``) against ``X ~ N(mu_q e_J, I)`` (``Q``),
    ``J`` uniform on the ``T`` coordinates. The loss
    ``l(y) = log(e^{a_mu} + (T-1) R_mu) - log(e^{a_mu_q} + (T-1) R_mu_q)`` with
    ``a_m(y) = m y - m^2/2`` and ``R_m(y) = Phi(y - m) / Phi(y)`` is increasing in ``y``, so the
    law of the loss is that of ``Y`` through ``l`` (inverted by Newton from a table).
    ``mu_q = 0`` is :class:`~plda.epochs.max_shift.MaxShiftLaw`.

    Attributes
    ----------
    mu : float
        The shift under ``P`` (``2C / sigma`` for the shuffled pair).
    num_steps : int
        The number of coordinates ``T``, at least 2.
    mu_q : float
        The shift under ``Q``, with ``0 <= mu_q < mu`` (``C / sigma``).

    Raises
    ------
    ValueError
        If the shifts are not finite with ``0 <= mu_q < mu``, or ``num_steps < 2``.
    """

    mu: float = 2.0
    num_steps: int = 2
    mu_q: float = 1.0

    def __post_init__(self):
        _check_shifts("mu", self.mu, "mu_q", self.mu_q, self.num_steps)

    def _inverse(self, loss):
        """``y`` with ``l(y) = loss``: Newton from a table of ``l`` on ``[-40, 40 + mu]``."""
        grid, values = remembered(self, "table", self._table)
        return tabulated_inverse(self._loss, self._slope, loss, grid, values)

    def _table(self):
        grid = np.linspace(-40.0, 40.0 + self.mu, 4097)
        return grid, self._loss(grid)

    def _terms(self, y, m):
        """``(log e^{a_m}, log (T-1) R_m, log of their sum)`` at ``y``."""
        a = m * y - m * m / 2
        r = math.log(self.num_steps - 1) + log_ndtr(y - m) - log_ndtr(y)
        return a, r, np.logaddexp(a, r)

    def _loss(self, y):
        y = np.asarray(y, dtype=float)
        with np.errstate(invalid="ignore"):
            loss = self._terms(y, self.mu)[2] - self._terms(y, self.mu_q)[2]
        # the loss runs from -inf to +inf like (mu - mu_q) y (inf - inf above): the tail
        # points of a subnormal mass are infinite
        return np.where(np.isinf(y), y, loss)

    def _log_slope(self, y, m):
        """``d/dy log(e^{a_m} + (T-1) R_m)``: the weights of its two terms times their log
        derivatives (``m`` and ``h(y - m) - h(y)``, ``h = phi / Phi``)."""
        a, r, top = self._terms(y, m)
        slopes = normal_reversed_hazard(y - m) - normal_reversed_hazard(y)
        return np.exp(a - top) * m + np.exp(r - top) * slopes

    def _slope(self, y):
        y = np.asarray(y, dtype=float)
        with np.errstate(invalid="ignore"):
            slope = self._log_slope(y, self.mu) - self._log_slope(y, self.mu_q)
        return np.where(np.isinf(y), self.mu - self.mu_q, slope)  # the limits at +-inf

    def _log_cdf_y(self, y, hypothesis):
        shift = self.mu if hypothesis == "P" else self.mu_q
        return log_ndtr(y - shift) + (self.num_steps - 1) * log_ndtr(y)

    def _cont_pdf(self, x, hypothesis):
        y = self._inverse(x)
        t = self.num_steps
        m = self.mu if hypothesis == "P" else self.mu_q
        # d/dy [Phi(y - m) Phi(y)^(T-1)]: the maximum is the shifted coordinate or another
        shifted = normal_log_pdf(y - m) + (t - 1) * log_ndtr(y)
        other = math.log(t - 1) + log_ndtr(y - m) + (t - 2) * log_ndtr(y) + normal_log_pdf(y)
        return np.exp(np.logaddexp(shifted, other)) / self._slope(y)


@dataclass(frozen=True, eq=False)
class LaplaceMaxShiftPairLaw(LaplaceMaxShiftLaw):
    """Loss law of the largest of ``T`` Laplace coordinates, one shifted by ``m`` or ``m_q``.

    ``X_t`` i.i.d. standard Laplace plus ``m`` (``P``) or ``m_q`` (``Q``) on one uniformly
    random coordinate. With ``A_s = f(y - s) / f(y)`` and ``R_s = F(y - s) / F(y)`` the loss
    ``log(A_m + (T-1) R_m) - log(A_{m_q} + (T-1) R_{m_q})`` is constant ``-(m - m_q)`` for
    ``y <= m_q`` (an atom, of masses ``F(m_q - m) F(m_q)^(T-1)`` under P and
    ``F(m_q)^(T-1) / 2`` under Q), then strictly increasing towards
    ``log((e^m + T - 1) / (e^{m_q} + T - 1))``. ``m_q = 0`` is
    :class:`~plda.epochs.max_shift.LaplaceMaxShiftLaw`.

    Attributes
    ----------
    m : float
        The shift under ``P``, in units of the scale.
    num_steps : int
        The number of coordinates ``T``, at least 2.
    m_q : float
        The shift under ``Q``, with ``0 <= m_q < m``.

    Raises
    ------
    ValueError
        If the shifts are not finite with ``0 <= m_q < m``, or ``num_steps < 2``.
    """

    m: float = 2.0
    num_steps: int = 2
    m_q: float = 1.0

    def __post_init__(self):
        _check_shifts("m", self.m, "m_q", self.m_q, self.num_steps)
        m, mq, t = self.m, self.m_q, self.num_steps
        log_p = (mq - m) - LOG2 + (t - 1) * float(laplace_log_cdf(mq))
        object.__setattr__(self, "atom_losses", np.array([mq - m]))
        # tiny for large T (F(m_q)^(T-1)): it may underflow to 0, a sub-measure of the atom
        object.__setattr__(self, "atom_probs", np.array([math.exp(log_p)]))

    @property
    def flat_end(self) -> float:
        """The point up to which the loss is constant (the atom): ``m_q``."""
        return self.m_q

    @property
    def continuous_support(self):
        """Support of the continuous part: ``(m_q - m, log((e^m + T - 1) / (e^m_q + T - 1)))``."""
        m, mq, t = self.m, self.m_q, self.num_steps
        # log((e^m + T - 1) / (e^{m_q} + T - 1)) without overflow for large shifts
        top = np.logaddexp(m, math.log(t - 1))
        return (mq - m, float(top - np.logaddexp(mq, math.log(t - 1))))

    def _terms(self, y, s):
        a = laplace_log_pdf(y - s) - laplace_log_pdf(y)
        r = math.log(self.num_steps - 1) + laplace_log_cdf(y - s) - laplace_log_cdf(y)
        return a, r, np.logaddexp(a, r)

    def _loss(self, y):
        y = np.asarray(y, dtype=float)
        return self._terms(y, self.m)[2] - self._terms(y, self.m_q)[2]

    def _log_slope(self, y, s):
        a, r, top = self._terms(y, s)
        da = np.where((y > 0) & (y < s), 2.0, 0.0)
        dr = laplace_reversed_hazard(y - s) - laplace_reversed_hazard(y)
        return np.exp(a - top) * da + np.exp(r - top) * dr

    def _slope(self, y):
        y = np.asarray(y, dtype=float)
        return self._log_slope(y, self.m) - self._log_slope(y, self.m_q)

    def _log_cdf_y(self, y, hypothesis):
        shift = self.m if hypothesis == "P" else self.m_q
        return laplace_log_cdf(y - shift) + (self.num_steps - 1) * laplace_log_cdf(y)

    def _cont_pdf(self, x, hypothesis):
        x = np.asarray(x, dtype=float)
        lo, hi = self.continuous_support
        inside = (x > lo) & (x < hi)
        y = self._points(np.where(inside, x, 0.5 * (lo + hi)))
        t = self.num_steps
        s = self.m if hypothesis == "P" else self.m_q
        shifted = laplace_log_pdf(y - s) + (t - 1) * laplace_log_cdf(y)
        other = (math.log(t - 1) + laplace_log_cdf(y - s) + (t - 2) * laplace_log_cdf(y)
                 + laplace_log_pdf(y))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = np.exp(np.logaddexp(shifted, other)) / self._slope(y)
        return np.where(inside & np.isfinite(out), out, 0.0)
