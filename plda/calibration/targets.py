"""The targets of DP-SGD calibration, and the Gaussian-DP model that starts every search.

:func:`make_target` turns the keyword arguments of a calibration call into its one
:class:`~plda.calibration.core.Target`; :func:`gdp_mu` and :func:`gdp_slope` read it through
Gaussian DP; :func:`check_options` validates the tolerances.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.special import ndtr, ndtri

from plda._internal import validation as check
from plda.calibration.problem import DEFAULT_RTOL, Target
from plda.pld import DEFAULT_ACCURACY

__all__ = [
    "RISK_ACCURACY",
    "RISK_RTOL",
    "check_options",
    "gdp_mu",
    "gdp_noise_multiplier",
    "gdp_slope",
    "log_sigma",
    "make_target",
]

#: default tolerances of a risk target: the upper bound lands in ``[target (1 - RISK_RTOL),
#: target]`` with a relative gap ``(upper - lower) / upper <= RISK_ACCURACY``, so the true risk
#: at the result is certified within 1.5e-4 of the target (the least noise that meets the
#: target is the point: riskcal's own answers carry 1e-4 to 7e-4 more noise than needed on the
#: cases of ``benchmarks/run_risk.py``)
RISK_RTOL = 5e-5
RISK_ACCURACY = 1e-4


def make_target(
    target_epsilon=None,
    target_delta=None,
    *,
    target_true_positive_rate=None,
    at_false_positive_rate=None,
    target_advantage=None,
) -> Target:
    """The one target of a calibration call, checked.

    Parameters
    ----------
    target_epsilon, target_delta : float, optional
        An epsilon target: ``epsilon_upper(target_delta) <= target_epsilon``, with
        ``target_epsilon > 0`` and ``target_delta`` in (0, 1).
    target_true_positive_rate, at_false_positive_rate : float, optional
        A membership-inference target: no attack has a higher true-positive rate at that
        false-positive rate; ``0 < at_false_positive_rate < target_true_positive_rate < 1``.
    target_advantage : float, optional
        An advantage target: no attack has a larger ``TPR - FPR``; in (0, 1).

    Returns
    -------
    Target
        The target, with its objective.

    Raises
    ------
    ValueError
        Naming the arguments, unless exactly one kind of target is given, completely, with
        values in range.
    TypeError
        If a given value is not a real number.
    """
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
        try:  # (a TypeError for what is not a number passes through)
            delta = check.probability("target_delta", target_delta, open_low=True)
        except ValueError:
            delta = None
        if delta is None or not delta < 1:  # one range in every message: (0, 1)
            raise ValueError(f"target_delta must be in (0, 1), got {target_delta!r}")
        return Target(objective="epsilon", value=eps, delta=delta)
    if given[0].startswith("target_true"):
        if target_true_positive_rate is None or at_false_positive_rate is None:
            raise ValueError(
                "target_true_positive_rate and at_false_positive_rate must be given together"
            )
        alpha = check.probability("at_false_positive_rate", at_false_positive_rate, open_low=True)
        tpr = check.fraction("target_true_positive_rate", target_true_positive_rate)
        if not alpha < tpr < 1:
            raise ValueError(
                "target_true_positive_rate must be in (at_false_positive_rate, 1) (every test "
                f"reaches TPR = FPR), got {target_true_positive_rate!r} at "
                f"at_false_positive_rate={at_false_positive_rate!r}"
            )
        return Target(objective="true_positive_rate", value=tpr, false_positive_rate=alpha)
    advantage = check.fraction("target_advantage", target_advantage)  # one range: (0, 1)
    return Target(objective="advantage", value=advantage)


def gdp_mu(target: Target) -> float:
    """The Gaussian-DP ``mu`` that just meets a target (a starting point only).

    Epsilon: ``delta_mu(eps) = delta`` (Dong, Roth & Su 2022, Cor. 2.13); true-positive rate:
    ``Phi(Phi^-1(alpha) + mu)``; advantage: ``2 Phi(mu / 2) - 1``.

    Parameters
    ----------
    target : Target
        The calibration target.

    Returns
    -------
    float
        The ``mu`` at which mu-GDP meets the target exactly (1.0 if the epsilon equation has no
        root in ``[1e-6, 1e3]``).
    """
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
    """Log of the central-limit (Gaussian-DP) noise multiplier for an epsilon target.

    ``mu = q sqrt(T (e^{1/sigma^2} - 1))`` (Bu, Dong, Long & Su 2020) solved for ``sigma``. Only a
    guess (it can be off by tens of percent either way); the search brackets around it.

    Parameters
    ----------
    target_epsilon : float
        The epsilon target.
    delta : float
        Its delta.
    sample_rate : float
        The Poisson sample rate ``q``.
    steps : int
        The number of steps ``T``.

    Returns
    -------
    float
        ``log sigma`` of the guess.
    """
    mu = gdp_mu(Target(objective="epsilon", value=target_epsilon, delta=delta))
    return log_sigma(mu, sample_rate, steps)


def log_sigma(mu: float, sample_rate: float, steps: int) -> float:
    """``log sigma`` whose DP-SGD run is ``mu``-GDP: exact without subsampling, else a guess.

    ``sigma = sqrt(T) / mu`` for ``q = 1``; else ``mu = q sqrt(T (e^{1/sigma^2} - 1))`` solved
    for ``sigma`` (central limit, Bu, Dong, Long & Su 2020).

    Parameters
    ----------
    mu : float
        The Gaussian-DP parameter.
    sample_rate : float
        The Poisson sample rate ``q``.
    steps : int
        The number of steps ``T``.

    Returns
    -------
    float
        ``log sigma`` (0.0 where the formula is undefined).
    """
    try:
        if sample_rate >= 1:
            return math.log(math.sqrt(steps) / mu)
        return -0.5 * math.log(math.log1p((mu / sample_rate) ** 2 / steps))
    except (ValueError, ZeroDivisionError, OverflowError):
        return 0.0


def gdp_slope(target: Target, make, value: float) -> float | None:
    """Slope ``d log(objective) / d log(value)`` of a risk target under Gaussian DP.

    The model is ``mu = q sqrt(T (e^{1/sigma^2} - 1))`` (Bu, Dong, Long & Su 2020); the slope
    only steers the search.

    Parameters
    ----------
    target : Target
        The calibration target.
    make : callable
        ``make(value) -> (sigma, q, T)``: the DP-SGD run of a parameter value.
    value : float
        Where the slope is taken.

    Returns
    -------
    float or None
        The slope by a central difference; None for epsilon targets or where the model is
        undefined.
    """
    if target.objective == "epsilon":
        return None

    def log_objective(x):
        sigma, rate, steps = make(math.exp(x))
        if rate >= 1:  # T Gaussian steps: exactly sqrt(T) / sigma
            mu = math.sqrt(steps) / sigma
        else:
            mu = rate * math.sqrt(steps * math.expm1(sigma**-2))
        if target.objective == "true_positive_rate":
            return math.log(ndtr(ndtri(target.false_positive_rate) + mu))
        return math.log(2 * ndtr(mu / 2) - 1)

    x, h = math.log(value), 1e-4
    try:
        slope = (log_objective(x + h) - log_objective(x - h)) / (2 * h)
    except (ValueError, OverflowError, ZeroDivisionError):
        return None
    return slope if math.isfinite(slope) and slope != 0 else None


def check_options(accuracy, rtol, progress, target: Target) -> tuple[float, float]:
    """Validated ``(accuracy, rtol)`` of a calibration call, with the target's defaults.

    Parameters
    ----------
    accuracy : float or None
        Relative gap asked of the bounds at the result; None: 1e-3 for epsilon targets
        (:data:`~plda.pld.DEFAULT_ACCURACY`), :data:`RISK_ACCURACY` (1e-4) for risk targets.
    rtol : float or None
        Relative tolerance below the target; None: :data:`~plda.calibration.core.DEFAULT_RTOL`
        (1e-3) for epsilon targets, :data:`RISK_RTOL` (5e-5) for risk targets.
    progress : callable or None
        The progress callback, checked to be callable.
    target : Target
        The target, which chooses the defaults.

    Returns
    -------
    tuple of float
        ``(accuracy, rtol)``.

    Raises
    ------
    ValueError
        If ``accuracy`` or ``rtol`` is not in (0, 1).
    TypeError
        If ``accuracy`` or ``rtol`` is not a real number, or ``progress`` is not callable.
    """
    epsilon = target.objective == "epsilon"
    if rtol is None:
        rtol = DEFAULT_RTOL if epsilon else RISK_RTOL
    if accuracy is None:
        accuracy = DEFAULT_ACCURACY if epsilon else RISK_ACCURACY
    accuracy = check.fraction("accuracy", accuracy)
    rtol = check.fraction("rtol", rtol)
    if progress is not None and not callable(progress):
        raise TypeError(
            f"progress must be a callable (fraction, message) or None, got {progress!r}"
        )
    return accuracy, rtol
