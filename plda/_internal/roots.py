"""Inverting monotone functions of one variable, elementwise."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def increasing_inverse(
    function: Callable[[np.ndarray], np.ndarray],
    slope: Callable[[np.ndarray], np.ndarray],
    target: np.ndarray,
    bracket: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """``y`` with ``function(y) = target`` for an increasing ``function`` on the real line
    (vectorized): a bracket ``[lo, hi]`` (``bracket`` if given, else ``[-1, 1]``) grown by
    doubling until it holds the root, then Newton steps with ``slope``, falling back to
    bisection whenever a step leaves the bracket (so it converges whatever the curvature), until
    the step is below 4 ulps of ``|y|``."""
    target = np.asarray(target, dtype=float)
    if bracket is None:
        lo = np.full(target.shape, -1.0)
        hi = np.full(target.shape, 1.0)
    else:  # a guess: still checked, and grown where it misses the root
        lo = np.broadcast_to(np.asarray(bracket[0], dtype=float), target.shape).copy()
        hi = np.broadcast_to(np.asarray(bracket[1], dtype=float), target.shape).copy()
    for _ in range(1100):  # 2^1100 > the largest double: every finite root gets bracketed
        low = function(lo) > target
        high = function(hi) < target
        if not (low.any() or high.any()):
            break
        # 2 lo - 1 and 2 hi + 1 for the default bracket; outward from any other one
        lo = np.where(low, lo - (1 + np.abs(lo)), lo)
        hi = np.where(high, hi + (1 + np.abs(hi)), hi)
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
