"""Binomial log-masses accurate far into the tails (Loader's saddle-point form), for the exact
references of compositions of atom laws."""

from __future__ import annotations

import math

import numpy as np

from plda._internal.caches import cached
from plda._internal.floats import UNIT_ROUNDOFF

# ------------------------------------------------ binomial log-masses (Loader)
# stirlerr(n) = log n! - log(sqrt(2 pi n) (n/e)^n) for n = 0..15 (n = 0 unused)
_STIRLERR = np.array([
    np.nan, 0.08106146679532726, 0.0413406959554093, 0.02767792568499834,
    0.020790672103765093, 0.016644691189821193, 0.013876128823070748, 0.01189670994589177,
    0.010411265261972096, 0.009255462182712733, 0.00833056343336287, 0.007573675487951841,
    0.00694284010720953, 0.006408994188004207, 0.0059513701127588475, 0.005554733551962801,
])


def _stirlerr(n: np.ndarray) -> np.ndarray:
    n = np.asarray(n, dtype=float)
    small = n <= 15
    out = np.empty_like(n)
    out[small] = _STIRLERR[n[small].astype(np.int64)]
    m = n[~small]
    nn = m * m
    # Stirling series 1/12n - 1/360n^3 + 1/1260n^5 - 1/1680n^7 + 1/1188n^9: < u for n > 15
    series = 1 / 1260 - (1 / 1680 - 1 / (1188 * nn)) / nn
    out[~small] = (1 / 12 - (1 / 360 - series / nn) / nn) / m
    return out


def _bd0(x: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """``x log(x / mean) + mean - x`` without cancellation (Loader 2000)."""
    x = np.asarray(x, dtype=float)
    mean = np.broadcast_to(np.asarray(mean, dtype=float), x.shape)
    diff = x - mean
    close = np.abs(diff) < 0.1 * (x + mean)
    out = np.empty_like(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        far = ~close
        xf, mf = x[far], mean[far]
        out[far] = np.where(xf > 0, xf * np.log(xf / mf), 0.0) + mf - xf
    v = diff[close] / (x[close] + mean[close])
    s = diff[close] * v
    term = 2 * x[close] * v
    v2 = v * v
    for j in range(1, 20):  # |v| < 0.1: 20 terms reach far below u
        term = term * v2
        s = s + term / (2 * j + 1)
    out[close] = s
    return out


def log_binomial_pmf(i: np.ndarray, n: int, log_p: float, log_q: float):
    """``log C(n, i) p^i q^(n-i)`` accurately for large ``n`` (Loader's saddle-point form), and
    a bound on its absolute error."""
    i = np.asarray(i, dtype=np.int64)
    out = np.empty(i.shape)
    p, q = math.exp(log_p), math.exp(log_q)
    edge0, edgen = i == 0, i == n
    out[edge0] = n * log_q
    out[edgen] = n * log_p
    mid = ~(edge0 | edgen)
    x = i[mid].astype(float)
    y = n - x
    out[mid] = (
        _stirlerr(np.array([n]))[0] - _stirlerr(x) - _stirlerr(y)
        - _bd0(x, n * p) - _bd0(y, n * q)
        + 0.5 * (math.log(n) - math.log(2 * math.pi) - np.log(x) - np.log(y))
    )
    # bd0 inherits 2u|n p - i| from the rounding of n p; other terms are a few ulps each
    err = 8 * UNIT_ROUNDOFF * (8 + np.abs(out) + np.abs(n * p - i) + math.log(n + 1))
    return out, err


@cached(maxsize=4)
def kov_log_masses(epsilon0: float, count: int):
    """Log ``P``-masses of the ``count``-fold pure randomized response ``RR_epsilon0``: ``i``
    negative steps out of ``count`` (loss ``(count - 2 i) epsilon0``) is Binomial(count,
    ``1/(1+e^epsilon0)``)."""
    i = np.arange(count + 1)
    log_p = -float(np.logaddexp(0.0, epsilon0))  # a step with loss -epsilon0
    log_q = -float(np.logaddexp(0.0, -epsilon0))
    return log_binomial_pmf(i, count, log_p, log_q)
