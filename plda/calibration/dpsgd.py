"""Calibration of DP-SGD: noise multiplier, sample rate or steps, for a privacy or risk target.

Each public function validates its arguments, builds an evaluator (the parameter -> certified
bounds of the objective for the DP-SGD composition) and hands it to :func:`plda.calibration.core.
solve`. The target is exactly one of

* ``target_epsilon`` with ``target_delta``: ``epsilon_upper(delta) <= target_epsilon``;
* ``target_true_positive_rate`` with ``at_false_positive_rate``: no membership-inference attack
  has a higher true-positive rate at that false-positive rate (``1 - f(alpha)``, both
  neighbouring directions; :func:`plda.risk.true_positive_rate_bounds`);
* ``target_advantage``: no attack has a larger ``TPR - FPR`` (``delta(0)``, total variation;
  :func:`plda.risk.advantage_bounds`).

Epsilon targets are evaluated as :class:`~plda.PLDAccountant` evaluates them (the final value
checks out with a fresh accountant at the same accuracy); risk targets on the
:class:`~plda.PrivacyLossDistribution`. During the coarse search, the grid step chosen by the
first evaluation is kept (the values searched are close, and a bound on any grid is certified).
"""

from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.special import ndtr, ndtri

from plda import _validation as check
from plda._internal.errors import quiet_accuracy
from plda.accountant import PLDAccountant
from plda.calibration.core import (
    DEFAULT_RTOL,
    SEARCH_ACCURACY,
    CalibrationResult,
    Parameter,
    Progress,
    Target,
    solve,
)
from plda.mechanisms import Gaussian, PoissonSampled
from plda.pld import DEFAULT_ACCURACY, PrivacyLossDistribution
from plda.risk import advantage_bounds, true_positive_rate_bounds

__all__ = [
    "calibrate_noise_multiplier",
    "calibrate_noise_multiplier_detailed",
    "calibrate_sample_rate",
    "calibrate_sample_rate_detailed",
    "calibrate_steps",
    "calibrate_steps_detailed",
    "gdp_noise_multiplier",
    "make_target",
]

#: noise multipliers searched
SIGMA_RANGE = (1e-2, 1e4)
#: smallest sample rate searched
MIN_SAMPLE_RATE = 1e-9
#: grid refinements of a risk objective beyond the engine's epsilon-driven grid
_REFINEMENTS = 4


def make_target(
    target_epsilon=None,
    target_delta=None,
    *,
    target_true_positive_rate=None,
    at_false_positive_rate=None,
    target_advantage=None,
) -> Target:
    """The one target of a calibration call; ``ValueError`` naming the arguments unless exactly
    one kind is given, completely."""
    kinds = {
        "target_epsilon/target_delta": (target_epsilon, target_delta),
        "target_true_positive_rate/at_false_positive_rate": (
            target_true_positive_rate,
            at_false_positive_rate,
        ),
        "target_advantage": (target_advantage,),
    }
    given = [name for name, values in kinds.items() if any(v is not None for v in values)]
    if len(given) != 1:
        raise ValueError(
            "give exactly one calibration target: target_epsilon with target_delta, or "
            "target_true_positive_rate with at_false_positive_rate, or target_advantage; got "
            + (", ".join(given) if given else "none")
        )
    if given[0].startswith("target_epsilon"):
        if target_epsilon is None or target_delta is None:
            raise ValueError("target_epsilon and target_delta must be given together")
        eps = check.positive_float("target_epsilon", target_epsilon)
        delta = check.probability("target_delta", target_delta, open_low=True)
        if not delta < 1:
            raise ValueError(f"target_delta must be in (0, 1), got {target_delta!r}")
        return Target(objective="epsilon", value=eps, delta=delta)
    if given[0].startswith("target_true"):
        if target_true_positive_rate is None or at_false_positive_rate is None:
            raise ValueError(
                "target_true_positive_rate and at_false_positive_rate must be given together"
            )
        alpha = check.probability("at_false_positive_rate", at_false_positive_rate, open_low=True)
        tpr = check.probability("target_true_positive_rate", target_true_positive_rate)
        if not alpha < tpr < 1:
            raise ValueError(
                "target_true_positive_rate must be in (at_false_positive_rate, 1) (every test "
                f"reaches TPR = FPR), got {target_true_positive_rate!r} at "
                f"at_false_positive_rate={at_false_positive_rate!r}"
            )
        return Target(objective="true_positive_rate", value=tpr, false_positive_rate=alpha)
    advantage = check.probability("target_advantage", target_advantage, open_low=True)
    if not advantage < 1:
        raise ValueError(f"target_advantage must be in (0, 1), got {target_advantage!r}")
    return Target(objective="advantage", value=advantage)


