"""The pieces of a calibration problem shared by the solver's phases.

:class:`Target` (what the result must meet), :class:`Parameter` (what is searched),
:class:`CalibrationResult` (what is returned) and :class:`Run` (the bookkeeping of one solve:
evaluations, memo, progress). :mod:`plda.calibration.core` searches, and
:mod:`plda.calibration.finish` lands the result at the requested accuracy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from plda._internal.errors import CalibrationError, warn_if_inaccurate
from plda._internal.validation import MAX_COUNT

__all__ = [
    "DEFAULT_RTOL",
    "MAX_ITERATIONS",
    "SEARCH_ACCURACY",
    "CalibrationResult",
    "Evaluator",
    "Parameter",
    "Progress",
    "Run",
    "Target",
    "log_ratio",
    "make_result",
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
    with it, the starting guess, and whether it is an integer.

    ``slope``, when known, approximates ``d log(objective) / d log(parameter)`` at the start
    (from a model such as Gaussian DP): the search then takes Newton/secant steps from the start
    instead of bracketing by fixed factors. ``hint`` ends the message of an unreachable target.

    ``cap_hint``, when set, says that the end of the range where the objective is largest is a
    search limit (``max_steps``, the smallest noise multiplier searched), not the end of the
    parameter's domain: a target still met there has its answer beyond the limit, and is a
    :class:`~plda.CalibrationError` ending with this advice (which input to change) instead of a
    result pinned at the limit.
    """

    name: str
    low: float
    high: float
    increasing: bool
    start: float
    integer: bool = False
    hint: str = ""
    slope: float | None = None
    cap_hint: str = ""


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


class Run:
    """Bookkeeping of one solve: evaluations, memo of the search values, progress reports."""

    def __init__(self, evaluate, target: Target, parameter: Parameter, progress, budget: int):
        self.evaluate, self.target, self.parameter = evaluate, target, parameter
        self.progress, self.budget = progress, budget
        self.evaluations = 0
        self.done = 0.0
        self.memo: dict = {}  # x -> log(upper / target) on the search grid
        self.pairs: dict = {}  # x -> (lower, upper) on the search grid
        #: latest secant slope of ``g`` in ``x`` (None until two search points exist)
        self.slope: float | None = None

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
            lower, upper = self.bounds(self.value(x), accuracy, search=True)
            self.memo[x] = log_ratio(upper, self.target.value)
            self.pairs[x] = (lower, upper)
        return self.memo[x]

    def value(self, x: float):
        v = math.exp(x)
        if self.parameter.integer:
            return int(min(max(round(v), self.parameter.low), self.parameter.high))
        return min(max(v, self.parameter.low), self.parameter.high)


def log_ratio(upper: float, target: float) -> float:
    """``g = log(upper / target)`` (``<= 0``: the target is met); a large positive number for an
    infinite upper bound (no finite bound: the target is missed)."""
    return math.log(max(upper, 1e-300) / target) if np.isfinite(upper) else 50.0


def refuse_at_cap(run: Run, value, upper: float, accuracy: float) -> None:
    """Raise :class:`~plda.CalibrationError` when ``value``, the limit of the search on the
    objective's increasing side (see :attr:`Parameter.cap_hint`), still meets the target with
    certified upper bound ``upper``: the answer lies beyond the limit. For a count, the limit is
    the answer if one more step already exceeds the target (checked here)."""
    parameter, target = run.parameter, run.target
    if not parameter.cap_hint:
        return
    if parameter.integer and int(value) < MAX_COUNT:
        _, next_upper = run.bounds(int(value) + 1, accuracy)
        if next_upper > target.value:
            return  # the next count exceeds the target: the limit is the answer
    shown = f"{int(value)}" if parameter.integer else f"{value:.3g}"
    raise CalibrationError(
        f"target_{target.objective}={target.value:g} is not reached within the searched range: "
        f"{parameter.name}={shown} still gives {target.bound_name}={upper:.6g}, below the "
        f"target, so the answer lies beyond it: {parameter.cap_hint}"
    )


def make_result(run: Run, value, lower, upper, within: bool, accuracy) -> CalibrationResult:
    """The :class:`CalibrationResult` of ``run`` at ``value`` (warns once, as
    :class:`~plda.AccuracyWarning`, if the gap of its bounds misses ``accuracy``)."""
    target = run.target
    gap = (upper - lower) / upper if upper > 0 and math.isfinite(lower) else 1.0
    warn_if_inaccurate(
        lower, upper, accuracy, query="calibration result",
        advice=f"the calibrated value ({run.parameter.name}) meets the target. Pass accuracy="
        f"{min(0.99, 1.05 * gap):.2g} or more to silence this.",
    )
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
