"""Calibration of DP-SGD: noise multiplier, sample rate or steps, for a privacy or risk target.

Each public function validates its arguments, builds an evaluator (the parameter -> certified
bounds of the objective for the DP-SGD composition) and hands it to :func:`plda.calibration.core.
solve`. The target is exactly one of

* ``target_epsilon`` with ``target_delta``: ``epsilon_upper(delta) <= target_epsilon``;
* ``target_true_positive_rate`` with ``at_false_positive_rate``: no membership-inference attack
  has a higher true-positive rate at that false-positive rate (``1 - f(alpha)``, both
  neighbouring directions; :meth:`~plda.PrivacyLossDistribution.true_positive_rate_bounds`);
* ``target_advantage``: no attack has a larger ``TPR - FPR`` (``delta(0)``, total variation;
  :meth:`~plda.PrivacyLossDistribution.advantage_bounds`).

Epsilon targets are evaluated as :class:`~plda.PLDAccountant` evaluates them (the final value
checks out with a fresh accountant at the same accuracy); risk targets on the
:class:`~plda.PrivacyLossDistribution` on grids of their own (one step per accuracy, predicted
from the measured gap; see :class:`~plda.calibration.targets.DPSGDEvaluator`). During the
coarse search the grid step is kept (the values searched are close, and a bound on any grid is
certified); for risk targets the search starts with Newton steps on the Gaussian-DP model.
"""

from __future__ import annotations

import math

from plda._internal import validation as check
from plda.calibration.core import (
    SEARCH_ACCURACY,
    CalibrationResult,
    Parameter,
    Progress,
    solve,
)
from plda.calibration.evaluator import DPSGDEvaluator
from plda.calibration.targets import (
    check_options,
    gdp_mu,
    gdp_slope,
    log_sigma,
    make_target,
)
from plda.samplers import Sampler

__all__ = [
    "DEFAULT_MAX_STEPS",
    "calibrate_noise_multiplier",
    "calibrate_noise_multiplier_detailed",
    "calibrate_sample_rate",
    "calibrate_sample_rate_detailed",
    "calibrate_steps",
    "calibrate_steps_detailed",
    "max_steps_hint",
]

#: noise multipliers searched
SIGMA_RANGE = (1e-2, 1e4)
#: smallest sample rate searched
MIN_SAMPLE_RATE = 1e-9
#: most steps searched by default (``max_steps``)
DEFAULT_MAX_STEPS = 10**7


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
    sampler: Sampler | None = None,
    accuracy: float | None = None,
    rtol: float | None = None,
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
    accuracy, rtol = check_options(accuracy, rtol, progress, target)
    start = math.exp(log_sigma(gdp_mu(target), sample_rate, steps))
    start = min(max(start, SIGMA_RANGE[0]), SIGMA_RANGE[1])

    def make(s):
        return s, sample_rate, steps

    parameter = Parameter(
        name="noise_multiplier",
        low=SIGMA_RANGE[0],
        high=SIGMA_RANGE[1],
        increasing=False,
        start=start,
        hint="raise the target or lower sample_rate or steps",
        slope=gdp_slope(target, make, start),
        cap_hint=(
            f"noise multipliers are searched down to {SIGMA_RANGE[0]:g}: lower the target, or "
            "raise sample_rate or steps"
        ),
    )
    evaluate = DPSGDEvaluator(make, target, relation, _sampler(sampler))
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
    sampler: Sampler | None = None,
    accuracy: float | None = None,
    rtol: float | None = None,
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
    ``"add_remove"``. ``accuracy`` bounds the relative gap ``(upper - lower) / upper`` at
    the result. Defaults: epsilon targets ``accuracy = rtol = 1e-3``; risk targets
    ``accuracy = 1e-4`` and ``rtol = 5e-5``, so the true risk at the result is certified
    within 1.5e-4 of the target (the least noise is the point). The search covers
    ``sigma`` in [1e-2, 1e4]; the upper end failing, or the lower end still meeting the target
    (the answer would lie below it), raises :class:`~plda.CalibrationError` (a
    ``ValueError``). ``progress(fraction, message)`` is called after each evaluation.
    ``sampler(noise_multiplier, sample_rate) -> Mechanism`` replaces Poisson sampling by
    another sampler's step (e.g. :class:`~plda.SampledWithoutReplacement`); for a sampler
    whose pair only dominates (``tight`` False) the lower bound is its realized pair's.

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
        sampler=sampler,
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
    sampler: Sampler | None = None,
    accuracy: float | None = None,
    rtol: float | None = None,
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
    accuracy, rtol = check_options(accuracy, rtol, progress, target)

    def make(q):
        return noise_multiplier, min(q, 1.0), steps

    parameter = Parameter(
        name="sample_rate",
        low=MIN_SAMPLE_RATE,
        high=1.0,
        increasing=True,
        start=0.01,
        hint="raise the target or noise_multiplier, or lower steps",
        slope=gdp_slope(target, make, 0.01),
    )
    evaluate = DPSGDEvaluator(make, target, relation, _sampler(sampler))
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
    sampler: Sampler | None = None,
    accuracy: float | None = None,
    rtol: float | None = None,
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
        sampler=sampler,
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
    max_steps: int = DEFAULT_MAX_STEPS,
    relation: str = "add_remove",
    sampler: Sampler | None = None,
    accuracy: float | None = None,
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
    accuracy, _ = check_options(accuracy, None, progress, target)
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
        cap_hint=max_steps_hint(max_steps),
    )
    evaluate = DPSGDEvaluator(
        lambda k: (noise_multiplier, sample_rate, int(k)), target, relation, _sampler(sampler)
    )
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
    max_steps: int = DEFAULT_MAX_STEPS,
    relation: str = "add_remove",
    sampler: Sampler | None = None,
    accuracy: float | None = None,
    progress: Progress | None = None,
) -> int:
    """Largest number of DP-SGD steps (at most ``max_steps``) whose certified upper bound meets
    the target (targets as in :func:`calibrate_noise_multiplier`).

    Raises :class:`~plda.CalibrationError` (a ``ValueError``) when a single step already exceeds
    the target, and when ``max_steps`` steps still meet it (unless ``max_steps + 1`` exceed
    it): the answer then lies beyond ``max_steps``, which is never returned in its place (the
    message says to pass a larger ``max_steps``, up to 1e12).
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
            sampler=sampler,
            accuracy=accuracy,
            progress=progress,
        ).value
    )


def max_steps_hint(max_steps: int) -> str:
    """What to change when a steps target is still met at ``max_steps``."""
    most = f"{check.MAX_COUNT:.0e}".replace("e+", "e")
    if max_steps >= check.MAX_COUNT:
        return (
            f"max_steps={max_steps} is the most steps plda certifies ({most}); lower the "
            "target or noise_multiplier, or raise sample_rate"
        )
    return f"pass a larger max_steps (plda certifies up to {most} steps), or lower the target"


def _sampler(sampler):
    """``sampler`` checked: None (Poisson sampling) or a callable ``(noise_multiplier,
    sample_rate) -> Mechanism``."""
    if sampler is not None and not callable(sampler):
        raise TypeError(
            "sampler must be None (Poisson sampling) or a callable (noise_multiplier, "
            f"sample_rate) -> plda mechanism, got {sampler!r}"
        )
    return sampler
