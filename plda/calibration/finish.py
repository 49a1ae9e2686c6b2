"""The last phase of a calibration: land the result at the requested accuracy.

Both functions start next to the root of the coarse search of
:func:`plda.calibration.core.solve`: secant steps for a continuous parameter, a safeguarded
search between neighbouring verdicts for a count.
"""

from __future__ import annotations

import math

import numpy as np

from plda._internal.errors import CalibrationError
from plda.calibration.problem import (
    MAX_ITERATIONS,
    Run,
    log_ratio,
    make_result,
    refuse_at_cap,
    unreachable,
)

__all__ = ["finish_continuous", "finish_integer"]

#: largest move of one secant step in log space (a factor 2): a poor slope cannot throw the
#: search far from the coarse root
MAX_MOVE = math.log(2.0)
#: largest relative coarse gap used to predict the fine upper bound from its ``upper_share``
SHARE_GAP = 0.05
#: most refinements of the final checks at the safe end when it misses the target (each asks
#: a gap at least 4 times finer than the one measured)
REFINEMENTS = 6
#: finest relative gap asked of a final check
FINEST_ACCURACY = 1e-12


def finish_continuous(run: Run, root: float, accuracy: float, rtol: float):
    """Land a continuous parameter so that its upper bound lies in ``[target (1 - rtol), target]``.

    Secant steps at the requested accuracy on ``g(x) = log(upper / target)`` toward the middle
    of the band, ``log(1 - rtol / 2)``, keeping the best point that meets the target. The first
    point is the coarse root moved by the predicted fine upper bound, ``upper - share (upper -
    lower)``, when the evaluator states its ``upper_share`` (both discretizations are second
    order, so the biases keep their ratio as the grid is refined).

    Parameters
    ----------
    run : Run
        The solve, with the memoized coarse evaluations.
    root : float
        The log of the coarse search's root.
    accuracy : float
        Relative gap asked of the bounds at the result.
    rtol : float
        Relative tolerance of the upper bound below the target.

    Returns
    -------
    CalibrationResult
        The best value that meets the target; ``within_tolerance`` says whether it landed in
        the band.

    Raises
    ------
    CalibrationError
        If the value is pinned at a search limit beyond which the answer lies (see
        :func:`~plda.calibration.problem.refuse_at_cap`), or even the safe end of the range
        misses the target on the finest grid tried (the target is unreachable).
    """
    target, parameter = run.target.value, run.parameter
    lo_x, hi_x = math.log(parameter.low), math.log(parameter.high)
    toward_unsafe = 1.0 if parameter.increasing else -1.0
    # not clipped to the coarse bracket: the fine root may lie outside it (the coarse upper
    # bound is the looser one), a bounded move keeps a poor slope from going far
    low, high = lo_x, hi_x
    goal = math.log1p(-rtol / 2)
    # first guess: objective roughly proportional to parameter^(+-1)
    slope = run.slope if run.slope is not None and run.slope * toward_unsafe > 0 else toward_unsafe
    x = root
    share = getattr(run.evaluate, "upper_share", None)
    pair = run.pairs.get(root)
    # only where the coarse gap is small enough to scale like the fine one (step^2): a true-
    # positive rate's lower bound is poor on coarse grids, its gap says little about the upper
    if share and pair is not None and np.all(np.isfinite(pair)) and 0 <= pair[0] <= pair[1]:
        predicted = pair[1] - share * (pair[1] - pair[0])
        if predicted > 0 and pair[1] - pair[0] <= SHARE_GAP * pair[1]:
            move = (goal - log_ratio(predicted, target)) / slope
            x = float(np.clip(root + np.clip(move, -MAX_MOVE, MAX_MOVE), low, high))
    best = None
    previous = None
    stuck = 1e-3
    for _ in range(12):
        lower, upper = run.bounds(run.value(x), accuracy)
        g = log_ratio(upper, target)
        if upper <= target and (best is None or upper > best[2]):
            best = (x, lower, upper)
        if target * (1 - rtol) <= upper <= target:
            break
        flat = previous is not None and g >= previous[1] and upper > target
        if previous is not None and g != previous[1] and x != previous[0]:
            secant = (g - previous[1]) / (x - previous[0])
            if secant * toward_unsafe > 0:
                slope = secant
        previous = (x, g)
        move = float(np.clip((goal - g) / slope, -MAX_MOVE, MAX_MOVE))
        if flat:  # no progress toward the target (a bound stuck at its ceiling): move away
            stuck *= 4
            move = -toward_unsafe * min(stuck, MAX_MOVE)
        x = float(np.clip(x + move, low, high))
        if x == previous[0]:
            if upper <= target:
                break  # pinned at the end of the bracket: the best point stands
            x = float(np.clip(x - toward_unsafe * 1e-3, lo_x, hi_x))
            if x == previous[0]:
                break  # pinned at the safe end, which misses the target: see below
    if best is None:
        best = _first_safe(run, root, accuracy)
    x, lower, upper = best
    within = upper >= target * (1 - rtol)
    if not within and x == (hi_x if parameter.increasing else lo_x):
        refuse_at_cap(run, run.value(x), upper, accuracy)  # pinned at the search limit
    return make_result(run, run.value(x), lower, upper, within, accuracy)


