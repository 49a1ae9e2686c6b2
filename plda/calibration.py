"""Calibration of DP-SGD for a target ``(epsilon, delta)``: noise multiplier, sample rate, steps.

Every function searches on the *certified upper bound* ``epsilon_upper`` (what
:class:`~plda.PLDAccountant` reports) and guarantees its result: the returned value is verified
at the requested ``accuracy`` to give ``epsilon_upper <= target_epsilon``.

Search (bounded work at any target): the parameter is bracketed in log space within fixed limits,
starting for the noise multiplier from the central-limit (Gaussian DP) guess, then Brent's method
(``scipy.optimize.brentq``, at most ``_MAX_ITERATIONS`` evaluations) runs on
``log(epsilon_upper / target)`` at a coarse accuracy (``_SEARCH_ACCURACY``, upper bounds only, on
the grid the first evaluation chose); a few secant steps at the requested accuracy, each a fresh
:class:`~plda.PLDAccountant` as a user would run it, then land the value inside the tolerance band.

Tolerance: for the noise multiplier and the sample rate the result meets
``target * (1 - rtol) <= epsilon_upper <= target`` with ``rtol = 1e-3`` by default (the
``*_detailed`` functions report the achieved bounds; if the band cannot be hit in the iteration
budget the best value that meets the target is returned and ``within_tolerance`` is False).
For the number of steps the result is the largest integer count whose upper bound meets the target
(``epsilon_upper(steps + 1) > target`` is checked).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr

from plda import _validation as check
from plda._internal.errors import CalibrationError, quiet_accuracy, warn_if_inaccurate
from plda.accountant import PLDAccountant
from plda.pld import DEFAULT_ACCURACY

__all__ = [
    "CalibrationResult",
    "calibrate_noise_multiplier",
    "calibrate_noise_multiplier_detailed",
    "calibrate_sample_rate",
    "calibrate_sample_rate_detailed",
    "calibrate_steps",
    "calibrate_steps_detailed",
]

#: accuracy of the epsilon bounds during the search (the final check uses the requested one)
_SEARCH_ACCURACY = 1e-2
#: cap on the evaluations of each search phase
_MAX_ITERATIONS = 40
#: noise multipliers searched
_SIGMA_RANGE = (1e-2, 1e4)
#: smallest sample rate searched
_MIN_SAMPLE_RATE = 1e-9
#: default relative tolerance of the achieved epsilon below the target
DEFAULT_RTOL = 1e-3


@dataclass(frozen=True)
class CalibrationResult:
    """A calibrated parameter with the certified epsilon bounds it achieves.

    Attributes
    ----------
    value
        The calibrated parameter (noise multiplier, sample rate, or steps).
    epsilon_lower, epsilon_upper
        Certified bounds on epsilon at ``delta`` for that value (``epsilon_upper <= target``).
    target_epsilon, delta
        The target.
    within_tolerance
        ``epsilon_upper >= target * (1 - rtol)`` (always True for steps, where the next count
        exceeds the target instead).
    evaluations
        Number of compositions evaluated.
    """

    value: float
    epsilon_lower: float
    epsilon_upper: float
    target_epsilon: float
    delta: float
    within_tolerance: bool
    evaluations: int


class _Objective:
    """``epsilon_upper`` of ``steps`` DP-SGD steps as a function of one parameter."""

    def __init__(self, make, delta: float, relation: str):
        self.make = make  # parameter -> (noise_multiplier, sample_rate, steps)
        self.delta = delta
        self.relation = relation
        self.evaluations = 0
        self.search_step = None  # grid step of the search evaluations, set by the first

    def _accountant(self, parameter, accuracy: float) -> PLDAccountant:
        """A fresh accountant holding the steps for ``parameter`` (one evaluation)."""
        noise_multiplier, sample_rate, steps = self.make(parameter)
        accountant = PLDAccountant(relation=self.relation, accuracy=accuracy)
        accountant.step(noise_multiplier, sample_rate, count=steps)
        self.evaluations += 1
        return accountant

    def bounds(self, parameter, accuracy: float) -> tuple[float, float]:
        accountant = self._accountant(parameter, accuracy)
        try:
            with quiet_accuracy():  # the search judges accuracy; the result is reported once
                lower, upper = accountant.epsilon_bounds(self.delta)
        except (OverflowError, FloatingPointError, MemoryError):
            # extreme parameters the engine cannot discretize: count them as not meeting any
            # target (never reported as a result, only steers the search away)
            return math.inf, math.inf
        return float(lower), float(upper)

    def upper(self, parameter, accuracy: float) -> float:
        """``epsilon_upper`` for the search: no lower bound, and after the first evaluation on
        the grid step chosen there (the parameters searched are close, so the grid search need
        not be redone for each; the value is a certified upper bound on any grid, and the
        final checks at the requested accuracy choose their own grid)."""
        accountant = self._accountant(parameter, accuracy)
        try:
            if self.search_step is not None:
                upper = accountant._upper_on_grid(self.search_step, self.delta)
                if upper is not None:
                    return float(upper)
            upper = float(accountant.epsilon(self.delta))
            self.search_step = accountant._horizon_step(
                accountant.pld.components, np.ravel(self.delta)
            )
            return upper
        except (OverflowError, FloatingPointError, MemoryError):
            return math.inf


def _gdp_noise_multiplier(target_epsilon: float, delta: float, sample_rate: float, steps: int):
    """Starting point for the noise search: the central-limit (Gaussian DP) approximation.

    ``mu`` with ``delta_mu(eps) = delta`` (Dong, Roth & Su 2022, Cor. 2.13), then
    ``mu = q sqrt(T (e^{1/sigma^2} - 1))`` (Bu, Dong, Long & Su 2020) solved for ``sigma``. Only a
    guess (it can be off by tens of percent either way); the search brackets around it."""
    def excess(mu):
        return (
            ndtr(-target_epsilon / mu + mu / 2)
            - math.exp(target_epsilon) * ndtr(-target_epsilon / mu - mu / 2)
            - delta
        )

    try:
        mu = brentq(excess, 1e-6, 1e3, xtol=1e-8)
        return -0.5 * math.log(math.log1p((mu / sample_rate) ** 2 / steps))
    except (ValueError, ZeroDivisionError, OverflowError):
        return 0.0


def _check_target(target_epsilon, target_delta) -> tuple[float, float]:
    target_epsilon = check.positive_float("target_epsilon", target_epsilon)
    target_delta = check.probability("target_delta", target_delta, open_low=True)
    if not target_delta < 1:
        raise ValueError(f"target_delta must be in (0, 1), got {target_delta!r}")
    return target_epsilon, target_delta


def _check_accuracy(accuracy, rtol) -> tuple[float, float]:
    accuracy = check.positive_float("accuracy", accuracy)
    rtol = check.positive_float("rtol", rtol)
    if not accuracy < 1 or not rtol < 1:
        raise ValueError(f"accuracy and rtol must be in (0, 1), got {accuracy!r}, {rtol!r}")
    return accuracy, rtol


def _solve_log(
    objective: _Objective,
    target: float,
    log_range: tuple[float, float],
    increasing: bool,
    accuracy: float,
    rtol: float,
    name: str,
    hint: str,
    start: float = 0.0,
) -> CalibrationResult:
    """Find ``x`` in ``log_range`` (log of the parameter) with
    ``target (1 - rtol) <= epsilon_upper(e^x) <= target``, ``epsilon_upper`` being monotone
    (``increasing`` in ``x`` or not)."""
    lo_x, hi_x = log_range
    safe_end = lo_x if increasing else hi_x  # smallest epsilon
    unsafe_end = hi_x if increasing else lo_x
    toward_unsafe = 1.0 if increasing else -1.0

    memo: dict = {}

    def f(x):
        if x not in memo:
            upper = objective.upper(math.exp(x), _SEARCH_ACCURACY)
            memo[x] = math.log(max(upper, 1e-300) / target) if np.isfinite(upper) else 50.0
        return memo[x]

    # bracket outward from ``start`` by factors 1.25, 2, 4 and 4, then jump to the end of the
    # range (which also settles reachability in one evaluation); a good start needs one move
    moves = [math.log(1.25), math.log(2.0), math.log(4.0), math.log(4.0)]
    x = float(np.clip(start, lo_x, hi_x))
    x_safe = x_unsafe = None
    for attempt in range(6):
        if f(x) <= 0:
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
        lower, upper = objective.bounds(math.exp(safe_end), accuracy)
        if upper > target:
            raise CalibrationError(
                f"target_epsilon={target:g} is unreachable: even {name}="
                f"{math.exp(safe_end):.3g} gives epsilon_upper={upper:.6g}, above the target by "
                f"{upper - target:.3g} ({hint})"
            )
        x_safe = safe_end
    if x_unsafe is None:
        # the whole range meets the target: the end with the largest epsilon is the answer
        lower, upper = objective.bounds(math.exp(unsafe_end), accuracy)
        if upper <= target:
            return _result(unsafe_end, lower, upper, target, objective, rtol, accuracy)
        x_unsafe = unsafe_end
    a, b = sorted((x_safe, x_unsafe))
    # the search accuracy (1e-2) blurs epsilon far more than this xtol; the steps below at the
    # requested accuracy finish the job
    root = brentq(f, a, b, xtol=rtol / 4, rtol=1e-10, maxiter=_MAX_ITERATIONS, disp=False)

    # at the requested accuracy: Newton-like steps on g(x) = log(eps_upper / target) toward
    # log(1 - rtol / 2) (secant slope once two points exist), keeping the best point that
    # meets the target
    goal = math.log1p(-rtol / 2)
    slope = toward_unsafe  # first guess: epsilon roughly proportional to the parameter^(+-1)
    best = None
    previous = None
    x = root
    for _ in range(12):
        lower, upper = objective.bounds(math.exp(x), accuracy)
        g = math.log(max(upper, 1e-300) / target) if np.isfinite(upper) else 50.0
        if upper <= target and (best is None or upper > best[2]):
            best = (x, lower, upper)
        if target * (1 - rtol) <= upper <= target:
            break
        if previous is not None and g != previous[1] and x != previous[0]:
            secant = (g - previous[1]) / (x - previous[0])
            if secant * toward_unsafe > 0:
                slope = secant
        previous = (x, g)
        x = float(np.clip(x + (goal - g) / slope, min(a, b), max(a, b) + 0.0))
        if upper > target and x == previous[0]:
            x = float(np.clip(x - toward_unsafe * 1e-3, lo_x, hi_x))
    if best is None:
        # walk toward the safe end until the target is met
        shift = 1e-3
        x = root
        for _ in range(_MAX_ITERATIONS):
            x = float(np.clip(x - toward_unsafe * shift, lo_x, hi_x))
            lower, upper = objective.bounds(math.exp(x), accuracy)
            if upper <= target:
                best = (x, lower, upper)
                break
            shift *= 2
        if best is None:  # pragma: no cover - the safe end met the target during the search
            raise CalibrationError(f"calibration of {name} did not converge")
    return _result(best[0], best[1], best[2], target, objective, rtol, accuracy)


def _result(x, lower, upper, target, objective, rtol, accuracy) -> CalibrationResult:
    warn_if_inaccurate(lower, upper, accuracy, query="calibration result", stacklevel=4)
    return CalibrationResult(
        value=math.exp(x),
        epsilon_lower=lower,
        epsilon_upper=upper,
        target_epsilon=target,
        delta=objective.delta,
        within_tolerance=bool(upper >= target * (1 - rtol)),
        evaluations=objective.evaluations,
    )


def calibrate_noise_multiplier_detailed(
    target_epsilon: float,
    target_delta: float,
    sample_rate: float,
    steps: int,
    *,
    relation: str = "add_remove",
    accuracy: float = DEFAULT_ACCURACY,
    rtol: float = DEFAULT_RTOL,
) -> CalibrationResult:
    """Smallest-within-``rtol`` noise multiplier whose ``steps`` Poisson-sampled Gaussian steps
    meet ``(target_epsilon, target_delta)``; see :func:`calibrate_noise_multiplier`."""
    target_epsilon, target_delta = _check_target(target_epsilon, target_delta)
    sample_rate = check.probability("sample_rate", sample_rate, open_low=True)
    steps = check.count("steps", steps, minimum=1)
    accuracy, rtol = _check_accuracy(accuracy, rtol)
    objective = _Objective(lambda s: (s, sample_rate, steps), target_delta, relation)
    return _solve_log(
        objective,
        target_epsilon,
        (math.log(_SIGMA_RANGE[0]), math.log(_SIGMA_RANGE[1])),
        increasing=False,
        accuracy=accuracy,
        rtol=rtol,
        name="noise_multiplier",
        hint="raise target_epsilon or lower sample_rate or steps",
        start=_gdp_noise_multiplier(target_epsilon, target_delta, sample_rate, steps),
    )


def calibrate_noise_multiplier(
    target_epsilon: float,
    target_delta: float,
    sample_rate: float,
    steps: int,
    *,
    relation: str = "add_remove",
    accuracy: float = DEFAULT_ACCURACY,
    rtol: float = DEFAULT_RTOL,
) -> float:
    """Noise multiplier ``sigma`` of DP-SGD for a target privacy.

    Returns ``sigma`` with ``target (1 - rtol) <= epsilon_upper(sigma) <= target``, where
    ``epsilon_upper`` is the certified bound of ``steps`` Gaussian steps (noise ``sigma``,
    sensitivity 1) on Poisson samples of rate ``sample_rate``, at ``delta = target_delta``.
    The search covers ``sigma`` in [1e-2, 1e4]; the upper end failing raises ``ValueError``.

    Examples
    --------
    >>> import plda
    >>> sigma = plda.calibrate_noise_multiplier(1.0, 1e-5, sample_rate=0.01, steps=1000)
    >>> acct = plda.PLDAccountant(); acct.step(sigma, 0.01, count=1000)
    >>> 0.998 <= acct.epsilon(1e-5) <= 1.0
    True
    """
    return calibrate_noise_multiplier_detailed(
        target_epsilon,
        target_delta,
        sample_rate,
        steps,
        relation=relation,
        accuracy=accuracy,
        rtol=rtol,
    ).value


def calibrate_sample_rate_detailed(
    target_epsilon: float,
    target_delta: float,
    noise_multiplier: float,
    steps: int,
    *,
    relation: str = "add_remove",
    accuracy: float = DEFAULT_ACCURACY,
    rtol: float = DEFAULT_RTOL,
) -> CalibrationResult:
    """Largest-within-``rtol`` sample rate meeting the target; see
    :func:`calibrate_sample_rate`."""
    target_epsilon, target_delta = _check_target(target_epsilon, target_delta)
    noise_multiplier = check.positive_float("noise_multiplier", noise_multiplier)
    steps = check.count("steps", steps, minimum=1)
    accuracy, rtol = _check_accuracy(accuracy, rtol)
    objective = _Objective(lambda q: (noise_multiplier, min(q, 1.0), steps), target_delta, relation)
    result = _solve_log(
        objective,
        target_epsilon,
        (math.log(_MIN_SAMPLE_RATE), 0.0),
        increasing=True,
        accuracy=accuracy,
        rtol=rtol,
        name="sample_rate",
        hint="raise target_epsilon or noise_multiplier, or lower steps",
        start=math.log(0.01),
    )
    if result.value >= 1.0:
        return CalibrationResult(1.0, *[getattr(result, f) for f in _TAIL_FIELDS])
    return result


_TAIL_FIELDS = (
    "epsilon_lower",
    "epsilon_upper",
    "target_epsilon",
    "delta",
    "within_tolerance",
    "evaluations",
)


def calibrate_sample_rate(
    target_epsilon: float,
    target_delta: float,
    noise_multiplier: float,
    steps: int,
    *,
    relation: str = "add_remove",
    accuracy: float = DEFAULT_ACCURACY,
    rtol: float = DEFAULT_RTOL,
) -> float:
    """Poisson sample rate ``q`` of DP-SGD for a target privacy.

    Returns ``q`` in [1e-9, 1] with ``target (1 - rtol) <= epsilon_upper(q) <= target`` (or
    ``q = 1`` when even full batches meet the target).
    """
    return calibrate_sample_rate_detailed(
        target_epsilon,
        target_delta,
        noise_multiplier,
        steps,
        relation=relation,
        accuracy=accuracy,
        rtol=rtol,
    ).value


def calibrate_steps_detailed(
    target_epsilon: float,
    target_delta: float,
    noise_multiplier: float,
    sample_rate: float,
    *,
    max_steps: int = 10**7,
    relation: str = "add_remove",
    accuracy: float = DEFAULT_ACCURACY,
) -> CalibrationResult:
    """Largest number of steps meeting the target; see :func:`calibrate_steps`."""
    target_epsilon, target_delta = _check_target(target_epsilon, target_delta)
    noise_multiplier = check.positive_float("noise_multiplier", noise_multiplier)
    sample_rate = check.probability("sample_rate", sample_rate, open_low=True)
    max_steps = check.count("max_steps", max_steps, minimum=1)
    check.positive_float("accuracy", accuracy)
    objective = _Objective(
        lambda k: (noise_multiplier, sample_rate, int(k)), target_delta, relation
    )

    def meets(k: int, acc: float) -> tuple[bool, float, float]:
        lower, upper = objective.bounds(k, acc)
        return upper <= target_epsilon, lower, upper

    ok, lower, upper = meets(1, accuracy)
    if not ok:
        raise CalibrationError(
            f"target_epsilon={target_epsilon:g} is unreachable: one step already gives "
            f"epsilon_upper={upper:.6g}, above the target by {upper - target_epsilon:.3g} "
            f"(raise target_epsilon or noise_multiplier, or lower sample_rate)"
        )
    # gallop (doubling) then bisect at the coarse accuracy; the coarse upper bound is close to
    # the fine one, and the final answer is checked (and walked) at the requested accuracy
    good, bad = 1, None
    k = 1
    while bad is None:
        k = min(2 * k, max_steps)
        if meets(k, _SEARCH_ACCURACY)[0]:
            good = k
            if k == max_steps:
                break
        else:
            bad = k
    if bad is not None:
        for _ in range(64):
            if bad - good <= 1:
                break
            mid = (good + bad) // 2
            if meets(mid, _SEARCH_ACCURACY)[0]:
                good = mid
            else:
                bad = mid
    # at the requested accuracy: step down (geometrically) until the target is met, then bisect
    # up to the first count that misses it; bounded work whatever the counts (the old walk took
    # one step at a time)
    ok, lower, upper = meets(good, accuracy)
    shift = max(1, good // 1000)
    for _ in range(_MAX_ITERATIONS):
        if ok or good == 1:
            break
        bad, good = good, max(1, good - shift)
        shift *= 2
        ok, lower, upper = meets(good, accuracy)
    if not ok:
        raise CalibrationError(
            f"calibration of steps did not converge: even one step gives epsilon_upper="
            f"{upper:.6g} at accuracy {accuracy:g}"
        )
    if bad is not None:
        ok_bad, lower_bad, upper_bad = meets(bad, accuracy)
        if ok_bad:  # the finer bound meets the target where the coarse one did not
            good, lower, upper, bad = bad, lower_bad, upper_bad, None
            while bad is None and good < max_steps:
                k = min(2 * good, max_steps)
                ok_k, lower_k, upper_k = meets(k, accuracy)
                if ok_k:
                    good, lower, upper = k, lower_k, upper_k
                else:
                    bad = k
    while bad is not None and bad - good > 1:
        mid = (good + bad) // 2
        ok_mid, lower_mid, upper_mid = meets(mid, accuracy)
        if ok_mid:
            good, lower, upper = mid, lower_mid, upper_mid
        else:
            bad = mid
    warn_if_inaccurate(lower, upper, accuracy, query="calibration result")
    return CalibrationResult(
        value=good,
        epsilon_lower=lower,
        epsilon_upper=upper,
        target_epsilon=target_epsilon,
        delta=target_delta,
        within_tolerance=True,
        evaluations=objective.evaluations,
    )


def calibrate_steps(
    target_epsilon: float,
    target_delta: float,
    noise_multiplier: float,
    sample_rate: float,
    *,
    max_steps: int = 10**7,
    relation: str = "add_remove",
    accuracy: float = DEFAULT_ACCURACY,
) -> int:
    """Largest number of DP-SGD steps (at most ``max_steps``) whose certified
    ``epsilon_upper`` meets ``target_epsilon`` at ``target_delta``.

    Raises ``ValueError`` when a single step already exceeds the target.
    """
    return int(
        calibrate_steps_detailed(
            target_epsilon,
            target_delta,
            noise_multiplier,
            sample_rate,
            max_steps=max_steps,
            relation=relation,
            accuracy=accuracy,
        ).value
    )
