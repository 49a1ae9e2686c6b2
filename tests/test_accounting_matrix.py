"""``MatrixAccountant`` (issue 28, item 4): a matrix-mechanism run accounted step by step."""

from __future__ import annotations

import numpy as np
import pytest

import plda
import plda.matrix as pm
from plda.accounting import MatrixAccountant

DELTA = 1e-5


def test_the_whole_run_is_the_reduction_of_the_whole_strategy():
    strategy = pm.toeplitz_strategy([1.0, 0.6, 0.3], 60)
    run = MatrixAccountant(strategy, 1.0, sample_rate=0.1)
    run.step(60)
    want = pm.CyclicPoissonBandMF(strategy, 1.0, 0.1).epsilon_bounds(DELTA)
    assert tuple(run.epsilon_bounds(DELTA)) == tuple(want)
    dense = np.tril(np.ones((12, 12)))
    run = MatrixAccountant(dense, 4.0, participations=3, min_separation=4)
    run.step(12)
    want = pm.MultiEpochMF(dense, 4.0, participations=3, min_separation=4).delta_bounds(1.0)
    assert tuple(run.delta_bounds(1.0)) == tuple(want)


@pytest.mark.parametrize("steps", [1, 3, 7, 20])
def test_identity_with_sampling_is_dp_sgd_after_every_prefix(steps):
    """``C = I`` in one part is DP-SGD: after ``t`` steps, ``t`` Poisson-sampled Gaussians."""
    run = MatrixAccountant(np.eye(20), 1.2, sample_rate=0.05, bands=1)
    run.step(steps)
    dp_sgd = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Gaussian(1.2), 0.05), steps).epsilon_bounds(DELTA)
    assert tuple(run.epsilon_bounds(DELTA)) == tuple(dp_sgd)


def test_a_prefix_is_the_reduction_of_the_leading_block_and_grows_with_the_run():
    strategy = pm.toeplitz_strategy([1.0, 0.6, 0.3], 40)
    run = MatrixAccountant(strategy, 1.0, sample_rate=0.2)
    previous = 0.0
    for t in range(1, 41, 3):
        run.load_state_dict({"steps": t})
        block = pm.CyclicPoissonBandMF(strategy.dense()[:t, :t], 1.0, 0.2, bands=min(3, t))
        assert tuple(run.epsilon_bounds(DELTA)) == tuple(block.epsilon_bounds(DELTA))
        upper = run.epsilon(DELTA)
        assert upper >= previous  # a longer run is never more private
        previous = upper


def test_unsampled_prefix_counts_only_the_participations_that_fit():
    dense = np.tril(np.ones((12, 12)))
    run = MatrixAccountant(dense, 4.0, participations=3, min_separation=4)
    for t, fit in ((1, 1), (4, 1), (5, 2), (9, 3), (12, 3)):
        run.load_state_dict({"steps": t})
        assert run.reduction().participations == fit


def test_checkpoint_round_trip():
    strategy = pm.toeplitz_strategy([1.0, 0.5], 30)
    run = MatrixAccountant(strategy, 1.0, sample_rate=0.1)
    run.step(11)
    saved = run.state_dict()
    resumed = MatrixAccountant(strategy, 1.0, sample_rate=0.1)
    resumed.load_state_dict(saved)
    assert tuple(resumed.epsilon_bounds(DELTA)) == tuple(run.epsilon_bounds(DELTA))


def test_bad_input_changes_nothing():
    run = MatrixAccountant(np.eye(5), 1.0, sample_rate=0.1)
    run.step(4)
    with pytest.raises(ValueError, match="passes the strategy's 5 steps"):
        run.step(2)
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="count"):
            run.step(bad)
    with pytest.raises(TypeError, match="count"):
        run.step(True)
    with pytest.raises(ValueError, match=r"steps'\] must be an integer in \[0, 5\]"):
        run.load_state_dict({"steps": 6})
    with pytest.raises(TypeError, match="state"):
        run.load_state_dict([4])
    assert run.steps == 4
    with pytest.raises(ValueError, match="no step"):
        MatrixAccountant(np.eye(5), 1.0, sample_rate=0.1).epsilon(DELTA)
    with pytest.raises(ValueError, match="participations"):
        MatrixAccountant(np.eye(5), 1.0, sample_rate=0.1, participations=2)
    with pytest.raises(ValueError, match="bands"):
        MatrixAccountant(np.eye(5), 1.0, bands=2)
    with pytest.raises(ValueError, match="noise_multiplier"):
        MatrixAccountant(np.eye(5), -1.0)
    with pytest.raises(ValueError, match="participations"):
        MatrixAccountant(np.eye(5), 1.0, participations=9)


@pytest.mark.filterwarnings("ignore::plda.AccuracyWarning")  # the bound's own gap
def test_every_step_poisson_sampled_is_the_conditional_bound_of_the_leading_block():
    strategy = pm.toeplitz_strategy([0.9, 0.4, 0.2], 60)
    run = MatrixAccountant(strategy, 4.0, sample_rate=0.02, strategy_sampling="poisson")
    uppers = []
    for t in (10, 30, 60):
        run.step(t - run.steps)
        prefix = pm.PoissonMatrixMechanism(pm.toeplitz_strategy([0.9, 0.4, 0.2], t), 4.0, 0.02)
        assert tuple(run.epsilon_bounds(DELTA)) == tuple(prefix.epsilon_bounds(DELTA))
        uppers.append(run.epsilon(DELTA))
    assert uppers[0] < uppers[1] < uppers[2]
    resumed = MatrixAccountant(strategy, 4.0, sample_rate=0.02, strategy_sampling="poisson")
    resumed.load_state_dict(run.state_dict())
    assert tuple(resumed.delta_bounds(1.0)) == tuple(run.delta_bounds(1.0))


@pytest.mark.parametrize("options, match", [
    (dict(strategy_sampling="poisson"), "sample_rate"),
    (dict(sample_rate=0.1, strategy_sampling="poisson", bands=2), "bands"),
    (dict(sample_rate=0.1, strategy_sampling="shuffled"), "strategy_sampling"),
])
def test_strategy_sampling_refuses_what_it_cannot_use(options, match):
    with pytest.raises(ValueError, match=match):
        MatrixAccountant(np.eye(5), 1.0, **options)
