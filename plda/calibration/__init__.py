"""Calibration of DP-SGD for a target ``(epsilon, delta)`` or a membership-inference risk.

Every function searches on the *certified upper bound* of its objective (what
:class:`~plda.PLDAccountant` and :class:`~plda.PrivacyLossDistribution` report) and guarantees
its result: the returned value is verified at the requested ``accuracy`` to meet the target.

Targets (exactly one per call): ``target_epsilon`` with ``target_delta``;
``target_true_positive_rate`` with ``at_false_positive_rate`` (the best membership-inference
attack's true-positive rate at that false-positive rate, both neighbouring directions); or
``target_advantage`` (``max(TPR - FPR)``, the total variation ``delta(0)``).

Tolerance: for the noise multiplier and the sample rate the result meets
``target * (1 - rtol) <= upper <= target`` and ``(upper - lower) / upper <= accuracy``;
by default ``rtol = accuracy = 1e-3`` for epsilon targets and ``rtol = 5e-5``, ``accuracy =
1e-4`` for risk targets (the ``*_detailed`` functions report the achieved bounds; if the band
cannot be hit in the iteration budget the best value that meets the target is returned and
``within_tolerance`` is False). For the number of
steps the result is the largest integer count whose upper bound meets the target (the next
count is checked to exceed it).

The search itself is one solver (:func:`plda.calibration.core.solve`) over an evaluator and a
target; :mod:`plda.calibration.dpsgd` builds the evaluators of DP-SGD.
"""

from plda.calibration.core import DEFAULT_RTOL, CalibrationResult, Parameter, Target, solve
from plda.calibration.dpsgd import (
    calibrate_noise_multiplier,
    calibrate_noise_multiplier_detailed,
    calibrate_sample_rate,
    calibrate_sample_rate_detailed,
    calibrate_steps,
    calibrate_steps_detailed,
)
from plda.calibration.evaluator import DPSGDEvaluator
from plda.calibration.targets import gdp_mu, gdp_noise_multiplier, make_target
from plda.samplers import Sampler

__all__ = [
    "DEFAULT_RTOL",
    "CalibrationResult",
    "DPSGDEvaluator",
    "Parameter",
    "Sampler",
    "Target",
    "calibrate_noise_multiplier",
    "calibrate_noise_multiplier_detailed",
    "calibrate_sample_rate",
    "calibrate_sample_rate_detailed",
    "calibrate_steps",
    "calibrate_steps_detailed",
    "gdp_mu",
    "gdp_noise_multiplier",
    "make_target",
    "solve",
]
