"""Inverting monotone functions of one variable, elementwise."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Function = Callable[[np.ndarray], np.ndarray]


def increasing_inverse(function: Function, slope: Function, target: np.ndarray) -> np.ndarray:
    """``y`` with ``function(y) = target`` for an increasing ``function`` on the real line
    (vectorized): a bracket ``[lo, hi]`` grown by doubling until it holds the root, then Newton
    steps with ``slope``, falling back to bisection whenever a step leaves the bracket (so it
    converges whatever the curvature), until the step is below 4 ulps of ``|y|``."""
    target = np.asarray(target, dtype=float)
    # the ends are -(2^(k+1) - 1) and 2^(k+1) - 1 for the first k holding the root: found by
    # probing k = 0, 1, 3, 7, 15, ... and bisecting on k (a root near 1e10, a Gaussian epoch
    # at mu 1e10, takes 12 evaluations instead of 70, and the same bracket)
    flat = target.reshape(-1)
    lo = -_doubled_end(lambda y, i: function(-y) > flat[i], len(flat))
    hi = _doubled_end(lambda y, i: function(y) < flat[i], len(flat))
    lo, hi = lo.reshape(target.shape), hi.reshape(target.shape)
    return _newton(function, slope, target, lo, hi, 0.5 * (lo + hi))


#: the largest doubling of a bracket end: 2^1100 - 1 is past the largest double (inf)
_MOST_DOUBLINGS = 1100


def _doubled_end(short, size: int) -> np.ndarray:
    """``2^(k+1) - 1`` for each element's first ``k >= 0`` (at most 1100) at which
    ``short(y, i)``, whether the end ``y`` of the elements ``i`` still falls short of the root,
    is False (ends past the largest double are ``inf``, as doubling made them)."""
    def end(k):
        with np.errstate(over="ignore"):
            return np.ldexp(1.0, k + 1) - 1

    known = np.full(size, -1)  # the largest k known to fall short
    found = np.full(size, _MOST_DOUBLINGS)  # a k known not to (or the cap)
    active, probe = np.arange(size), 0
    while len(active) and probe < _MOST_DOUBLINGS:
        falls = short(end(np.full(len(active), probe)), active)
        known[active[falls]] = probe
        found[active[~falls]] = probe
        active, probe = active[falls], 2 * probe + 1
    active = np.flatnonzero(found - known > 1)
    while len(active):
        middle = (known[active] + found[active]) // 2
        falls = short(end(middle), active)
        known[active] = np.where(falls, middle, known[active])
        found[active] = np.where(falls, found[active], middle)
        active = active[found[active] - known[active] > 1]
    return end(found)


def tabulated_inverse(function: Function, slope: Function, target: np.ndarray,
                      grid: np.ndarray, values: np.ndarray) -> np.ndarray:
    """:func:`increasing_inverse` with the bracket read off a table: ``values =
    function(grid)`` on an increasing ``grid``. A target strictly inside the table's range lies
    between two neighbouring grid points, and Newton starts from the linear interpolation
    between them (a few steps instead of some fifty bisections from a doubled bracket);
    targets outside the range take :func:`increasing_inverse`."""
    target = np.asarray(target, dtype=float)
    flat = target.reshape(-1)
    out = np.empty(flat.shape)
    i = np.searchsorted(values, flat, side="left")  # values[i - 1] < target <= values[i]
    inside = (i > 0) & (i < len(grid))
    if inside.any():
        j = i[inside]
        lo, hi = grid[j - 1], grid[j]
        v_lo, v_hi = values[j - 1], values[j]
        t = flat[inside]
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.clip((t - v_lo) / (v_hi - v_lo), 0.0, 1.0)
        start = np.where(np.isfinite(share), lo + share * (hi - lo), 0.5 * (lo + hi))
        out[inside] = _newton(function, slope, t, lo, hi, start)
    if (~inside).any():
        out[~inside] = increasing_inverse(function, slope, flat[~inside])
    return out.reshape(target.shape)


def _newton(function: Function, slope: Function, target, lo, hi, x) -> np.ndarray:
    """Safeguarded Newton iteration from ``x`` inside the brackets ``[lo, hi]``; each element
    stops once its step is below 4 ulps of ``|x|`` or its residual below 4 ulps of the target,
    and later iterations
    evaluate the unfinished elements only (a few stragglers, whose rounding noise in ``f``
    keeps their steps from vanishing, no longer cost a pass over every element)."""
    shape = np.shape(target)
    x, lo, hi = (np.array(np.broadcast_to(v, shape), dtype=float).reshape(-1)
                 for v in (x, lo, hi))
    target = np.asarray(target, dtype=float).reshape(-1)
    active = np.arange(len(x))
    for _ in range(100):
        xa, ta = x[active], target[active]
        f = function(xa) - ta
        la = np.where(f < 0, xa, lo[active])
        ha = np.where(f > 0, xa, hi[active])
        # a zero, tiny or non-finite slope gives an infinite or NaN step: outside the bracket,
        # so a bisection step (a slope of 1e-300 overflowed f / slope at shift / sigma 1e6)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            nxt = xa - f / slope(xa)
        inside = (nxt > la) & (nxt < ha)
        # converged: a Newton step below 4 ulps of x, or a residual within 4 ulps of the target
        # (as good as the function's own rounding allows: where it is flat, slope ~1e-2, its
        # noise alone keeps the step above 4 ulps of x, and iterating on cost 100 passes for
        # nothing). Such a step may round onto the bracket's end that was just moved to x; it
        # is taken (or x kept), not replaced by a bisection step, which would throw x back to
        # the middle of a stale bracket
        done = ((np.abs(nxt - xa) <= 4e-16 * (1 + np.abs(xa)))
                | (np.abs(f) <= 4e-16 * (1 + np.abs(ta))))
        nxt = np.where(done, np.where(inside, nxt, xa),
                       np.where(inside, nxt, 0.5 * (la + ha)))
        x[active], lo[active], hi[active] = nxt, la, ha
        active = active[~done]
        if not len(active):
            break
    return x.reshape(shape)


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
