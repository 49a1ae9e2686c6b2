"""The pieces of a calibration problem shared by the solver's phases.

:class:`Target` (what the result must meet), :class:`Parameter` (what is searched),
:class:`CalibrationResult` (what is returned) and :class:`Run` (the bookkeeping of one solve).
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
    "max_steps_hint",
    "unreachable",
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

    Build it with :func:`plda.calibration.targets.make_target`, which checks the arguments.

    Attributes
    ----------
    objective : str
        ``"epsilon"`` (at ``delta``), ``"true_positive_rate"`` (at ``false_positive_rate``) or
        ``"advantage"``.
    value : float
        The target the certified upper bound must not exceed.
    delta : float or None
        The delta of an epsilon target, else None.
    false_positive_rate : float or None
        The false-positive rate of a true-positive-rate target, else None.
    """

    objective: str
    value: float
    delta: float | None = None
    false_positive_rate: float | None = None

    @property
    def bound_name(self) -> str:
        """The name of the bound compared with the target in messages, e.g. ``"epsilon_upper"``."""
        return f"{self.objective}_upper"


@dataclass(frozen=True)
class Parameter:
    """The searched parameter: its name, range, direction, start, and whether it is an integer.

    Attributes
    ----------
    name : str
        The parameter's name in messages (``"noise_multiplier"``, ``"sample_rate"``, ``"steps"``).
    low, high : float
        The range searched, ``0 < low < high``.
    increasing : bool
        Whether the objective increases with the parameter.
    start : float
        The first value evaluated.
    integer : bool
        Whether the parameter is a count.
    hint : str
        Ends the message of an unreachable target (which input to change).
    slope : float or None
        Approximate ``d log(objective) / d log(parameter)`` at the start (from a model such as
        Gaussian DP): the search then takes Newton and secant steps from the start instead of
        bracketing by fixed factors. None: no model.
    cap_hint : str
        When set, the end of the range where the objective is largest is a search limit
        (``max_steps``, the smallest noise multiplier searched), not the end of the domain: a
        target still met there is a :class:`~plda.CalibrationError` ending with this advice,
        never a result pinned at the limit.
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
    """Bookkeeping of one solve: evaluations, memo of the search values, progress reports.

    Parameters
    ----------
    evaluate : Evaluator
        Parameter value -> certified ``(lower, upper)`` of the objective.
    target : Target
        What the result must meet.
    parameter : Parameter
        The parameter searched.
    progress : callable or None
        ``progress(fraction, message)``, called after each evaluation.
    budget : int
        A typical number of evaluations, to report progress (not a cap).
    """

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
        """Evaluate the objective at a parameter value, counting and reporting the evaluation.

        Parameters
        ----------
        value : float
            The parameter value.
        accuracy : float
            The relative gap asked of the bounds.
        search : bool, optional
            Whether this is a coarse search evaluation (only the upper bound is needed).

        Returns
        -------
        tuple of float
            Certified ``(lower, upper)`` on the objective.
        """
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
        """``g(x) = log(upper / target)`` at the parameter value ``e^x``, on the search grid.

        Memoized: the search revisits points for free.

        Parameters
        ----------
        x : float
            The log of the parameter value.
        accuracy : float, optional
            The accuracy of the evaluation (the coarse search accuracy by default).

        Returns
        -------
        float
            ``g(x)``, at most 0 where the target is met (see :func:`log_ratio`).
        """
        if x not in self.memo:
            lower, upper = self.bounds(self.value(x), accuracy, search=True)
            self.memo[x] = log_ratio(upper, self.target.value)
            self.pairs[x] = (lower, upper)
        return self.memo[x]

    def value(self, x: float):
        """The parameter value ``e^x``, clipped to the range (and rounded for a count).

        Parameters
        ----------
        x : float
            The log of the parameter value.

        Returns
        -------
        float or int
            The value in ``[low, high]``; an int for an integer parameter.
        """
        v = math.exp(x)
        if self.parameter.integer:
            return int(min(max(round(v), self.parameter.low), self.parameter.high))
        return min(max(v, self.parameter.low), self.parameter.high)


def log_ratio(upper: float, target: float) -> float:
    """The search function ``g = log(upper / target)``: at most 0 where the target is met.

    Parameters
    ----------
    upper : float
        A certified upper bound on the objective.
    target : float
        The target, > 0.

    Returns
    -------
    float
        ``log(upper / target)``; 50 for an infinite upper bound (no finite bound: the target is
        missed).
    """
    return math.log(max(upper, 1e-300) / target) if np.isfinite(upper) else 50.0


def refuse_at_cap(run: Run, value, upper: float, accuracy: float) -> None:
    """Refuse a result pinned at a search limit when the answer lies beyond it.

    For a count, the limit is the answer if one more step already exceeds the target (checked
    here). Parameters without :attr:`Parameter.cap_hint` are never refused.

    Parameters
    ----------
    run : Run
        The solve.
    value : float or int
        The limit of the search on the objective's increasing side.
    upper : float
        The certified upper bound at ``value``, which meets the target.
    accuracy : float
        The accuracy of the evaluation of the next count.

    Raises
    ------
    CalibrationError
        If the target is still met at the limit, with the advice of ``cap_hint``.
    """
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


def unreachable(run: Run, value, upper: float) -> CalibrationError:
    """The error of a target that even the safe end of the search misses.

    Parameters
    ----------
    run : Run
        The solve.
    value : float or int
        The safe end of the range (least objective).
    upper : float
        The certified upper bound there, above the target.

    Returns
    -------
    CalibrationError
        Saying which bound failed and by how much, and which input to change; the target is
        shown as given and the bound with as many digits, more if they would print the same (a
        true-positive-rate target just above its false-positive rate is close to the bound).
    """
    parameter, target = run.parameter, run.target
    where = (
        f"one {parameter.name.rstrip('s')} already gives"
        if parameter.integer and value == 1
        else f"even {parameter.name}={value:.3g} gives"
    )
    digits = 6  # the target as given, the bound with as many (more if they print the same)
    while digits < 17 and (
        float(f"{target.value:.{digits}g}") != target.value
        or f"{upper:.{digits}g}" == f"{target.value:.{digits}g}"
    ):
        digits += 1
    return CalibrationError(
        f"target_{target.objective}={target.value:.{digits}g} is unreachable: {where} "
        f"{target.bound_name}={upper:.{digits}g}, above the target by "
        f"{upper - target.value:.3g} ({parameter.hint})"
    )


def make_result(run: Run, value, lower, upper, within: bool, accuracy) -> CalibrationResult:
    """The :class:`CalibrationResult` of a solve at its final value.

    Warns once, as :class:`~plda.AccuracyWarning`, if the gap of the bounds misses ``accuracy``;
    reports completion to ``run.progress``.

    Parameters
    ----------
    run : Run
        The solve.
    value : float or int
        The calibrated value.
    lower, upper : float
        Certified bounds on the objective at ``value``.
    within : bool
        Whether the upper bound landed within the tolerance band.
    accuracy : float
        The accuracy that was asked of the bounds.

    Returns
    -------
    CalibrationResult
        The result, with the target's fields and the number of evaluations.
    """
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


def max_steps_hint(max_steps: int) -> str:
    """What to change when a steps target is still met at ``max_steps``.

    Parameters
    ----------
    max_steps : int
        The largest count searched.

    Returns
    -------
    str
        The advice that ends the :class:`~plda.CalibrationError`.
    """
    most = f"{MAX_COUNT:.0e}".replace("e+", "e")
    if max_steps >= MAX_COUNT:
        return (
            f"max_steps={max_steps} is the most steps plda certifies ({most}); lower the "
            "target or noise_multiplier, or raise sample_rate"
        )
    return f"pass a larger max_steps (plda certifies up to {most} steps), or lower the target"
