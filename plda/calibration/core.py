"""One calibration solver: a monotone certified objective, a target, a parameter to search.

An *evaluator* maps a parameter value to certified ``(lower, upper)`` bounds on the objective
(epsilon at a delta, the membership-inference true-positive rate at a false-positive rate, or the
advantage); :func:`solve` finds the value whose *upper* bound meets the target and is tight:

* continuous parameters (noise multiplier, sample rate): ``target (1 - rtol) <= upper <= target``
  (``within_tolerance`` says whether the band was hit in the iteration budget; the value returned
  always meets the target);
* integer parameters (steps): the largest count whose upper bound meets the target (the next
  count is checked to exceed it).

Search (bounded work at any target): the parameter is bracketed in log space within its range,
starting from a Gaussian-DP (central-limit) guess, then Brent's method runs on
``log(upper / target)`` at a coarse accuracy, and a few secant steps at the requested accuracy
land inside the band (for integers, a bisection between neighbouring counts finishes).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from plda._internal.errors import CalibrationError, warn_if_inaccurate

__all__ = [
    "DEFAULT_RTOL",
    "SEARCH_ACCURACY",
    "CalibrationResult",
    "Parameter",
    "Progress",
    "Target",
    "solve",
]

#: accuracy of the bounds during the search (the final checks use the requested one)
SEARCH_ACCURACY = 1e-2
#: cap on the evaluations of each search phase
MAX_ITERATIONS = 40
#: default relative tolerance of the achieved upper bound below the target
DEFAULT_RTOL = 1e-3

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class Target:
    """What the calibrated value must meet: ``upper bound of the objective <= value``.

    ``objective`` is ``"epsilon"`` (at ``delta``), ``"true_positive_rate"`` (at
    ``false_positive_rate``) or ``"advantage"``."""

    objective: str
    value: float
    delta: float | None = None
    false_positive_rate: float | None = None

    @property
    def bound_name(self) -> str:
        return f"{self.objective}_upper"


@dataclass(frozen=True)
class Parameter:
    """The searched parameter: its name, range ``[low, high]``, whether the objective increases
    with it, the starting guess, and whether it is an integer."""

    name: str
    low: float
    high: float
    increasing: bool
    start: float
    integer: bool = False
    hint: str = ""


@dataclass(frozen=True)
class CalibrationResult:
    """A calibrated parameter with the certified bounds it achieves.

    Attributes
    ----------
    value
        The calibrated parameter (noise multiplier, sample rate, or steps).
    epsilon_lower, epsilon_upper
        Certified bounds on epsilon at ``delta`` for that value (``epsilon_upper <= target``);
        None when the target is an attack risk.
    target_epsilon, delta
        The epsilon target (None for risk targets).
    within_tolerance
        ``upper >= target * (1 - rtol)`` (always True for steps, where the next count
        exceeds the target instead).
    evaluations
        Number of compositions evaluated.
    objective
        ``"epsilon"``, ``"true_positive_rate"`` or ``"advantage"``.
    lower, upper, target
        Certified bounds on the objective at ``value``, and its target (``upper <= target``).
    false_positive_rate
        The false-positive rate of a ``"true_positive_rate"`` target, else None.
    """

    value: float
    epsilon_lower: float | None
    epsilon_upper: float | None
    target_epsilon: float | None
    delta: float | None
    within_tolerance: bool
    evaluations: int
    objective: str = "epsilon"
    lower: float | None = None
    upper: float | None = None
    target: float | None = None
    false_positive_rate: float | None = None


#: ``evaluate(value, accuracy, search)`` -> certified ``(lower, upper)`` of the objective; with
#: ``search=True`` only the upper bound is needed (lower may be returned as -inf)
Evaluator = Callable[[float, float, bool], tuple]


class _Run:
    """Bookkeeping of one solve: evaluations, memo of the search values, progress reports."""

    def __init__(self, evaluate, target: Target, parameter: Parameter, progress, budget: int):
        self.evaluate, self.target, self.parameter = evaluate, target, parameter
        self.progress, self.budget = progress, budget
        self.evaluations = 0
        self.done = 0.0
        self.memo: dict = {}

    def bounds(self, value: float, accuracy: float, search: bool = False) -> tuple[float, float]:
        lower, upper = self.evaluate(value, accuracy, search)
        self.evaluations += 1
        if self.progress is not None:
            # a monotone estimate of the work done (the budget is a typical count, not a cap)
            self.done = max(self.done, min(0.99, self.evaluations / self.budget))
            shown = f"{value:.6g}" if not self.parameter.integer else f"{int(value)}"
            self.progress(
                self.done,
                f"{self.parameter.name}={shown}: {self.target.bound_name}={upper:.6g} "
                f"(target {self.target.value:g})",
            )
        return float(lower), float(upper)

    def g(self, x: float, accuracy: float = SEARCH_ACCURACY) -> float:
        """``log(upper / target)`` at ``e^x`` on the search grid (memoized)."""
        if x not in self.memo:
            _, upper = self.bounds(self.value(x), accuracy, search=True)
            self.memo[x] = _log_ratio(upper, self.target.value)
        return self.memo[x]

    def value(self, x: float):
        v = math.exp(x)
        if self.parameter.integer:
            return int(min(max(round(v), self.parameter.low), self.parameter.high))
        return min(max(v, self.parameter.low), self.parameter.high)


def _log_ratio(upper: float, target: float) -> float:
    return math.log(max(upper, 1e-300) / target) if np.isfinite(upper) else 50.0


def solve(
    evaluate: Evaluator,
    target: Target,
    parameter: Parameter,
    *,
    accuracy: float,
    rtol: float = DEFAULT_RTOL,
    progress: Progress | None = None,
) -> CalibrationResult:
    """Calibrate ``parameter`` so that the certified upper bound of the objective meets
    ``target`` and is tight (see the module docstring). Raises :class:`CalibrationError` when
    the target cannot be met anywhere in the parameter's range."""
    run = _Run(evaluate, target, parameter, progress, budget=24 if parameter.integer else 8)
    lo_x, hi_x = math.log(parameter.low), math.log(parameter.high)
    inc = parameter.increasing
    safe_end, unsafe_end = (lo_x, hi_x) if inc else (hi_x, lo_x)
    toward_unsafe = 1.0 if inc else -1.0

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
            end = run.value(safe_end)
            where = (
                f"one {parameter.name.rstrip('s')} already gives"
                if parameter.integer and end == 1
                else f"even {parameter.name}={end:.3g} gives"
            )
            raise CalibrationError(
                f"target_{target.objective}={target.value:g} is unreachable: {where} "
                f"{target.bound_name}={upper:.6g}, above the target by "
                f"{upper - target.value:.3g} ({parameter.hint})"
            )
        x_safe = safe_end
    if x_unsafe is None:
        # the whole range meets the target: the end with the largest objective is the answer
        lower, upper = run.bounds(run.value(unsafe_end), accuracy)
        if upper <= target.value:
            return _result(run, run.value(unsafe_end), lower, upper, True, accuracy)
        x_unsafe = unsafe_end
    a, b = sorted((x_safe, x_unsafe))
    xtol = rtol / 4
    # the search accuracy (1e-2) blurs the objective far more than this xtol; the steps below at
    # the requested accuracy finish the job
    root = brentq(run.g, a, b, xtol=xtol, rtol=1e-10, maxiter=MAX_ITERATIONS, disp=False)
    if parameter.integer:
        return _finish_integer(run, root, (a, b), accuracy)
    return _finish_continuous(run, root, (a, b), accuracy, rtol)