def gdp_mu(target: Target) -> float:
    """Gaussian-DP ``mu`` that just meets ``target`` (a starting point only).

    Epsilon: ``delta_mu(eps) = delta`` (Dong, Roth & Su 2022, Cor. 2.13); true-positive rate:
    ``1 - G_mu(alpha) = Phi(Phi^-1(alpha) + mu)``; advantage: ``2 Phi(mu / 2) - 1``."""
    if target.objective == "true_positive_rate":
        return float(ndtri(target.value) - ndtri(target.false_positive_rate))
    if target.objective == "advantage":
        return float(2 * ndtri((1 + target.value) / 2))
    eps, delta = target.value, target.delta

    def excess(mu):
        return ndtr(-eps / mu + mu / 2) - math.exp(eps) * ndtr(-eps / mu - mu / 2) - delta

    try:
        return brentq(excess, 1e-6, 1e3, xtol=1e-8)
    except (ValueError, ZeroDivisionError, OverflowError):
        return 1.0


def gdp_noise_multiplier(target_epsilon: float, delta: float, sample_rate: float, steps: int):
    """Log of the central-limit (Gaussian DP) noise multiplier for an epsilon target:
    ``mu = q sqrt(T (e^{1/sigma^2} - 1))`` (Bu, Dong, Long & Su 2020) solved for ``sigma``.
    Only a guess (it can be off by tens of percent either way); the search brackets around it."""
    mu = gdp_mu(Target(objective="epsilon", value=target_epsilon, delta=delta))
    return _log_sigma(mu, sample_rate, steps)


def _log_sigma(mu: float, sample_rate: float, steps: int) -> float:
    try:
        return -0.5 * math.log(math.log1p((mu / sample_rate) ** 2 / steps))
    except (ValueError, ZeroDivisionError, OverflowError):
        return 0.0


class _Evaluator:
    """DP-SGD composition for a parameter value -> certified bounds of the target objective."""

    def __init__(self, make, target: Target, relation: str):
        self.make = make  # parameter -> (noise_multiplier, sample_rate, steps)
        self.target = target
        self.relation = relation
        self.search_step = None  # grid step of the search evaluations, set by the first

    def __call__(self, value, accuracy: float, search: bool) -> tuple[float, float]:
        sigma, rate, steps = self.make(value)
        try:
            with quiet_accuracy():  # the solver reports the accuracy of its result once
                if self.target.objective == "epsilon" and not search:
                    accountant = PLDAccountant(relation=self.relation, accuracy=accuracy)
                    accountant.step(sigma, rate, count=steps)
                    return tuple(accountant.epsilon_bounds(self.target.delta))
                step = self.search_step if search else None
                mechanism = PoissonSampled(Gaussian(sigma=sigma), sample_rate=rate)
                pld = PrivacyLossDistribution(
                    ((mechanism, steps),), self.relation, accuracy, step=step
                )
                bounds = self._objective(pld)
                if search:
                    if self.search_step is None:
                        self.search_step = pld.grid_step
                    return bounds
                return self._refined(pld, bounds, accuracy)
        except (OverflowError, FloatingPointError, MemoryError):
            # extreme parameters the engine cannot discretize: count them as not meeting any
            # target (never reported as a result, only steers the search away)
            return math.inf, math.inf

    def _refined(self, pld: PrivacyLossDistribution, bounds, accuracy: float):
        """Refine the grid until the relative gap of the objective meets ``accuracy``: the
        engine chooses its grid for the epsilon gap, and the tradeoff curve at a small
        false-positive rate can need a finer one (both bounds hold on every grid, so the
        tighter pair of each refinement is kept)."""
        lower, upper = bounds
        step = pld.grid_step
        for _ in range(_REFINEMENTS):
            gap = (upper - lower) / upper if upper > 0 else 0.0
            if not gap > accuracy:
                break
            # the gap falls about like step^2: aim a little below the accuracy, at least halve
            step *= min(0.5, max(0.125, 0.9 * math.sqrt(accuracy / gap)))
            finer = PrivacyLossDistribution(pld.components, pld.relation, accuracy, step=step)
            try:
                lo, up = self._objective(finer)
            except MemoryError:
                break
            lower, upper = max(lower, lo), min(upper, up)
        return lower, upper

    def _objective(self, pld: PrivacyLossDistribution) -> tuple[float, float]:
        target = self.target
        if target.objective == "epsilon":
            bounds = pld.epsilon_bounds(target.delta)
        elif target.objective == "true_positive_rate":
            bounds = true_positive_rate_bounds(pld, target.false_positive_rate)
        else:
            bounds = advantage_bounds(pld)
        return float(bounds.lower), float(bounds.upper)


