"""Calibration of a matrix mechanism's noise multiplier (issue 28, item 4)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import plda
import plda.matrix as pm
from plda.calibration import calibrate_matrix_noise_multiplier, gdp_mu, make_target


def test_band_mf_meets_an_epsilon_target_within_the_tolerance():
    band = pm.CyclicPoissonBandMF(pm.toeplitz_strategy([1.0, 0.5], 200), 1.0, 0.05)
    found = calibrate_matrix_noise_multiplier(band, target_epsilon=2.0, target_delta=1e-5)
    assert 2.0 * (1 - 1e-3) <= found.upper <= 2.0 and found.lower <= found.upper
    again = dataclasses.replace(band, noise_multiplier=found.value).epsilon_bounds(1e-5)
    assert (again.lower, again.upper) == (found.lower, found.upper)


def test_every_step_poisson_sampled_meets_an_epsilon_target():
    run = pm.PoissonMatrixMechanism(pm.toeplitz_strategy([0.9, 0.4], 100), 4.0, 0.02)
    with pytest.warns(plda.AccuracyWarning, match="relative gap"):  # the bound's own gap
        found = calibrate_matrix_noise_multiplier(run, target_epsilon=1.0, target_delta=1e-6)
    assert 1.0 * (1 - 1e-2) <= found.upper <= 1.0 and found.lower <= found.upper
    again = dataclasses.replace(run, noise_multiplier=found.value).epsilon_bounds(1e-6)
    assert again.upper <= 1.0
    with pytest.raises(ValueError, match="epsilon target only"):
        calibrate_matrix_noise_multiplier(run, target_advantage=0.1)


def test_an_unsampled_identity_run_lands_on_the_gaussian_dp_noise():
    """``C = I``, ``k`` participations: a Gaussian of sensitivity ``sqrt(k)``, so the noise is
    ``sqrt(k) / mu`` for the mu-GDP that meets the target exactly."""
    run = pm.MultiEpochMF(np.eye(30), 1.0, participations=9, min_separation=3)
    found = calibrate_matrix_noise_multiplier(run, target_epsilon=1.0, target_delta=1e-6)
    mu = gdp_mu(make_target(1.0, 1e-6))
    assert found.value == pytest.approx(math.sqrt(9) / mu, rel=3e-3)


@pytest.mark.parametrize("target", [
    {"target_advantage": 0.1},
    {"target_true_positive_rate": 0.01, "at_false_positive_rate": 1e-3},
])
def test_risk_targets_are_met(target):
    tree = pm.TreeAggregation(1024, 1.0)
    found = calibrate_matrix_noise_multiplier(tree, **target)
    value = target.get("target_advantage", target.get("target_true_positive_rate"))
    assert found.upper <= value and found.lower <= found.upper


def test_bad_input():
    with pytest.raises(TypeError, match="reduction"):
        calibrate_matrix_noise_multiplier(plda.Gaussian(1.0), target_epsilon=1.0,
                                          target_delta=1e-5)
    band = pm.CyclicPoissonBandMF(pm.toeplitz_strategy([1.0], 10), 1.0, 0.05)
    with pytest.raises(ValueError, match="exactly one calibration target"):
        calibrate_matrix_noise_multiplier(band)
    with pytest.raises(plda.CalibrationError, match="unreachable"):
        calibrate_matrix_noise_multiplier(band, target_epsilon=1e-6, target_delta=1e-12)
