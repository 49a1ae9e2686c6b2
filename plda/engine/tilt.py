"""Tilted composition: the FFT's resolution moved to the tiny deltas of large epsilons
(:func:`compose_tilted`), at the Chernoff-optimal tilts (:func:`chernoff_tilts`) and their
neighbours (:func:`tilt_attempts`)."""

from __future__ import annotations

import math

import numpy as np

from plda._internal.chernoff import CHERNOFF_LOG_C, CHERNOFF_ORDERS
from plda._internal.floats import union_probability
from plda.engine.composer import compose
from plda.grid.chernoff import composed_tail
from plda.grid.discrete import DiscreteLoss
from plda.grid.moments import power_support


def compose_tilted(
    factors: list,
    tilt: float,
    tail: float = 1e-20,
    max_size: int = 1 << 23,
) -> DiscreteLoss:
    """Composition computed under the exponential tilt ``p_i -> p_i e^{t l_i} / M(t)``.

    Tilting commutes with convolution, and it moves the FFT's resolution to the losses near the
    Chernoff point of ``t``: the composed law is recovered as ``y_i = y~_i exp(C - t l_i)`` with
    ``C = sum_f k_f log M_f(t)``, and the absolute FFT error of ``y~`` becomes an error relative
    to the (tiny) deltas found there. Losses where the weight ``exp(C - t l_i)`` would overflow
    are left out (``valid_from``). ``+inf`` masses are carried untilted.

    Parameters
    ----------
    factors
        ``[(law, count), ...]`` on a common grid.
    tilt
        The order ``t > 0``.
    tail
        Composed (tilted) mass allowed outside the window on each side.
    max_size
        The longest FFT allowed.

    Returns
    -------
    DiscreteLoss
        The composed law, untilted, with its ``tilt``, ``log_scale`` and ``valid_from``.

    Raises
    ------
    ValueError
        If ``tilt`` is not positive.
    """
    if tilt <= 0:
        raise ValueError("tilt must be positive")
    tilted, log_scale = [], 0.0
    for f, k in factors:
        c = float(f.finite_log_mgf(np.array([tilt]))[0])
        log_scale += k * c
        probs = np.exp(np.log(np.maximum(f.probs, 1e-320)) + tilt * f.losses - c) * (f.probs > 0)
        tilted.append(
            (
                DiscreteLoss(
                    step=f.step, offset=f.offset, probs=probs, upper=f.upper,
                    loss_error=f.loss_error,
                ),
                k,
            )
        )
    inner = compose(tilted, tail=tail, max_size=max_size)
    first = factors[0][0]
    infinity = union_probability(((f.infinity_mass, k) for f, k in factors), upper=first.upper)
    losses = inner.losses
    exponent = log_scale - tilt * losses
    keep = exponent < 340.0  # weights and their squares stay finite
    if not keep.any():  # nothing resolved: the trivial bounds (delta <= 1, and >= 0)
        return DiscreteLoss(
            first.step, inner.offset + len(losses), np.zeros(1), float(first.upper), first.upper
        )
    start = int(np.argmax(keep))
    weights = np.exp(exponent[start:])
    probs = inner.probs[start:] * weights
    above_weight = math.exp(min(log_scale - tilt * (losses[-1] + first.step), 690.0))
    upper = first.upper
    infinity_total = infinity + (inner.infinity_mass * above_weight if upper else 0.0)
    # the tilted window drops the tilted mass below it (it wraps onto the window's top, where
    # untilting shrinks it by e^(-tilt * width)): an upper version then knows nothing below
    # its first loss. (Laplace(0.0298) x 10 at eps 1e-3 under its top: the tilted upper delta was
    # 8e-38, the exact one 3.3e-14.) The lower version may drop mass: only the kept range counts
    dropped = inner.offset > power_support(tilted)[0]
    valid_from = float(losses[start]) if start > 0 or (upper and dropped) else -np.inf
    out = DiscreteLoss(
        first.step,
        inner.offset + start,
        probs,
        min(1.0, infinity_total),
        upper,
        inner.entry_error,
        inner.spurious_mass,
        None,
        0.0,
        inner.l2_error,
        tilt,
        log_scale,
        valid_from,
        loss_error=inner.loss_error,
    )
    if upper:  # the factors' Chernoff moments, summed when first asked
        object.__setattr__(out, "far_tail", composed_tail(factors))
    return out


def chernoff_tilts(versions: dict, targets: np.ndarray, kind: str) -> np.ndarray:
    """The Chernoff-optimal tilt for each target, at most three distinct ones.

    Parameters
    ----------
    versions
        ``{direction: pair}`` of the untilted composition (their upper versions' moments).
    targets
        Deltas (``kind="epsilon"``) or epsilons (``kind="delta"``).
    kind
        ``"epsilon"`` or ``"delta"``: the query.

    Returns
    -------
    numpy.ndarray
        One order per target, rounded to a power of sqrt(2) (so that compositions are reused);
        all ones where no upper version has moments.
    """
    t, log_c = CHERNOFF_ORDERS, CHERNOFF_LOG_C
    found = [v.upper.chernoff() for v in versions.values()]
    moments = [m[0] for m in found if m is not None]
    if not moments:
        return np.ones(len(targets))
    log_mgf = np.max(moments, axis=0)
    if kind == "epsilon":
        objective = (log_mgf + log_c)[None, :] - np.log(targets)[:, None]
        best = t[np.argmin(objective / t[None, :], axis=1)]
    else:
        objective = (log_mgf + log_c)[None, :] - np.outer(targets, t)
        best = t[np.argmin(objective, axis=1)]
    rounded = 2.0 ** (np.round(2 * np.log2(best)) / 2)
    distinct = np.unique(rounded)
    if len(distinct) > 3:  # at most three extra compositions per call: nearest of three
        keep = distinct[np.linspace(0, len(distinct) - 1, 3).round().astype(int)]
        rounded = keep[np.argmin(np.abs(np.log(rounded)[:, None] - np.log(keep)), axis=1)]
    return rounded


def tilt_attempts(tilt: float) -> tuple:
    """The tilts tried for a target, in order: its Chernoff-optimal one, then smaller, then larger.

    Smaller tilts resolve an optimistic side whose error terms swamp it at the optimal one
    (1e3 steps at q = 0.01, sigma = 2.29, delta = 1e-12: [0.926, 0.999] at t = 32, [0.999013,
    0.999018] at t = 16). Larger ones resolve a sampled step whose rare large losses hold the
    tilted mass (20 steps at q = 1e-3, sigma = 3, delta = 1e-20: [0.0124, 0.0340] at t = 90.5,
    [0.019102, 0.019118] at t = 1448); the caller stops climbing once a tilt does not narrow
    its own gap, or does not fit.

    Parameters
    ----------
    tilt
        The Chernoff-optimal tilt, positive.

    Returns
    -------
    tuple of float
        ``t, t / sqrt 2, t / 2, 2 t, 4 t, 8 t, 16 t``.
    """
    return (tilt, tilt / math.sqrt(2), tilt / 2, 2 * tilt, 4 * tilt, 8 * tilt, 16 * tilt)