def _finish_continuous(run: _Run, root: float, bracket, accuracy: float, rtol: float):
    """Newton-like steps at the requested accuracy on ``g(x) = log(upper / target)`` toward
    ``log(1 - rtol / 2)`` (secant slope once two points exist), keeping the best point that
    meets the target."""
    target, parameter = run.target.value, run.parameter
    lo_x, hi_x = math.log(parameter.low), math.log(parameter.high)
    toward_unsafe = 1.0 if parameter.increasing else -1.0
    # aim at the upper half of the band: a value in the lower half gets one more step (the
    # least noise that meets the target is the point; the band is the guarantee)
    goal = math.log1p(-rtol / 4)
    slope = toward_unsafe  # first guess: objective roughly proportional to parameter^(+-1)
    best = None
    previous = None
    in_band = 0
    x = root
    for _ in range(12):
        lower, upper = run.bounds(run.value(x), accuracy)
        g = _log_ratio(upper, target)
        if upper <= target and (best is None or upper > best[2]):
            best = (x, lower, upper)
        if target * (1 - rtol / 2) <= upper <= target:
            break
        if target * (1 - rtol) <= upper <= target:
            in_band += 1
            if in_band > 1:
                break
        if previous is not None and g != previous[1] and x != previous[0]:
            secant = (g - previous[1]) / (x - previous[0])
            if secant * toward_unsafe > 0:
                slope = secant
        previous = (x, g)
        x = float(np.clip(x + (goal - g) / slope, min(bracket), max(bracket)))
        if upper > target and x == previous[0]:
            x = float(np.clip(x - toward_unsafe * 1e-3, lo_x, hi_x))
    if best is None:
        # walk toward the safe end until the target is met
        shift = 1e-3
        x = root
        for _ in range(MAX_ITERATIONS):
            x = float(np.clip(x - toward_unsafe * shift, lo_x, hi_x))
            lower, upper = run.bounds(run.value(x), accuracy)
            if upper <= target:
                best = (x, lower, upper)
                break
            shift *= 2
        if best is None:  # pragma: no cover - the safe end met the target during the search
            raise CalibrationError(f"calibration of {parameter.name} did not converge")
    x, lower, upper = best
    return _result(run, run.value(x), lower, upper, upper >= target * (1 - rtol), accuracy)


def _finish_integer(run: _Run, root: float, bracket, accuracy: float):
    """The largest count meeting the target at the requested accuracy, near the coarse root.

    Secant steps on the fine ``g(k) = log(upper / target)`` (safeguarded: each new count lies
    strictly between the largest count known to meet the target and the smallest known to miss
    it) land next to the boundary in a few evaluations; a gallop (shifts doubling) closes a
    missing side, and a bisection between neighbouring verdicts finishes. Bounded work whatever
    the counts. Assumes the objective increases with the count (more steps never reduce the
    privacy loss)."""
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
        g = _log_ratio(upper, target)
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
    return _result(run, good, lower, upper, True, accuracy)


def _result(run: _Run, value, lower, upper, within: bool, accuracy) -> CalibrationResult:
    target = run.target
    warn_if_inaccurate(lower, upper, accuracy, query="calibration result", stacklevel=5)
    if run.progress is not None:
        shown = f"{int(value)}" if run.parameter.integer else f"{value:.6g}"
        run.progress(1.0, f"{run.parameter.name}={shown}: done")
    is_epsilon = target.objective == "epsilon"
    return CalibrationResult(
        value=value,
        epsilon_lower=lower if is_epsilon else None,
        epsilon_upper=upper if is_epsilon else None,
        target_epsilon=target.value if is_epsilon else None,
        delta=target.delta,
        within_tolerance=bool(within),
        evaluations=run.evaluations,
        objective=target.objective,
        lower=lower,
        upper=upper,
        target=target.value,
        false_positive_rate=target.false_positive_rate,
    )