def _check_options(accuracy, rtol, progress) -> tuple[float, float]:
    accuracy = check.positive_float("accuracy", accuracy)
    rtol = check.positive_float("rtol", rtol)
    if not accuracy < 1 or not rtol < 1:
        raise ValueError(f"accuracy and rtol must be in (0, 1), got {accuracy!r}, {rtol!r}")
    if progress is not None and not callable(progress):
        raise TypeError(
            f"progress must be a callable (fraction, message) or None, got {progress!r}"
        )
    return accuracy, rtol


def calibrate_noise_multiplier_detailed(
    target_epsilon: float | None = None,
    target_delta: float | None = None,
    sample_rate: float | None = None,
    steps: int | None = None,
    *,
    target_true_positive_rate: float | None = None,
    at_false_positive_rate: float | None = None,
    target_advantage: float | None = None,
    relation: str = "add_remove",
    accuracy: float = DEFAULT_ACCURACY,
    rtol: float = DEFAULT_RTOL,
    progress: Progress | None = None,
) -> CalibrationResult:
    """Smallest-within-``rtol`` noise multiplier whose ``steps`` Poisson-sampled Gaussian steps
    meet the target, with its certified bounds; see :func:`calibrate_noise_multiplier`."""
    target = make_target(
        target_epsilon,
        target_delta,
        target_true_positive_rate=target_true_positive_rate,
        at_false_positive_rate=at_false_positive_rate,
        target_advantage=target_advantage,
    )
    sample_rate = check.probability("sample_rate", sample_rate, open_low=True)
    steps = check.count("steps", steps, minimum=1)
    accuracy, rtol = _check_options(accuracy, rtol, progress)
    start = math.exp(_log_sigma(gdp_mu(target), sample_rate, steps))
    parameter = Parameter(
        name="noise_multiplier",
        low=SIGMA_RANGE[0],
        high=SIGMA_RANGE[1],
        increasing=False,
        start=min(max(start, SIGMA_RANGE[0]), SIGMA_RANGE[1]),
        hint="raise the target or lower sample_rate or steps",
    )
    evaluate = _Evaluator(lambda s: (s, sample_rate, steps), target, relation)
    return solve(evaluate, target, parameter, accuracy=accuracy, rtol=rtol, progress=progress)