def _first_safe(run: Run, root: float, accuracy: float) -> tuple[float, float, float]:
    """The first point meeting the target on a walk from ``root`` toward the safe end.

    Steps double from 1e-3 in log space. If even the safe end misses the target at
    ``accuracy``, its bounds are refined: the search's coarse grid can be finer than the one a
    relative gap of ``accuracy`` asks (a true-positive-rate target just above its
    false-positive rate lies much closer to the rate than the gap), so the target can be met on
    the search grid and missed on the final one. Each refinement asks a gap at least 4 times
    finer than the one measured (finer still when the target lies near the lower bound); the
    walk is then repeated at the accuracy that met the target.

    Parameters
    ----------
    run : Run
        The solve.
    root : float
        The log of the point the walk starts from (excluded).
    accuracy : float
        Relative gap asked of the bounds.

    Returns
    -------
    tuple of float
        ``(x, lower, upper)``: the log of the point and its certified bounds, ``upper <=
        target``.

    Raises
    ------
    CalibrationError
        If the safe end misses the target on the finest grid tried (the target is unreachable).
    """
    target = run.target.value
    safe = math.log(run.parameter.low if run.parameter.increasing else run.parameter.high)
    x, lower, upper = _walk(run, root, safe, accuracy)
    if upper <= target:
        return x, lower, upper
    finer, least = accuracy, upper
    for _ in range(REFINEMENTS):
        if not lower <= target < upper < math.inf or finer <= FINEST_ACCURACY:
            break  # certified above the target (or no finite bound): no grid meets it
        gap = (upper - lower) / upper
        share = min(0.25, max(1e-3, 0.5 * (target - lower) / (upper - lower)))
        finer = max(FINEST_ACCURACY, min(finer, gap) * share)
        lower, upper = run.bounds(run.value(safe), finer)
        least = min(least, upper)
        if upper <= target:
            point = _walk(run, root, safe, finer)
            return point if point[2] <= target else (safe, lower, upper)
        if not (upper - lower) / upper < gap:
            break  # the grid no longer refines (its size is capped)
    raise unreachable(run, run.value(safe), least)


def _walk(run: Run, root: float, safe: float, accuracy: float) -> tuple[float, float, float]:
    """``(x, lower, upper)`` at the first point meeting the target from ``root`` (excluded)
    toward the safe end ``safe``, by steps doubling from 1e-3 in log space; at ``safe`` (the
    last point walked) if none does."""
    parameter, target = run.parameter, run.target.value
    lo_x, hi_x = math.log(parameter.low), math.log(parameter.high)
    toward_unsafe = 1.0 if parameter.increasing else -1.0
    shift = 1e-3
    x = root
    while True:  # the doubling steps reach the safe end in a few dozen at most
        x = float(np.clip(x - toward_unsafe * shift, lo_x, hi_x))
        lower, upper = run.bounds(run.value(x), accuracy)
        if upper <= target or x == safe:
            return x, lower, upper
        shift *= 2


def finish_integer(run: Run, root: float, bracket, accuracy: float):
    """The largest count meeting the target at the requested accuracy, near the coarse root.

    Safeguarded secant steps on ``g(k) = log(upper / target)`` (each new count strictly between
    the largest known to meet the target and the smallest known to miss it), a gallop to close a
    missing side, then bisection between neighbouring verdicts: bounded work whatever the
    counts. Assumes the objective increases with the count.

    Parameters
    ----------
    run : Run
        The solve, with the memoized coarse evaluations.
    root : float
        The log of the coarse search's root.
    bracket : tuple of float
        The coarse bracket ``(a, b)`` in log space (its slope starts the secant steps).
    accuracy : float
        Relative gap asked of the bounds at the result.

    Returns
    -------
    CalibrationResult
        The largest count whose certified upper bound meets the target.

    Raises
    ------
    CalibrationError
        If even the smallest count misses the target at ``accuracy``, or every count up to the
        limit meets it and the limit is a search cap (the answer lies beyond it).
    """
    parameter, target = run.parameter, run.target.value
    low, high = int(parameter.low), int(parameter.high)
    seen: dict = {}

    def meets(k: int):
        if k not in seen:
            lower, upper = run.bounds(k, accuracy)
            seen[k] = (upper <= target, lower, upper)
        return seen[k]

    a, b = bracket
    # slope of g in log k from the coarse search (the fine one has nearly the same shape)
    ga, gb = run.memo.get(a), run.memo.get(b)
    slope = (gb - ga) / (b - a) if ga is not None and gb is not None and b > a else 0.5
    slope = slope if slope > 0 else 0.5
    good = bad = None
    k = run.value(root)
    for _ in range(8):
        ok, lower, upper = meets(k)
        if ok:
            good = k if good is None else max(good, k)
        else:
            bad = k if bad is None else min(bad, k)
        if good is not None and bad is not None and bad - good <= 1:
            break
        g = log_ratio(upper, target)
        nxt = int(math.floor(math.exp(math.log(k) - g / slope)))
        if good is not None:
            nxt = max(nxt, good + 1)
        if bad is not None:
            nxt = min(nxt, bad - 1)
        nxt = min(max(nxt, low), high)
        if nxt in seen:
            break
        k = nxt
    shift = max(1, (k // 4096))
    for _ in range(MAX_ITERATIONS):  # gallop to close a missing side
        if good is not None and (bad is not None or good == high):
            break
        if good is None:
            if bad == low:
                _, _, upper = meets(low)
                raise CalibrationError(
                    f"calibration of {parameter.name} did not converge: even {low} gives "
                    f"{run.target.bound_name}={upper:.6g} at accuracy {accuracy:g}"
                )
            k = max(low, bad - shift)
            if meets(k)[0]:
                good = k
            else:
                bad = k
        else:
            k = min(high, good + shift)
            if meets(k)[0]:
                good = k
            else:
                bad = k
        shift *= 2
    while bad is not None and bad - good > 1:
        mid = (good + bad) // 2
        if meets(mid)[0]:
            good = mid
        else:
            bad = mid
    _, lower, upper = meets(good)
    if bad is None:  # every count up to the limit meets the target
        refuse_at_cap(run, good, upper, accuracy)
    return make_result(run, good, lower, upper, True, accuracy)
