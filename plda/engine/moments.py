"""Moments of discrete privacy-loss laws: the exponential tables of the profile, the Chernoff
moments at the ladder orders ``t = 2^(j/2)``, and the composition window they give.

A composition's mass outside a loss interval is bounded by Chernoff's inequality
``P(S > x) <= exp(log E[e^{tS}] - t x)`` with ``log E[e^{tS}] = sum_f k_f log E[e^{tL_f}]``; any
order gives a valid bound, so the orders sit on a fixed ladder and each law's moments are
computed once per order (cached on the law) and reused by every composition it enters.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from plda import fft
from plda._internal.caches import register
from plda._internal.linalg import dot

_U = fft.UNIT_ROUNDOFF


# tables are never written after they are built, so a thread may keep using one that another
# thread has just evicted; the dict itself is only changed under the lock
_EXP_TABLES: dict = {}
_EXP_TABLES_LOCK = threading.Lock()
_EXP_TABLE_MAX = 1 << 20


def _clear_exp_tables() -> None:
    with _EXP_TABLES_LOCK:
        _EXP_TABLES.clear()


register("plda.engine.moments.exp_tables", _clear_exp_tables)


def exp_neg_grid(step: float, offset: int, n: int) -> np.ndarray:
    """``exp(-(offset + i) * step)`` for ``i < n``.

    A product of the cached table ``exp(-i * step)`` and ``exp(-offset * step)``: each factor is
    a correctly rounded exponential of a rounded loss, so the relative error (a few ``u`` per
    unit of ``|loss|``) is the one of evaluating ``exp`` at the rounded losses directly, which
    the callers' ``1e-12`` margins absorb. Direct evaluation where the table would under- or
    overflow."""
    if not (abs(offset * step) < 600 and abs((offset + n) * step) < 600) or n > _EXP_TABLE_MAX:
        return np.exp(-(offset + np.arange(n)) * step)
    table = _EXP_TABLES.get(step)
    if table is None or len(table) < n:
        table = np.exp(-np.arange(max(n, 1 << 12)) * step)
        table.flags.writeable = False
        with _EXP_TABLES_LOCK:
            if len(_EXP_TABLES) >= 8:  # at most 8 tables of at most 8 MB
                _EXP_TABLES.clear()
            _EXP_TABLES[step] = table
    return table[:n] * math.exp(-offset * step)


def log_mgf_ladder(law, j0: int, j1: int) -> tuple[np.ndarray, np.ndarray]:
    """``log sum_i p_i e^{+-t l_i}`` at the orders ``t = 2^(j/2)``, ``j0 <= j <= j1``.

    Log-sum-exp per order, shifted by the largest exponent ``log p_i +- t l_i`` so that every
    term is at most 1 and the sum at least 1: exponents below ``-700`` are raised to ``-700``
    (an upper bound on the term, and no subnormal arithmetic, which is ~100x slower than
    ordinary arithmetic). Rounding: the exponent ``a_i = log p_i +- t l_i - m`` is off by at
    most ``4u (|log p_i| + |t l_i| + |m|)`` and ``exp`` adds ``u``, so each term is within a
    factor ``e^r`` of its exact value with ``r`` that bound plus ``2u``; the sum adds ``n u``
    relative. Both are added to the logarithm, so the moments stay upper bounds (Chernoff
    bounds need upper bounds on the moments, any will do)."""
    positive = law.probs > 0
    if not positive.any():
        empty = np.full(j1 - j0 + 1, -np.inf)
        return empty, empty.copy()
    log_p = np.log(law.probs[positive])
    losses = law.losses[positive]
    log_p_max = float(np.max(np.abs(log_p)))
    loss_max = float(np.max(np.abs(losses)))
    sum_error = len(log_p) * _U
    # many orders at once: (orders x entries) matrices of exponents, at most ~2^20 entries each
    orders = 2.0 ** (np.arange(j0, j1 + 1) / 2)
    rows = max(1, (1 << 20) // len(losses))
    up, down = np.empty(len(orders)), np.empty(len(orders))
    for first in range(0, len(orders), rows):
        t = orders[first : first + rows]
        for sign, values in ((1.0, up), (-1.0, down)):
            exponents = log_p[None, :] + (sign * t)[:, None] * losses[None, :]
            m = np.max(exponents, axis=1)
            exponents -= m[:, None]
            np.maximum(exponents, -700.0, out=exponents)
            total = np.sum(np.exp(exponents), axis=1)
            margin = 4 * _U * (log_p_max + t * loss_max + np.abs(m)) + 2 * _U + sum_error
            values[first : first + rows] = m + np.log(total) + margin
    return up, down


def ladder_chernoff(factors, tail: float, order_range: tuple[float, float], min_spread: float):
    """Chernoff cuts of a composition at the ladder orders ``t = 2^(j/2)`` in
    ``order_range / spread`` (``spread``: the composed standard deviation, at least
    ``min_spread``), from each factor's cached ``DiscreteLoss.ladder_log_mgf``.

    Returns ``(lo_loss, hi_loss, orders, log_up, log_down)``: all but ``tail`` of the composed
    mass lies above ``lo_loss`` and below ``hi_loss`` (infinite where no order bounds it, e.g.
    no finite mass), and ``log E[e^{+-tL}]`` of the composition at ``orders`` for further tail
    bounds. Plain floats: a few dozen numbers, where numpy calls cost more than the work."""
    variance = sum(k * f._spread()[1] for f, k in factors)
    spread = math.sqrt(max(variance, min_spread * min_spread))
    j0 = math.floor(2 * math.log2(order_range[0] / spread))
    j1 = math.ceil(2 * math.log2(order_range[1] / spread))
    orders = [2.0 ** (j / 2) for j in range(j0, j1 + 1)]
    if len(factors) <= 4:
        log_up = [0.0] * len(orders)
        log_down = [0.0] * len(orders)
        for f, k in factors:
            up, down = f.ladder_log_mgf(j0, j1)
            for i, (u, v) in enumerate(zip(up.tolist(), down.tolist(), strict=True)):
                log_up[i] += k * u
                log_down[i] += k * v
    else:  # many factors (a noise schedule changed every step): one matrix product
        moments = [f.ladder_log_mgf(j0, j1) for f, _ in factors]
        counts = np.array([k for _, k in factors], dtype=float)
        with np.errstate(invalid="ignore"):
            log_up = dot(counts, np.array([m[0] for m in moments])).tolist()
            log_down = dot(counts, np.array([m[1] for m in moments])).tolist()
    log_tail = math.log(tail)
    # orders whose moment overflowed (inf or NaN) give no bound and are skipped
    hi_loss = min(
        ((u - log_tail) / t for u, t in zip(log_up, orders, strict=True) if u < math.inf),
        default=math.inf,
    )
    lo_loss = max(
        (-(v - log_tail) / t for v, t in zip(log_down, orders, strict=True) if v < math.inf),
        default=-math.inf,
    )
    return lo_loss, hi_loss, orders, log_up, log_down


def window_losses(factors: list, tail: float) -> tuple[float, float]:
    """Loss interval holding all but about ``tail`` of the composed mass on each side, for
    factors that may sit on different grids (a pilot estimate, not a certified window):
    :func:`ladder_chernoff` at orders in ``[0.5, 32] / spread``, cut by the exact support."""
    lo_exact = sum(k * f.offset * f.step for f, k in factors)
    hi_exact = sum(k * (f.offset + len(f.probs) - 1) * f.step for f, k in factors)
    lo_loss, hi_loss, *_ = ladder_chernoff(
        factors, tail, (0.5, 32.0), max(f.step for f, _ in factors)
    )
    hi = hi_exact if not math.isfinite(hi_loss) else min(hi_exact, hi_loss)
    lo = lo_exact if not math.isfinite(lo_loss) else max(lo_exact, lo_loss)
    return min(lo, hi), hi


def power_support(factors: list) -> tuple[int, int]:
    """Index range ``[lo, hi]`` of the exact composition of ``factors`` (each ``(law, count)``)."""
    lo = sum(k * f.offset for f, k in factors)
    hi = sum(k * (f.offset + len(f.probs) - 1) for f, k in factors)
    return lo, hi