def calibrate_noise_multiplier(
    target_epsilon: float | None = None,
    target_delta: float | None = None,
    sample_rate: float | None = None,
    steps: int | None = None,
    *,
    target_true_positive_rate: float | None = None,
    at_false_positive_rate: float | None = None,
    target_advantage: float | None = None,
    relation: str = "add_remove",
    accuracy: float = DEFAULT_ACCURACY,
    rtol: float = DEFAULT_RTOL,
    progress: Progress | None = None,
) -> float:
    """Noise multiplier ``sigma`` of DP-SGD for a target privacy or attack risk.

    Returns ``sigma`` with ``target (1 - rtol) <= upper(sigma) <= target``, where ``upper`` is
    the certified upper bound of the objective for ``steps`` Gaussian steps (noise ``sigma``,
    sensitivity 1) on Poisson samples of rate ``sample_rate``. The objective is one of:
    ``epsilon(target_delta)``; the best membership-inference true-positive rate at
    ``at_false_positive_rate``, ``1 - f(alpha)`` (Kulynych et al. 2024, "Attack-aware noise
    calibration for differential privacy"; Dong, Roth & Su 2019); or the advantage
    ``max(TPR - FPR) = delta(0)``. Both neighbouring directions are covered under
    ``"add_remove"``. The search covers ``sigma`` in [1e-2, 1e4]; the upper end failing raises
    :class:`~plda.CalibrationError` (a ``ValueError``). ``progress(fraction, message)`` is
    called after each evaluation.

    Examples
    --------
    >>> import plda
    >>> sigma = plda.calibrate_noise_multiplier(1.0, 1e-5, sample_rate=0.01, steps=1000)
    >>> acct = plda.PLDAccountant(); acct.step(sigma, 0.01, count=1000)
    >>> 0.998 <= acct.epsilon(1e-5) <= 1.0
    True
    >>> sigma = plda.calibrate_noise_multiplier(
    ...     sample_rate=0.01, steps=1000, target_true_positive_rate=0.02,
    ...     at_false_positive_rate=1e-3)
    >>> 0.65 < sigma < 0.66
    True
    """
    return calibrate_noise_multiplier_detailed(
        target_epsilon,
        target_delta,
        sample_rate,
        steps,
        target_true_positive_rate=target_true_positive_rate,
        at_false_positive_rate=at_false_positive_rate,
        target_advantage=target_advantage,
        relation=relation,
        accuracy=accuracy,
        rtol=rtol,
        progress=progress,
    ).value


def calibrate_sample_rate_detailed(
    target_epsilon: float | None = None,
    target_delta: float | None = None,
    noise_multiplier: float | None = None,
    steps: int | None = None,
    *,
    target_true_positive_rate: float | None = None,
    at_false_positive_rate: float | None = None,
    target_advantage: float | None = None,
    relation: str = "add_remove",
    accuracy: float = DEFAULT_ACCURACY,
    rtol: float = DEFAULT_RTOL,
    progress: Progress | None = None,
) -> CalibrationResult:
    """Largest-within-``rtol`` sample rate meeting the target; see
    :func:`calibrate_sample_rate`."""
    target = make_target(
        target_epsilon,
        target_delta,
        target_true_positive_rate=target_true_positive_rate,
        at_false_positive_rate=at_false_positive_rate,
        target_advantage=target_advantage,
    )
    noise_multiplier = check.positive_float("noise_multiplier", noise_multiplier)
    steps = check.count("steps", steps, minimum=1)
    accuracy, rtol = _check_options(accuracy, rtol, progress)
    parameter = Parameter(
        name="sample_rate",
        low=MIN_SAMPLE_RATE,
        high=1.0,
        increasing=True,
        start=0.01,
        hint="raise the target or noise_multiplier, or lower steps",
    )
    evaluate = _Evaluator(lambda q: (noise_multiplier, min(q, 1.0), steps), target, relation)
    return solve(evaluate, target, parameter, accuracy=accuracy, rtol=rtol, progress=progress)


