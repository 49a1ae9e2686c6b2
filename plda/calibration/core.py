"""One calibration solver: a monotone certified objective, a target, a parameter to search.

:func:`solve` searches on coarse evaluations (Newton steps on a slope model, else bracketing in
log space and Brent's method), then :mod:`plda.calibration.finish` lands the result at the
requested accuracy. The strategy and its guarantees: ``docs/accountant.md`` ("Calibration").
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from plda._internal.errors import one_warning_per_call
from plda.calibration.finish import finish_continuous, finish_integer
from plda.calibration.problem import (
    DEFAULT_RTOL,
    MAX_ITERATIONS,
    SEARCH_ACCURACY,
    CalibrationResult,
    Evaluator,
    Parameter,
    Progress,
    Run,
    Target,
    make_result,
    refuse_at_cap,
    unreachable,
)

__all__ = [
    "DEFAULT_RTOL",
    "SEARCH_ACCURACY",
    "SEARCH_TOLERANCE",
    "CalibrationResult",
    "Parameter",
    "Progress",
    "Target",
    "solve",
]

#: the model-guided search stops at ``|log(upper / target)|`` below this (the finish corrects
#: the rest: the coarse grid's own bias is larger)
SEARCH_TOLERANCE = 1e-3
#: evaluations of the model-guided search before falling back to bracketing
NEWTON_STEPS = 6


@one_warning_per_call  # a search meets its sampler's warnings at every evaluation
def solve(
    evaluate: Evaluator,
    target: Target,
    parameter: Parameter,
    *,
    accuracy: float,
    rtol: float = DEFAULT_RTOL,
    progress: Progress | None = None,
) -> CalibrationResult:
    """Calibrate a parameter so that the certified upper bound of the objective meets a target.

    A continuous parameter lands with ``target (1 - rtol) <= upper <= target`` (the result says
    whether that band was hit within the iteration budget; the value always meets the target);
    an integer parameter is the largest count whose upper bound meets the target.

    Parameters
    ----------
    evaluate : Evaluator
        ``evaluate(value, accuracy, search) -> (lower, upper)``: certified bounds on the
        objective at a parameter value (only the upper one is needed when ``search`` is True).
    target : Target
        What the upper bound must meet.
    parameter : Parameter
        The parameter searched: its range, direction, start and optional slope model.
    accuracy : float
        Relative gap ``(upper - lower) / upper`` asked of the bounds at the result.
    rtol : float, optional
        Relative tolerance of the upper bound below the target (continuous parameters).
    progress : callable, optional
        ``progress(fraction, message)``, called after each evaluation.

    Returns
    -------
    CalibrationResult
        The calibrated value with the certified bounds it achieves.

    Raises
    ------
    CalibrationError
        If the target is met nowhere in the parameter's range, or still met at a search limit
        (:attr:`Parameter.cap_hint`) so that the answer lies beyond it.
    """
    run = Run(evaluate, target, parameter, progress, budget=24 if parameter.integer else 8)
    lo_x, hi_x = math.log(parameter.low), math.log(parameter.high)
    inc = parameter.increasing
    safe_end, unsafe_end = (lo_x, hi_x) if inc else (hi_x, lo_x)
    toward_unsafe = 1.0 if inc else -1.0

    if parameter.slope is not None:
        near = _newton_search(run)
        if near is not None:
            return finish_continuous(run, near, accuracy, rtol)
    # bracket outward from the start by factors 1.25, 2, 4 and 4, then jump to the end of the
    # range (which also settles reachability in one evaluation); a good start needs one move
    moves = [math.log(1.25), math.log(2.0), math.log(4.0), math.log(4.0)]
    x = float(np.clip(math.log(parameter.start), lo_x, hi_x))
    x_safe = x_unsafe = None
    for attempt in range(6):
        if run.g(x) <= 0:
            x_safe = x
            if x_unsafe is not None or x == unsafe_end:
                break
            move = toward_unsafe
        else:
            x_unsafe = x
            if x_safe is not None or x == safe_end:
                break
            move = -toward_unsafe
        if attempt < len(moves):
            x = float(np.clip(x + move * moves[attempt], lo_x, hi_x))
        else:
            x = unsafe_end if move == toward_unsafe else safe_end
    if x_safe is None:
        lower, upper = run.bounds(run.value(safe_end), accuracy)
        if upper > target.value:
            raise unreachable(run, run.value(safe_end), upper)
        x_safe = safe_end
    if x_unsafe is None:
        # the whole range meets the target: the end with the largest objective is the answer
        lower, upper = run.bounds(run.value(unsafe_end), accuracy)
        if upper <= target.value:
            refuse_at_cap(run, run.value(unsafe_end), upper, accuracy)
            return make_result(run, run.value(unsafe_end), lower, upper, True, accuracy)
        x_unsafe = unsafe_end
    a, b = sorted((x_safe, x_unsafe))
    xtol = rtol / 4
    # the search accuracy (1e-2) blurs the objective far more than this xtol; the steps below at
    # the requested accuracy finish the job
    if x_safe == safe_end and run.g(safe_end) > 0:
        # met at the safe end only on the requested accuracy's grid, not on the search's
        # coarser one: no sign change to search, the safe end is where the finish starts
        root = safe_end
    else:
        root = brentq(run.g, a, b, xtol=xtol, rtol=1e-10, maxiter=MAX_ITERATIONS, disp=False)
    if parameter.integer:
        return finish_integer(run, root, (a, b), accuracy)
    run.slope = _secant_near(run, root)
    return finish_continuous(run, root, accuracy, rtol)


def _newton_search(run: Run) -> float | None:
    """A point with ``|g| <= SEARCH_TOLERANCE`` on the coarse grid, reached by Newton steps
    from the start (slope from :attr:`Parameter.slope`, then secants; each move at most a
    factor 4, and inside the bracket once one is known); None if the model leads nowhere (the
    caller then brackets, reusing the memoized evaluations). Continuous parameters only."""
    parameter = run.parameter
    lo_x, hi_x = math.log(parameter.low), math.log(parameter.high)
    toward_unsafe = 1.0 if parameter.increasing else -1.0
    slope = parameter.slope
    if not (slope * toward_unsafe > 0 and math.isfinite(slope)):
        return None
    x = float(np.clip(math.log(parameter.start), lo_x, hi_x))
    safe = unsafe = previous = None
    for _ in range(NEWTON_STEPS):
        g = run.g(x)
        if abs(g) <= SEARCH_TOLERANCE:
            run.slope = slope
            return x
        if g >= 50.0:  # no finite bound here: leave it to the bracketing
            return None
        if g <= 0:
            safe = x if safe is None or run.memo[safe] < g else safe
        else:
            unsafe = x if unsafe is None or run.memo[unsafe] > g else unsafe
        if previous is not None and x != previous[0]:
            secant = (g - previous[1]) / (x - previous[0])
            if secant * toward_unsafe > 0:
                slope = secant
        previous = (x, g)
        nxt = x + float(np.clip(-g / slope, -math.log(4.0), math.log(4.0)))
        if safe is not None and unsafe is not None:
            a, b = sorted((safe, unsafe))
            if not a < nxt < b:
                nxt = (a + b) / 2
        nxt = float(np.clip(nxt, lo_x, hi_x))
        if nxt == x:
            return None
        x = nxt
    return None


def _secant_near(run: Run, root: float) -> float | None:
    """Slope of ``g`` between the two memoized search points nearest ``root``."""
    points = sorted(run.memo, key=lambda x: abs(x - root))[:2]
    if len(points) < 2 or points[0] == points[1]:
        return None
    (x0, x1) = points
    if not (run.memo[x0] < 50.0 and run.memo[x1] < 50.0):
        return None
    return (run.memo[x1] - run.memo[x0]) / (x1 - x0)
