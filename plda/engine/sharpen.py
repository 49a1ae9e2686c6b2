"""Sharpening by tilting: deltas below the FFT's rounding floor, and the bounds' gap.

An FFT composition resolves deltas down to about ``1e-8`` of its total mass; below that the
composition is recomputed under the exponential tilt that is Chernoff-optimal for each target
(:func:`plda.engine.tilt.compose_tilted`), and the tighter of the two certified bounds is kept.
"""

from __future__ import annotations

import math

import numpy as np

from plda._internal.chernoff import CHERNOFF_ORDERS
from plda.engine.plan import Plan
from plda.engine.versions import bounds_over_directions


def epsilon_pair(versions, d):
    """Epsilon bounds at deltas ``d``: the maximum over directions of each version's
    epsilon (``versions = {direction: (upper, lower)}``), the lower one capped by the upper
    (:func:`plda.engine.versions.bounds_over_directions`: a dominated direction's optimistic
    version is not read)."""
    return bounds_over_directions(versions, lambda law: law.epsilon(d))


def delta_pair(versions, e):
    """Delta bounds at epsilons ``e``, as :func:`epsilon_pair` for epsilon."""
    return bounds_over_directions(versions, lambda law: law.delta(e))


def relative_gap(lower, upper):
    """``(upper - lower) / upper`` elementwise (0 where upper is 0 or infinite, inf where only
    the lower bound is infinite)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.where(
            np.isfinite(upper) & (upper > 0), (upper - lower) / np.maximum(upper, 1e-300), 0.0
        )
    return np.where(np.isfinite(lower) | ~np.isfinite(upper), gap, np.inf)


def sharpen(materialize, step, versions, targets, lower, upper, kind, accuracy):
    """Below the FFT's rounding floor (deltas under ~1e-8) recompose under an exponential
    tilt aimed at each target (:func:`plda.engine.tilt.compose_tilted`) and keep the tighter
    of the two certified bounds.

    ``materialize(plan)`` returns ``{direction: (upper, lower)}`` composed laws to ``plan``;
    ``versions`` are the untilted ones on grid ``step``; ``targets`` are deltas
    (``kind="delta"``: ``lower, upper`` bound epsilon) or epsilons (``kind="epsilon"``:
    they bound delta); ``accuracy`` is the relative gap that needs no tilt."""
    if kind == "delta":
        small = (targets > 1e-60) & (targets < 1e-8)
        small &= relative_gap(lower, upper) > accuracy
    else:
        small = (upper > 1e-60) & (upper < 1e-8) & (lower < upper * (1 - accuracy))
    if not small.any():
        return lower, upper
    tilts = chernoff_tilts(versions, targets[small], kind)
    lower, upper = lower.copy(), upper.copy()
    for tilt in np.unique(tilts):
        pick = np.nonzero(small)[0][tilts == tilt]
        # the Chernoff-optimal tilt puts the tilted mass slightly beyond the crossing loss;
        # where the optimistic side's error terms still swamp it there (its bound drops to
        # 0), a smaller tilt resolves it: 1e3 steps at q=0.01, sigma=2.29, delta=1e-12 give
        # [0.926, 0.999] with t=32 and [0.999013, 0.999018] with t=16; at delta=1e-20 t=22.6
        # is needed ([1.36, 1.38] at t=16 and 32, [1.380245, 1.380325] at 22.6)
        for attempt in (tilt, tilt / math.sqrt(2), tilt / 2):
            try:
                tilted = materialize(Plan(step=step, tilt=float(attempt)))
            except MemoryError:
                continue
            if kind == "delta":
                lo, up = epsilon_pair(tilted, targets[pick])
            else:
                lo, up = delta_pair(tilted, targets[pick])
            # fmin/fmax ignore a NaN from the tilted side: the untilted bound stands then
            upper[pick] = np.fmin(upper[pick], up)
            lower[pick] = np.minimum(np.fmax(lower[pick], lo), upper[pick])
            if np.all(relative_gap(lower[pick], upper[pick]) <= accuracy):
                break
    return lower, upper

def chernoff_tilts(versions, targets, kind) -> np.ndarray:
    """Chernoff-optimal order for each target, rounded to a power of sqrt(2) (reuse)."""
    t = CHERNOFF_ORDERS
    log_c = t * np.log(t) - (t + 1) * np.log1p(t)
    moments = [v.upper.log_mgf for v in versions.values() if v.upper.log_mgf is not None]
    if not moments:
        return np.ones(len(targets))
    log_mgf = np.max(moments, axis=0)
    if kind == "delta":
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