def calibrate_sample_rate(
    target_epsilon: float | None = None,
    target_delta: float | None = None,
    noise_multiplier: float | None = None,
    steps: int | None = None,
    *,
    target_true_positive_rate: float | None = None,
    at_false_positive_rate: float | None = None,
    target_advantage: float | None = None,
    relation: str = "add_remove",
    accuracy: float = DEFAULT_ACCURACY,
    rtol: float = DEFAULT_RTOL,
    progress: Progress | None = None,
) -> float:
    """Poisson sample rate ``q`` of DP-SGD for a target privacy or attack risk.

    Returns ``q`` in [1e-9, 1] with ``target (1 - rtol) <= upper(q) <= target`` (or ``q = 1``
    when even full batches meet the target); targets as in :func:`calibrate_noise_multiplier`.
    """
    return calibrate_sample_rate_detailed(
        target_epsilon,
        target_delta,
        noise_multiplier,
        steps,
        target_true_positive_rate=target_true_positive_rate,
        at_false_positive_rate=at_false_positive_rate,
        target_advantage=target_advantage,
        relation=relation,
        accuracy=accuracy,
        rtol=rtol,
        progress=progress,
    ).value


def calibrate_steps_detailed(
    target_epsilon: float | None = None,
    target_delta: float | None = None,
    noise_multiplier: float | None = None,
    sample_rate: float | None = None,
    *,
    target_true_positive_rate: float | None = None,
    at_false_positive_rate: float | None = None,
    target_advantage: float | None = None,
    max_steps: int = 10**7,
    relation: str = "add_remove",
    accuracy: float = DEFAULT_ACCURACY,
    progress: Progress | None = None,
) -> CalibrationResult:
    """Largest number of steps meeting the target; see :func:`calibrate_steps`."""
    target = make_target(
        target_epsilon,
        target_delta,
        target_true_positive_rate=target_true_positive_rate,
        at_false_positive_rate=at_false_positive_rate,
        target_advantage=target_advantage,
    )
    noise_multiplier = check.positive_float("noise_multiplier", noise_multiplier)
    sample_rate = check.probability("sample_rate", sample_rate, open_low=True)
    max_steps = check.count("max_steps", max_steps, minimum=1)
    accuracy, _ = _check_options(accuracy, DEFAULT_RTOL, progress)
    # central-limit guess: mu = q sqrt(T (e^{1/sigma^2} - 1)) solved for T (the search brackets
    # around it, so a guess off by tens of percent costs one or two coarse evaluations)
    try:
        guess = (gdp_mu(target) / sample_rate) ** 2 / math.expm1(noise_multiplier**-2)
    except OverflowError:
        guess = 1.0
    parameter = Parameter(
        name="steps",
        low=1,
        high=max_steps,
        increasing=True,
        start=min(max(guess, 1.0), float(max_steps)) if math.isfinite(guess) else 1.0,
        integer=True,
        hint="raise the target or noise_multiplier, or lower sample_rate",
    )
    evaluate = _Evaluator(lambda k: (noise_multiplier, sample_rate, int(k)), target, relation)
    return solve(
        evaluate,
        target,
        parameter,
        accuracy=accuracy,
        rtol=SEARCH_ACCURACY / 4,
        progress=progress,
    )


def calibrate_steps(
    target_epsilon: float | None = None,
    target_delta: float | None = None,
    noise_multiplier: float | None = None,
    sample_rate: float | None = None,
    *,
    target_true_positive_rate: float | None = None,
    at_false_positive_rate: float | None = None,
    target_advantage: float | None = None,
    max_steps: int = 10**7,
    relation: str = "add_remove",
    accuracy: float = DEFAULT_ACCURACY,
    progress: Progress | None = None,
) -> int:
    """Largest number of DP-SGD steps (at most ``max_steps``) whose certified upper bound meets
    the target (targets as in :func:`calibrate_noise_multiplier`).

    Raises :class:`~plda.CalibrationError` (a ``ValueError``) when a single step already exceeds
    the target.
    """
    return int(
        calibrate_steps_detailed(
            target_epsilon,
            target_delta,
            noise_multiplier,
            sample_rate,
            target_true_positive_rate=target_true_positive_rate,
            at_false_positive_rate=at_false_positive_rate,
            target_advantage=target_advantage,
            max_steps=max_steps,
            relation=relation,
            accuracy=accuracy,
            progress=progress,
        ).value
    )
