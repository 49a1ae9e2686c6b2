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
            nxt = x - f / slope(x)
        bad = ~((nxt > lo) & (nxt < hi))
        nxt = np.where(bad, 0.5 * (lo + hi), nxt)
        done = np.abs(nxt - x) <= 4e-16 * (1 + np.abs(x))
        x = nxt
        if np.all(done | (f == 0)):
            break
    return x
