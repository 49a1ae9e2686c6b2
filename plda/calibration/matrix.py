"""Calibration of a matrix mechanism's noise multiplier (DP-FTRL, BandMF) to a target: the
same solver as DP-SGD's, over the reduction's certified bounds."""

from __future__ import annotations

import dataclasses
import math

from plda._internal.errors import check_bracket, quiet_accuracy
from plda.calibration.core import solve
from plda.calibration.problem import SEARCH_ACCURACY, CalibrationResult, Parameter, Target
from plda.calibration.targets import check_options, make_target
from plda.matrix.conditional import PoissonMatrixMechanism
from plda.matrix.reductions import MatrixReduction

__all__ = ["calibrate_matrix_noise_multiplier"]

#: noise multipliers searched (as for DP-SGD)
SIGMA_RANGE = (1e-2, 1e4)


def _objective(pld, target: Target):
    if target.objective == "epsilon":
        return pld.epsilon_bounds(target.delta)
    if target.objective == "true_positive_rate":
        return pld.true_positive_rate_bounds(target.false_positive_rate)
    return pld.advantage_bounds()


class _MatrixEvaluator:
    """``(value, accuracy, search) -> (lower, upper)`` of the objective of the reduction at
    noise multiplier ``value``: the upper bound from :meth:`MatrixReduction.pld`, the lower
    from :meth:`MatrixReduction.lower_pld` (certified for the mechanism either way)."""

    upper_share = None

    def __init__(self, template: MatrixReduction, target: Target):
        self.template, self.target = template, target

    def __call__(self, value, accuracy: float, search: bool) -> tuple[float, float]:
        reduction = dataclasses.replace(self.template, noise_multiplier=float(value))
        accuracy = max(accuracy, SEARCH_ACCURACY) if search else accuracy
        if isinstance(reduction, PoissonMatrixMechanism):  # its bound is not one PLD's
            with quiet_accuracy():
                if search:  # the upper bound alone: no SVD or realized rows per trial
                    upper = reduction.epsilon(self.target.delta, accuracy=accuracy)
                    return upper, upper
                bounds = reduction.epsilon_bounds(self.target.delta, accuracy=accuracy)
            return float(bounds.lower), float(bounds.upper)
        try:
            with quiet_accuracy():  # the solver reports the accuracy of its result once
                upper = float(_objective(reduction.pld(accuracy=accuracy), self.target).upper)
                if search:
                    return upper, upper
                lower = float(_objective(reduction.lower_pld(accuracy=accuracy),
                                         self.target).lower)
        except (OverflowError, FloatingPointError, MemoryError):
            return math.inf, math.inf  # beyond what the engine discretizes: misses the target
        check_bracket(lower, upper, query="calibrate_matrix_noise_multiplier")
        return lower, upper


def calibrate_matrix_noise_multiplier(
    reduction: MatrixReduction,
    *,
    target_epsilon: float | None = None,
    target_delta: float | None = None,
    target_true_positive_rate: float | None = None,
    at_false_positive_rate: float | None = None,
    target_advantage: float | None = None,
    accuracy: float | None = None,
    rtol: float | None = None,
) -> CalibrationResult:
    """The smallest noise multiplier of a matrix mechanism whose certified bound meets a target.

    ``reduction`` gives everything but the noise multiplier (its own is only a template): a
    :class:`~plda.matrix.CyclicPoissonBandMF`, :class:`~plda.matrix.MultiEpochMF`,
    :class:`~plda.matrix.TreeAggregation` or :class:`~plda.matrix.PoissonMatrixMechanism`
    (an epsilon target only: its bound adds a tail probability to delta, which the risk
    conversions of one PLD do not take). The search is the DP-SGD calibration's
    (:func:`plda.calibration.solve`) on the reduction's certified upper bound; the result's
    lower bound is the reduction's (from a realized run where the reduction is not exact).

    Parameters
    ----------
    reduction : MatrixReduction or PoissonMatrixMechanism
        The run, at any noise multiplier.
    target_epsilon, target_delta : float, optional
        An epsilon target (``epsilon_upper(target_delta) <= target_epsilon``).
    target_true_positive_rate, at_false_positive_rate : float, optional
        A membership-inference target.
    target_advantage : float, optional
        An advantage target.
    accuracy, rtol : float, optional
        As for :func:`~plda.calibrate_noise_multiplier`.

    Returns
    -------
    CalibrationResult
        ``value`` (the noise multiplier) and the certified bounds on the objective there.

    Raises
    ------
    TypeError
        If ``reduction`` is not a matrix reduction, or a target is not a real number.
    ValueError
        If the target is not exactly one complete target in range, or is a risk target for
        a :class:`~plda.matrix.PoissonMatrixMechanism`.
    CalibrationError
        If no noise multiplier in ``[0.01, 1e4]`` meets the target.

    Examples
    --------
    >>> import plda.matrix as pm
    >>> from plda.calibration.matrix import calibrate_matrix_noise_multiplier
    >>> band = pm.CyclicPoissonBandMF(pm.toeplitz_strategy([1.0, 0.5], 200), 1.0, 0.05)
    >>> found = calibrate_matrix_noise_multiplier(band, target_epsilon=2.0, target_delta=1e-5)
    >>> found.upper <= 2.0
    True
    """
    if not isinstance(reduction, (MatrixReduction, PoissonMatrixMechanism)):
        raise TypeError("reduction must be a plda.matrix reduction (CyclicPoissonBandMF, "
                        "MultiEpochMF, TreeAggregation or PoissonMatrixMechanism), got "
                        f"{type(reduction).__name__}")
    target = make_target(target_epsilon, target_delta,
                         target_true_positive_rate=target_true_positive_rate,
                         at_false_positive_rate=at_false_positive_rate,
                         target_advantage=target_advantage)
    if isinstance(reduction, PoissonMatrixMechanism) and target.objective != "epsilon":
        raise ValueError("PoissonMatrixMechanism takes an epsilon target only (target_epsilon "
                         "and target_delta): its bound adds a tail probability to delta")
    accuracy, rtol = check_options(accuracy, rtol, None, target)
    parameter = Parameter(
        name="noise_multiplier", low=SIGMA_RANGE[0], high=SIGMA_RANGE[1], increasing=False,
        start=min(max(reduction.noise_multiplier, SIGMA_RANGE[0]), SIGMA_RANGE[1]),
        hint="raise the target, lower the sample rate or the participations",
        cap_hint=f"noise multipliers are searched down to {SIGMA_RANGE[0]:g}: lower the target",
    )
    return solve(_MatrixEvaluator(reduction, target), target, parameter, accuracy=accuracy,
                 rtol=rtol)
