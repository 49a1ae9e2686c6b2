"""Atom laws of the exact references: float atom laws with error bounds, their mpmath
profile, and exact float convolution of scaled pmfs."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from plda._internal.floats import UNIT_ROUNDOFF, dot
from plda.testing._internal.numerics import TINY


# --------------------------------------------------------------- atom laws
def _split(value: float) -> tuple[float, float]:
    """``value = high + low`` with ``high`` holding the top 26 bits, so ``n * high`` is exact for
    integers ``|n| < 2^26`` (Dekker's splitting)."""
    mantissa, exponent = math.frexp(value)
    high = math.ldexp(math.floor(math.ldexp(mantissa, 26)), exponent - 26)
    return high, value - high


@dataclass(frozen=True)
class FloatAtoms:
    """A privacy-loss law on the lattice ``loss = n * unit``, in float with error bounds.

    ``multiples`` ascending integers; ``unit > 0`` with relative error ``unit_rel_err`` (0 when
    the unit is an input, e.g. ``epsilon0``); ``log_probs`` the log ``P``-masses (``-inf`` for
    masses that underflowed) with absolute errors ``log_errors``; ``abs_floor`` bounds the
    absolute error of every listed mass; atoms left out of the list have total mass at most
    ``dropped_mass`` and losses at most ``dropped_max_loss``; ``infinity_mass`` is
    ``P(L = +inf)``.
    """

    multiples: np.ndarray
    unit: float
    log_probs: np.ndarray
    log_errors: np.ndarray | float
    unit_rel_err: float = 0.0
    infinity_mass: float = 0.0
    abs_floor: float = 0.0
    dropped_mass: float = 0.0
    dropped_max_loss: float = -math.inf

    def _gaps(self, eps: float) -> tuple[np.ndarray, np.ndarray]:
        """``eps - n * unit`` to within a few ulps of the *result* (split product), and its
        error bound."""
        high, low = _split(self.unit)
        n = self.multiples.astype(float)
        x = (eps - n * high) - n * low
        loss = np.abs(n) * self.unit
        x_err = 4 * UNIT_ROUNDOFF * np.abs(x) + loss * (
            self.unit_rel_err + 4 * UNIT_ROUNDOFF * 2.0**-26
        )
        return x, x_err

    def delta(self, eps: float) -> tuple[float, float]:
        """``P(L = inf) + sum_{l > eps} p_l (1 - e^{eps - l})``, term by term in log space (every
        term is positive, so there is no cancellation), with an absolute error bound."""
        x, x_err = self._gaps(eps)
        above = x < -x_err
        near = ~above & (x <= x_err)  # at eps up to rounding: each may add up to p * x_err
        abs_err = self.abs_floor * int(np.count_nonzero(above | near))
        if eps < self.dropped_max_loss:
            abs_err += self.dropped_mass
        if np.any(near):
            abs_err += float(np.sum(np.exp(self.log_probs[near]) * 2 * x_err[near]))
        finite, rel = 0.0, 0.0
        terms = np.flatnonzero(above & (self.log_probs > -math.inf))
        if len(terms):
            xa = x[terms]
            log_terms = self.log_probs[terms] + np.log(-np.expm1(xa))
            top = float(np.max(log_terms))
            weights = np.exp(log_terms - top)
            total = float(np.sum(weights))
            finite = math.exp(top + math.log(total))
            log_err = self.log_errors[terms] if np.ndim(self.log_errors) else self.log_errors
            # relative error of 1 - e^x from the error of x is at most x_err / |x|
            kappa = (
                log_err + x_err[terms] / np.abs(xa)
                + 4 * UNIT_ROUNDOFF * (np.abs(log_terms) + abs(top) + 4)
            )
            rel = dot(weights, kappa) / total + UNIT_ROUNDOFF * (16 + math.log2(len(xa)))
        value = self.infinity_mass + finite
        tiny = 8 * TINY if finite > 0 else 0.0
        return value, finite * rel + self.infinity_mass * 4 * UNIT_ROUNDOFF + abs_err + tiny

    @property
    def max_loss(self) -> float:
        # beyond this no atom is within rounding of eps: delta is exactly the infinity mass
        return (
            float(self.multiples[-1])
            * self.unit
            * (1 + 2 * self.unit_rel_err + 64 * UNIT_ROUNDOFF)
        )


def mp_atoms_delta(mp, losses, probs, infinity_mass, eps):
    """``(delta, slope)`` of an atom law in mpmath:
    ``delta = inf + sum_{l > eps} p (1 - e^{eps-l})`` and ``slope = sum_{l > eps} p e^{-l}``."""
    delta = mp.mpf(infinity_mass)
    slope = mp.zero
    for loss, p in zip(losses, probs, strict=True):
        if loss > eps:
            delta += p * -mp.expm1(eps - loss)
            slope += p * mp.exp(-loss)
    return delta, slope


# ----------------------------------------------------- exact float convolution
@dataclass(frozen=True)
class ScaledPmf:
    """Non-negative masses ``exp(log_scale) * values`` (``max(values) == 1``) with a relative error
    bound per entry and an absolute floor (per entry, in units of ``exp(log_scale)``)."""

    values: np.ndarray
    log_scale: float
    rel_err: float
    floor: float = 0.0

    @classmethod
    def from_log(cls, log_masses: np.ndarray, log_err: float) -> ScaledPmf:
        top = float(np.max(log_masses))
        values = np.exp(log_masses - top)
        log_err = log_err + 4 * UNIT_ROUNDOFF * (1 + float(np.max(np.abs(log_masses))))
        return cls(values, top, log_err, TINY)

    def convolve(self, other: ScaledPmf) -> ScaledPmf:
        """Direct (not FFT) convolution: sums of non-negative products keep their relative
        accuracy (an FFT would add an absolute error of about ``u * max``)."""
        raw = np.convolve(self.values, other.values)
        top = float(np.max(raw))
        n = min(len(self.values), len(other.values))
        floor = (
            self.floor * float(np.sum(other.values)) + other.floor * float(np.sum(self.values))
            + n * TINY
        ) / top
        return ScaledPmf(
            raw / top,
            self.log_scale + other.log_scale + math.log(top),
            self.rel_err + other.rel_err + (n + 4) * UNIT_ROUNDOFF,
            floor + TINY,
        )

    def power(self, count: int) -> ScaledPmf:
        result, base = None, self
        while True:
            if count & 1:
                result = base if result is None else result.convolve(base)
            count >>= 1
            if not count:
                return result
            base = base.convolve(base)


def mp_convolve(mp, a: list, b: list) -> list:
    out = []
    for m in range(len(a) + len(b) - 1):
        lo, hi = max(0, m - len(b) + 1), min(m, len(a) - 1)
        out.append(mp.fdot((a[i], b[m - i]) for i in range(lo, hi + 1)))
    return out


def mp_power(mp, pmf: list, count: int) -> list:
    result, base = None, pmf
    while True:
        if count & 1:
            result = base if result is None else mp_convolve(mp, result, base)
        count >>= 1
        if not count:
            return result
        base = mp_convolve(mp, base, base)
