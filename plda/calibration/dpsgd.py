"""Calibration of DP-SGD: noise multiplier, sample rate or steps, for a privacy or risk target.

Each function hands a :class:`~plda.calibration.evaluator.DPSGDEvaluator` to ``solve``.
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
    """Like :func:`calibrate_noise_multiplier`, with the certified bounds of the result.

    Parameters
    ----------
    target_epsilon, target_delta, sample_rate, target_true_positive_rate : float, optional
    at_false_positive_rate, target_advantage, accuracy, rtol : float, optional
    steps : int
    relation : str, optional
    sampler, progress : callable, optional

    Returns
    -------
    CalibrationResult
        ``value``, the bounds on the objective there and the number of evaluations.

    Raises
    ------
    CalibrationError, ValueError, TypeError
        As :func:`calibrate_noise_multiplier` does.
    """
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

    Parameters
    ----------
    target_epsilon, target_delta : float, optional
        Epsilon target: the certified ``epsilon(target_delta) <= target_epsilon``.
    sample_rate : float
        Poisson sample rate ``q`` in (0, 1].
    steps : int
        Number of steps, at least 1.
    target_true_positive_rate, at_false_positive_rate, target_advantage : float, optional
        Risk targets: the best attack's true-positive rate at that false-positive rate, or its
        ``TPR - FPR`` (the total variation), both neighbouring directions.
    relation : {"add_remove", "replace_one"}, optional
        The neighbouring relation the run is accounted under.
    sampler : callable, optional
        ``sampler(noise_multiplier, sample_rate) -> Mechanism`` in place of Poisson sampling.
    accuracy : float, optional
        Relative gap of the bounds at the result (default 1e-3; 1e-4 for risk targets).
    rtol : float, optional
        ``target (1 - rtol) <= upper <= target`` (default 1e-3; 5e-5 for risk targets).
    progress : callable, optional
        ``progress(fraction, message)``, called after each evaluation.

    Returns
    -------
    float
        ``sigma`` in [1e-2, 1e4], ``target (1 - rtol) <= upper <= target`` (Kulynych et al. 2024).

    Raises
    ------
    CalibrationError
        If the target is met nowhere in the searched range, or still met at its end.
    ValueError, TypeError
        If not exactly one target is given, completely, or an argument is invalid (named).

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
    """Like :func:`calibrate_sample_rate`, with the certified bounds of the result.

    Parameters
    ----------
    target_epsilon, target_delta, noise_multiplier, target_true_positive_rate : float, optional
    at_false_positive_rate, target_advantage, accuracy, rtol : float, optional
    steps : int
    relation : str, optional
    sampler, progress : callable, optional

    Returns
    -------
    CalibrationResult
        ``value``, the bounds on the objective there and the number of evaluations.

    Raises
    ------
    CalibrationError, ValueError, TypeError
        As :func:`calibrate_sample_rate` does.
    """
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

    Parameters
    ----------
    target_epsilon, target_delta : float, optional
        Epsilon target: the certified ``epsilon(target_delta) <= target_epsilon``.
    noise_multiplier : float
        Noise multiplier ``sigma > 0``.
    steps : int
        Number of steps, at least 1.
    target_true_positive_rate, at_false_positive_rate, target_advantage : float, optional
        Risk targets: the best attack's true-positive rate at that false-positive rate, or its
        ``TPR - FPR`` (the total variation), both neighbouring directions.
    relation : {"add_remove", "replace_one"}, optional
        The neighbouring relation the run is accounted under.
    sampler : callable, optional
        ``sampler(noise_multiplier, sample_rate) -> Mechanism`` in place of Poisson sampling.
    accuracy : float, optional
        Relative gap of the bounds at the result (default 1e-3; 1e-4 for risk targets).
    rtol : float, optional
        ``target (1 - rtol) <= upper <= target`` (default 1e-3; 5e-5 for risk targets).
    progress : callable, optional
        ``progress(fraction, message)``, called after each evaluation.

    Returns
    -------
    float
        ``q`` in [1e-9, 1] with ``target (1 - rtol) <= upper(q) <= target``, verified at
        ``accuracy``; or 1 when even full batches meet the target.

    Raises
    ------
    CalibrationError
        If the target is met nowhere in the searched range, or still met at its end.
    ValueError, TypeError
        If not exactly one target is given, completely, or an argument is invalid (named).
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
    """Like :func:`calibrate_steps`, with the certified bounds of the result.

    Parameters
    ----------
    target_epsilon, target_delta, noise_multiplier, sample_rate : float, optional
    target_true_positive_rate, at_false_positive_rate, target_advantage, accuracy : float, optional
    max_steps : int, optional
    relation : str, optional
    sampler, progress : callable, optional

    Returns
    -------
    CalibrationResult
        ``value``, the bounds on the objective there and the number of evaluations.

    Raises
    ------
    CalibrationError, ValueError, TypeError
        As :func:`calibrate_steps` does.
    """
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
    """Largest number of DP-SGD steps whose certified upper bound meets the target.

    Parameters
    ----------
    target_epsilon, target_delta : float, optional
        Epsilon target: the certified ``epsilon(target_delta) <= target_epsilon``.
    noise_multiplier : float
        Noise multiplier ``sigma > 0``.
    sample_rate : float
        Poisson sample rate ``q`` in (0, 1].
    target_true_positive_rate, at_false_positive_rate, target_advantage : float, optional
        Risk targets: the best attack's true-positive rate at that false-positive rate, or its
        ``TPR - FPR`` (the total variation), both neighbouring directions.
    max_steps : int, optional
        Largest count searched (default 10**7; up to 10**12).
    relation : {"add_remove", "replace_one"}, optional
        The neighbouring relation the run is accounted under.
    sampler : callable, optional
        ``sampler(noise_multiplier, sample_rate) -> Mechanism`` in place of Poisson sampling.
    accuracy : float, optional
        Relative gap of the bounds at the result (default 1e-3; 1e-4 for risk targets).
    progress : callable, optional
        ``progress(fraction, message)``, called after each evaluation.

    Returns
    -------
    int
        The number of steps, at most ``max_steps``; one more is checked to exceed the target.

    Raises
    ------
    CalibrationError
        If one step already exceeds the target, or ``max_steps`` steps still meet it (unless one
        more exceeds it): the answer lies beyond ``max_steps`` and is never replaced by it.
    ValueError, TypeError
        If not exactly one target is given, completely, or an argument is invalid (named).
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
    most = f"{check.MAX_COUNT:.0e}".replace("e+", "e")
    if max_steps >= check.MAX_COUNT:
        return (
            f"max_steps={max_steps} is the most steps plda certifies ({most}); lower the "
            "target or noise_multiplier, or raise sample_rate"
        )
    return f"pass a larger max_steps (plda certifies up to {most} steps), or lower the target"


def _sampler(sampler):
    """``sampler`` checked: None (Poisson sampling) or a callable ``(sigma, rate) -> Mechanism``."""
    if sampler is not None and not callable(sampler):
        raise TypeError(
            "sampler must be None (Poisson sampling) or a callable (noise_multiplier, "
            f"sample_rate) -> plda mechanism, got {sampler!r}"
        )
    return sampler
