"""plda.matrix.reductions: unsampled matrix mechanisms and tree aggregation as one Gaussian."""

from __future__ import annotations

import math

import numpy as np
import pytest

import plda
import plda.matrix as pm

DELTA = 1e-5
COARSE = 1e-2


def test_identity_with_k_participations_is_k_gaussian_steps():
    # C = I, every step (s = 1): sensitivity sqrt(k), so one Gaussian at sqrt(k) = k steps
    mf = pm.MultiEpochMF(np.eye(16), 2.0, participations=16, min_separation=1)
    assert mf.sensitivity.value == 4.0 and mf.exact and mf.mu == 2.0
    assert mf.mechanism == plda.Gaussian(sigma=2.0, sensitivity=4.0)
    composed = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma=2.0), 16)
    assert mf.epsilon(DELTA) == pytest.approx(composed.epsilon(DELTA), rel=2e-3)
    # exact GDP: the PLD's certified mu is sens / sigma
    assert mf.pld().gdp_mu(delta_floor=1e-9) == pytest.approx(mf.mu, rel=1e-3)


def test_multi_epoch_mf_is_the_gaussian_at_the_min_separation_sensitivity():
    coefficients = 1 / np.sqrt(np.arange(1, 101))
    mf = pm.MultiEpochMF(coefficients, 5.0, participations=4, min_separation=25)
    found = pm.sensitivity(coefficients, 4, 25)
    assert mf.sensitivity == found and mf.mu == found.value / 5.0
    bounds = mf.epsilon_bounds(DELTA)
    reference = plda.PrivacyLossDistribution.from_mechanism(
        plda.Gaussian(sigma=5.0, sensitivity=found.value)).epsilon_bounds(DELTA)
    assert tuple(bounds) == tuple(reference)
    assert mf.delta_bounds(1.0).lower <= mf.delta(1.0) == mf.delta_bounds(1.0).upper
    assert mf.pld() is mf.pld() and mf.lower_pld() is mf.pld()


def test_a_bound_gives_a_lower_bound_from_a_realized_pattern():
    rng = np.random.default_rng(0)
    offsets = np.subtract.outer(np.arange(200), np.arange(200))
    matrix = np.where((offsets >= 0) & (offsets < 12), rng.normal(size=(200, 200)), 0.0)
    mf = pm.MultiEpochMF(matrix, 20.0, participations=5, min_separation=6)
    assert not mf.exact
    lower, upper = mf.epsilon_bounds(DELTA)
    assert lower < upper
    assert lower == pytest.approx(plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(
        sigma=20.0, sensitivity=mf.sensitivity.lower)).epsilon_bounds(DELTA).lower)


def test_tree_aggregation_is_a_gaussian_at_sqrt_depth():
    for n in (1, 2, 3, 4, 7, 8, 1000, 1023, 1024):
        assert pm.tree_depth(n) == math.ceil(math.log2(n + 1)) == math.floor(math.log2(n)) + 1
    tree = pm.TreeAggregation(1000, 3.0)
    assert tree.depth == 10 and tree.sensitivity == math.sqrt(10) and tree.exact
    assert tree.mu == math.sqrt(10) / 3.0
    assert tree.mechanism == plda.Gaussian(sigma=3.0, sensitivity=math.sqrt(10))
    reference = plda.PrivacyLossDistribution.from_mechanism(tree.mechanism)
    assert tuple(tree.epsilon_bounds(DELTA)) == tuple(reference.epsilon_bounds(DELTA))
    assert pm.TreeAggregation([8, 3], 1.0).depth == 4
    assert pm.TreeAggregation(np.array([5, 2]), 1.0).steps == (5, 2)


def test_tree_sensitivity_is_the_brute_force_sensitivity_of_the_tree_matrix():
    for n in range(1, 13):
        tree = pm.tree_strategy(n)
        norms = np.linalg.norm(tree, axis=0)
        assert norms.max() ** 2 == pytest.approx(pm.tree_depth(n))


def test_replace_one_doubles_the_sensitivity():
    tree = pm.TreeAggregation(16, 4.0)
    replace = tree.pld(relation="replace_one", accuracy=COARSE).epsilon(DELTA)
    doubled = plda.PrivacyLossDistribution.from_mechanism(
        plda.Gaussian(sigma=4.0, sensitivity=2 * math.sqrt(5)), accuracy=COARSE).epsilon(DELTA)
    assert replace == pytest.approx(doubled, rel=1e-12)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: pm.MultiEpochMF(np.eye(3), 0.0), ValueError, "noise_multiplier"),
        (lambda: pm.MultiEpochMF(np.eye(3), "1"), TypeError, "noise_multiplier"),
        (lambda: pm.MultiEpochMF(np.eye(3), 1.0, participations=4), ValueError,
         "participations"),
        (lambda: pm.MultiEpochMF(np.ones((3, 3)), 1.0), ValueError, "lower-triangular"),
        (lambda: pm.TreeAggregation(0, 1.0), ValueError, "steps"),
        (lambda: pm.TreeAggregation([], 1.0), ValueError, "steps"),
        (lambda: pm.TreeAggregation(2.5, 1.0), TypeError, "steps"),
        (lambda: pm.TreeAggregation(4, -1.0), ValueError, "noise_multiplier"),
    ],
)
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
