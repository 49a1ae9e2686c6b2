"""plda.matrix.amplified: BandMF with cyclic Poisson sampling is DP-SGD with ceil(n / b) steps."""

from __future__ import annotations

import math

import numpy as np
import pytest

import plda
import plda.matrix as pm

DELTA = 1e-5


def normalized_banded(n: int, bands: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    offsets = np.subtract.outer(np.arange(n), np.arange(n))
    matrix = np.where((offsets >= 0) & (offsets < bands), rng.exponential(size=(n, n)), 0.0)
    return matrix / np.linalg.norm(matrix, axis=0)


def dp_sgd(sigma: float, rate: float, steps: int) -> plda.PrivacyLossDistribution:
    step = plda.PoissonSampled(plda.Gaussian(sigma=sigma), sample_rate=rate)
    return plda.PrivacyLossDistribution.from_mechanism(step).self_compose(steps)


def test_bounds_equal_the_dp_sgd_composition_bit_for_bit():
    strategy = normalized_banded(50, 4)
    band = pm.CyclicPoissonBandMF(strategy, 1.2, 0.05)
    assert band.bands == 4 and band.rounds == 13 and band.steps == 50
    reference = dp_sgd(1.2 / band.max_column_norm, 0.05, 13)
    assert band.pld().epsilon(DELTA) == reference.epsilon(DELTA)
    assert band.pld().delta(1.0) == reference.delta(1.0)
    assert tuple(band.pld().epsilon_bounds(DELTA)) == tuple(reference.epsilon_bounds(DELTA))


def test_identity_is_dp_sgd_and_exact():
    band = pm.CyclicPoissonBandMF(np.eye(20), 1.1, 0.01)
    assert band.bands == 1 and band.rounds == 20 and band.exact and band.max_column_norm == 1.0
    reference = dp_sgd(1.1, 0.01, 20)
    assert tuple(band.epsilon_bounds(DELTA)) == tuple(reference.epsilon_bounds(DELTA))
    assert tuple(band.delta_bounds(1.0)) == tuple(reference.delta_bounds(1.0))
    # more parts than bands: a 1-banded matrix is 5-banded, and 4 rounds remain
    five = pm.CyclicPoissonBandMF(np.eye(20), 1.1, 0.01, bands=5)
    assert five.rounds == 4
    assert five.epsilon(DELTA) == dp_sgd(1.1, 0.01, 4).epsilon(DELTA)


def test_toeplitz_banded_strategy_and_exactness():
    coefficients = [1.0, 0.6, 0.3]  # every full column has the same norm
    band = pm.CyclicPoissonBandMF(pm.toeplitz_strategy(coefficients, 30), 2.0, 0.1)
    assert band.bands == 3 and band.rounds == 10
    assert band.max_column_norm == pytest.approx(math.sqrt(1 + 0.36 + 0.09))
    assert band.exact  # parts 0 and 1 have 10 steps at full columns (the last two are cut)
    assert band.step == plda.PoissonSampled(
        plda.Gaussian(sigma=2.0 / band.max_column_norm), sample_rate=0.1)


def test_unequal_columns_take_the_lower_bound_from_a_realized_part():
    strategy = normalized_banded(24, 3)
    strategy[:, ::3] *= 0.5  # part 0 is quieter, part 1 too; part 2 has one quieter step
    strategy[:, 1::3] *= 0.75
    strategy[:, 2] *= 0.9
    band = pm.CyclicPoissonBandMF(strategy, 1.0, 0.2)
    assert not band.exact and band.rounds == 8
    assert band.max_column_norm == pytest.approx(1.0)
    assert band.realized_norm == pytest.approx(0.9)  # the best part's quietest step
    lower, upper = band.epsilon_bounds(DELTA)
    realized = dp_sgd(1.0 / band.realized_norm, 0.2, 8)
    assert upper == band.pld().epsilon(DELTA)
    assert lower == pytest.approx(realized.epsilon_bounds(DELTA).lower, rel=1e-3)
    assert lower < upper
    low, high = band.delta_bounds(0.5)
    assert low <= high


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: pm.CyclicPoissonBandMF(np.ones((3, 4)), 1.0, 0.1), ValueError, "square"),
        (lambda: pm.CyclicPoissonBandMF(np.ones((3, 3)), 1.0, 0.1), ValueError,
         "lower-triangular"),
        (lambda: pm.CyclicPoissonBandMF(np.eye(3), 1.0, 0.0), ValueError, "sample_rate"),
        (lambda: pm.CyclicPoissonBandMF(np.eye(3), 1.0, 1.5), ValueError, "sample_rate"),
        (lambda: pm.CyclicPoissonBandMF(np.eye(3), -1.0, 0.5), ValueError, "noise_multiplier"),
        (lambda: pm.CyclicPoissonBandMF(np.tril(np.ones((4, 4))), 1.0, 0.5, bands=2),
         ValueError, r"bands must be an integer in \[4, 4\]"),
        (lambda: pm.CyclicPoissonBandMF(np.eye(4), 1.0, 0.5, bands=5), ValueError, "bands"),
        (lambda: pm.CyclicPoissonBandMF(np.eye(4), 1.0, 0.5, bands=2.0), TypeError, "bands"),
        (lambda: pm.CyclicPoissonBandMF(np.zeros((3, 3)), 1.0, 0.5), ValueError, "non-zero"),
        (lambda: pm.CyclicPoissonBandMF(np.diag([1.0, np.nan]), 1.0, 0.5), ValueError, "NaN"),
    ],
)
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
