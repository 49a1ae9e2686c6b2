"""Calibration of DP-SGD for a target ``(epsilon, delta)`` or a membership-inference risk.

Every function searches on the *certified upper bound* of its objective and verifies its result
at the requested ``accuracy``: the returned value meets the target. The targets, tolerances and
search are described in ``docs/accountant.md`` ("Calibration") and
``docs/howto/calibration-to-risk.md``.
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
from plda.calibration.matrix import calibrate_matrix_noise_multiplier
from plda.calibration.targets import gdp_mu, gdp_noise_multiplier, make_target
from plda.samplers import Sampler

__all__ = [
    "DEFAULT_RTOL",
    "CalibrationResult",
    "DPSGDEvaluator",
    "Parameter",
    "Sampler",
    "Target",
    "calibrate_matrix_noise_multiplier",
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
