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
from plda.calibration.problem import max_steps_hint
from plda.calibration.sampling import step_sampler
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
    sampler: Sampler | str | None = None,
    batch_size: int | None = None,
    dataset_size: int | None = None,
    max_batch_size: int | None = None,
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
    sampler : str or callable, optional
    batch_size, dataset_size, max_batch_size : int, optional
    progress : callable, optional

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
    sizes = dict(batch_size=batch_size, dataset_size=dataset_size, max_batch_size=max_batch_size)
    sampler, sample_rate = step_sampler(sampler, sizes, sample_rate, "noise_multiplier")
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
    evaluate = DPSGDEvaluator(make, target, relation, sampler)
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
    sampler: Sampler | str | None = None,
    batch_size: int | None = None,
    dataset_size: int | None = None,
    max_batch_size: int | None = None,
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
        Poisson sample rate ``q`` in (0, 1] (``"without-replacement"``: ``batch_size /
        dataset_size``, or give ``batch_size``).
    steps : int
        Number of steps, at least 1.
    target_true_positive_rate, at_false_positive_rate, target_advantage : float, optional
        Risk targets: the best attack's true-positive rate at that false-positive rate, or its
        ``TPR - FPR`` (the total variation), both neighbouring directions.
    relation : {"add_remove", "replace_one"}, optional
        The neighbouring relation the run is accounted under.
    sampler : str or callable, optional
        How batches are drawn: a name of :data:`plda.samplers.STEP_SAMPLERS` (``"poisson"``,
        the default; ``"without-replacement"``; ``"truncated-poisson"``), as
        :meth:`plda.PLDAccountant.step` takes it, or a callable ``sampler(noise_multiplier,
        sample_rate) -> Mechanism`` (one step).
    batch_size, dataset_size, max_batch_size : int, optional
        The named sampler's sizes (:func:`plda.sampled_mechanism`): ``dataset_size`` and
        ``batch_size`` (or ``sample_rate``) for ``"without-replacement"``, ``dataset_size``
        and ``max_batch_size`` for ``"truncated-poisson"``.
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
        target_epsilon, target_delta, sample_rate, steps,
        target_true_positive_rate=target_true_positive_rate,
        at_false_positive_rate=at_false_positive_rate, target_advantage=target_advantage,
        relation=relation, sampler=sampler, batch_size=batch_size,
        dataset_size=dataset_size, max_batch_size=max_batch_size, accuracy=accuracy,
        rtol=rtol, progress=progress,
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
    sampler: Sampler | str | None = None,
    dataset_size: int | None = None,
    max_batch_size: int | None = None,
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
    sampler : str or callable, optional
    dataset_size, max_batch_size : int, optional
    progress : callable, optional

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
    sizes = dict(dataset_size=dataset_size, max_batch_size=max_batch_size)
    sampler, _ = step_sampler(sampler, sizes, None, "sample_rate")
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
    evaluate = DPSGDEvaluator(make, target, relation, sampler)
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
    sampler: Sampler | str | None = None,
    dataset_size: int | None = None,
    max_batch_size: int | None = None,
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
    sampler : str or callable, optional
        As for :func:`calibrate_noise_multiplier`, but not ``"without-replacement"`` (its rate
        is ``batch_size / dataset_size``: calibrate the noise multiplier or the steps).
    dataset_size, max_batch_size : int, optional
        The sizes of ``"truncated-poisson"`` (:func:`plda.sampled_mechanism`).
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
        target_epsilon, target_delta, noise_multiplier, steps,
        target_true_positive_rate=target_true_positive_rate,
        at_false_positive_rate=at_false_positive_rate, target_advantage=target_advantage,
        relation=relation, sampler=sampler, dataset_size=dataset_size,
        max_batch_size=max_batch_size, accuracy=accuracy,
        rtol=rtol, progress=progress,
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
    sampler: Sampler | str | None = None,
    batch_size: int | None = None,
    dataset_size: int | None = None,
    max_batch_size: int | None = None,
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
    sampler : str or callable, optional
    batch_size, dataset_size, max_batch_size : int, optional
    progress : callable, optional

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
    sizes = dict(batch_size=batch_size, dataset_size=dataset_size, max_batch_size=max_batch_size)
    sampler, sample_rate = step_sampler(sampler, sizes, sample_rate, "steps")
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
        lambda k: (noise_multiplier, sample_rate, int(k)), target, relation, sampler
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
    sampler: Sampler | str | None = None,
    batch_size: int | None = None,
    dataset_size: int | None = None,
    max_batch_size: int | None = None,
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
        Poisson sample rate ``q`` in (0, 1] (``"without-replacement"``: ``batch_size /
        dataset_size``, or give ``batch_size``).
    target_true_positive_rate, at_false_positive_rate, target_advantage : float, optional
        Risk targets: the best attack's true-positive rate at that false-positive rate, or its
        ``TPR - FPR`` (the total variation), both neighbouring directions.
    max_steps : int, optional
        Largest count searched (default 10**7; up to 10**12).
    relation : {"add_remove", "replace_one"}, optional
        The neighbouring relation the run is accounted under.
    sampler : str or callable, optional
        As for :func:`calibrate_noise_multiplier`.
    batch_size, dataset_size, max_batch_size : int, optional
        The named sampler's sizes, as for :func:`calibrate_noise_multiplier`.
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
    return int(calibrate_steps_detailed(
        target_epsilon, target_delta, noise_multiplier, sample_rate,
        target_true_positive_rate=target_true_positive_rate,
        at_false_positive_rate=at_false_positive_rate, target_advantage=target_advantage,
        max_steps=max_steps, relation=relation, sampler=sampler, batch_size=batch_size,
        dataset_size=dataset_size, max_batch_size=max_batch_size, accuracy=accuracy,
        progress=progress,
    ).value)
