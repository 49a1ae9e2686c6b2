"""Inverting monotone functions of one variable, elementwise."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def increasing_inverse(
    function: Callable[[np.ndarray], np.ndarray],
    slope: Callable[[np.ndarray], np.ndarray],
    target: np.ndarray,
) -> np.ndarray:
    """``y`` with ``function(y) = target`` for an increasing ``function`` on the real line
    (vectorized): a bracket ``[lo, hi]`` grown by doubling until it holds the root, then Newton
    steps with ``slope``, falling back to bisection whenever a step leaves the bracket (so it
    converges whatever the curvature), until the step is below 4 ulps of ``|y|``."""
    target = np.asarray(target, dtype=float)
    lo = np.full(target.shape, -1.0)
    hi = np.full(target.shape, 1.0)
    for _ in range(1100):  # 2^1100 > the largest double: every finite root gets bracketed
        low = function(lo) > target
        high = function(hi) < target
        if not (low.any() or high.any()):
            break
        lo = np.where(low, 2 * lo - 1, lo)
        hi = np.where(high, 2 * hi + 1, hi)
    x = 0.5 * (lo + hi)
    for _ in range(100):
        f = function(x) - target
        lo = np.where(f < 0, x, lo)
        hi = np.where(f > 0, x, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = f / slope(x)
        nxt = x - step
        # a step below the tolerance is convergence, even if rounding puts it on or past the
        # bracket's end (bisecting then would jump back across a bracket whose far end may
        # still be where it started)
        tiny = np.abs(step) <= 4e-16 * (1 + np.abs(x))
        bad = ~((nxt > lo) & (nxt < hi)) & ~tiny
        nxt = np.where(bad, 0.5 * (lo + hi), nxt)
        done = tiny | (np.abs(nxt - x) <= 4e-16 * (1 + np.abs(x)))
        x = nxt
        if np.all(done | (f == 0)):
            break
    return x


def convex_increasing_inverse(
    function: Callable[[np.ndarray], np.ndarray],
    slope: Callable[[np.ndarray], np.ndarray],
    target: np.ndarray,
    start: np.ndarray,
) -> np.ndarray:
    """``y`` with ``function(y) = target`` for a *convex* increasing ``function`` (vectorized),
    by Newton steps from points ``start`` at or right of the root (``function(start) >=
    target``). The tangent of a convex function lies below it, so every iterate stays at or
    right of the root and they decrease to it: no step overshoots, whatever the slope, and no
    bracket is needed. A point stops when its step is below 4 ulps of ``|y|`` or rounding puts
    the function at or below the target; a step past the float range gives ``-inf`` (the root
    is below ``-1.8e308``)."""
    target = np.asarray(target, dtype=float)
    x = np.array(start, dtype=float)
    active = np.isfinite(x) & np.isfinite(target)
    for _ in range(200):
        if not active.any():
            break
        xa = x[active]
        f = function(xa) - target[active]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            nxt = xa - f / slope(xa)
        moving = (f > 0) & (nxt < xa - 4e-16 * (1 + np.abs(xa)))
        x[active] = np.where(moving, np.where(np.isnan(nxt), -np.inf, nxt), xa)
        active[active] = moving & np.isfinite(nxt)
    return x
