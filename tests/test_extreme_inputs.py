"""Extreme but valid inputs get a certified answer or a ValueError naming the supported range
(issue 12, item 9), quickly and in bounded memory; saved states are validated strictly."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import plda
from plda._internal.validation import MAX_COUNT


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: plda.DiscreteGaussian(sigma=1e7), "sigma must be in"),
        (lambda: plda.DiscreteLaplace(parameter=1, sensitivity=10**9), "sensitivity must be"),
        (lambda: plda.Gaussian(1e300), "sensitivity / sigma must be in"),
        (lambda: plda.Gaussian(1e-300), "sensitivity / sigma must be in"),
        (lambda: plda.Laplace(scale=1e-3), "sensitivity / scale must be in"),
        (lambda: plda.PoissonSampled(plda.Gaussian(1.0), 1e-200), "sample_rate must be in"),
        # a mixture with losses up to 5e19: MemoryError at the first query before
        (lambda: plda.PoissonSampled(plda.Gaussian(1e-10), 0.5), "sensitivity / sigma must be"),
        (lambda: plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(1.0), 10**30),
         "count must be an integer in"),
        (lambda: plda.PLDAccountant().step(1.0, 0.01, count=10**30), "count must be"),
        (lambda: plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(1.0), 10**7)
         .self_compose(10**6), "count"),
    ],
)
def test_out_of_range_inputs_say_which_range_is_supported(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("step", [1e-12, 1e-9, 1e-7])
def test_a_fixed_step_too_fine_is_refused_before_any_large_array(step):
    # step=1e-12 raised MemoryError (undocumented), and step=1e-7 for 1000 Gaussian steps
    # asked numpy for a 34.6 GiB array before failing
    import tracemalloc

    pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(1.0), 1000, step=step)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=f"step={step!r} is too fine"):
            pld.epsilon_bounds(1e-5)
        assert tracemalloc.get_traced_memory()[1] < 64 << 20
    finally:
        tracemalloc.stop()


def test_an_accountant_refuses_steps_past_the_supported_total_and_records_nothing():
    accountant = plda.PLDAccountant()
    accountant.step(1.0, 0.01, count=MAX_COUNT)
    with pytest.raises(ValueError, match="more than"):
        accountant.step(1.0, 0.01)
    assert len(accountant) == MAX_COUNT


@pytest.mark.parametrize(
    "mechanism",
    [
        plda.Gaussian(1e150),  # mu = 1e-150: the smallest supported
        plda.Gaussian(1e-15),  # mu = 1e15: the largest
        plda.Laplace(scale=1 / 700),
        plda.Laplace(scale=1e300),
        plda.DiscreteGaussian(sigma=3e4),
        plda.DiscreteLaplace(parameter=1.0, sensitivity=10**6),
        plda.PoissonSampled(plda.Gaussian(1.0), 1e-12),
    ],
)
def test_the_edges_of_the_supported_ranges_give_ordered_bounds(mechanism):
    bounds = plda.PrivacyLossDistribution.from_mechanism(mechanism).epsilon_bounds(1e-5)
    assert 0 <= bounds.lower <= bounds.upper < float("inf")


def test_edge_gaussians_bracket_the_exact_epsilon():
    import mpmath

    for sigma in (1e150, 1e-15):
        mu = mpmath.mpf(1) / mpmath.mpf(sigma)
        pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma))
        bounds = pld.epsilon_bounds(1e-5)
        with mpmath.workdps(60):
            def delta(eps, mu=mu):
                eps = mpmath.mpf(eps)
                return mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(
                    -eps / mu - mu / 2
                )

            assert delta(bounds.upper) <= 1e-5  # the upper bound is valid
            assert bounds.lower == 0 or delta(bounds.lower) >= 1e-5  # the lower bound too


def _state():
    accountant = plda.PLDAccountant()
    accountant.step(1.1, 0.01, count=10)
    return accountant.state_dict()


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda s: s.update(version=1.0), "version"),
        (lambda s: s.update(version=True), "version"),
        (lambda s: s.update(extra=1), "unknown keys"),
        (lambda s: s["history"][0].update(count=1e300), "count"),
        (lambda s: s["history"][0].update(count=10**30), "count"),
    ],
)
def test_accountant_states_are_validated_strictly(change, match):
    state = _state()
    change(state)
    accountant = plda.PLDAccountant()
    accountant.step(2.0, 0.5)
    before = accountant.state_dict()
    with pytest.raises(ValueError, match=match):
        accountant.load_state_dict(state)
    assert accountant.state_dict() == before  # nothing half-done
    with pytest.raises(ValueError, match=match):
        plda.PLDAccountant.from_state_dict(state)


def test_deeply_nested_mechanisms_are_refused_not_recursed():
    mechanism = {"type": "Gaussian", "sigma": 1.0}
    for _ in range(2000):
        mechanism = {"type": "PoissonSampled", "mechanism": mechanism, "sample_rate": 0.5}
    state = _state()
    state["history"][0]["mechanism"] = mechanism
    with pytest.raises(ValueError, match="nested at most"):
        plda.PLDAccountant.from_state_dict(state)


def test_pld_recipes_are_validated_strictly(tmp_path):
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(1.0), 3)
    data = plda.serialization.pld_to_dict(pld)
    for change, match in [
        (lambda d: d.update(version=True), "version"),
        (lambda d: d.update(extra=1), "unknown keys"),
        (lambda d: d["components"][0].update(count=10**30), "count"),
    ]:
        broken = copy.deepcopy(data)
        change(broken)
        with pytest.raises(ValueError, match=match):
            plda.serialization.pld_from_dict(broken)


def test_cells_many_losses_wide_keep_their_mass():
    # a composition of huge losses fits the grid cap only on a coarse grid (a step of 56 here);
    # six quadrature nodes per cell did not resolve the layer where 1 - e^{-(L - l_j)} rises,
    # and their error bars gave one step's pessimistic version 19% more mass
    from plda.discretization.discretize import discretize

    law = plda.PoissonSampled(plda.Gaussian(0.6), 0.5, group_size=100).privacy_loss("remove")
    for step in (56.33661684154697, 10.0, 1.5):
        upper, lower = discretize(law, step)
        assert 1.0 <= upper.probs.sum() + upper.infinity_mass <= 1.0 + 1e-8
        assert lower.probs.sum() + lower.infinity_mass <= 1.0


def test_a_composition_on_a_coarse_grid_answers_without_nan():
    # composed 5000 times, that excess overflowed: delta_bounds' upper bound was NaN
    step = plda.PoissonSampled(plda.Gaussian(0.6), 0.5, group_size=100)
    pld = plda.PrivacyLossDistribution.from_mechanism(step, 5000)
    lower, upper = pld.delta_bounds([0.0, 1.0, 4.0])
    assert np.all(np.isfinite(upper)) and np.all(lower <= upper) and np.all(upper <= 1.0)
    assert np.all(lower >= 1.0 - 1e-6)  # the truth is within 1e-6 of 1 at these epsilons
    bounds = pld.epsilon_bounds(1e-5)
    assert 0 < bounds.lower <= bounds.upper <= bounds.lower * (1 + 1e-3)


@pytest.mark.parametrize(("sigma", "count"), [(1e-15, 5 * 10**6), (1e-10, 10**12), (3e-10, 10**12)])
def test_gaussian_steps_past_the_merged_range_compose_one_by_one_within_the_truth(sigma, count):
    # Gaussian steps whose merged mu passes 1e15 are composed one by one. Each step's loss
    # spreads over 1/sigma around a mean of 1/(2 sigma^2): on the grid the accuracy asks for it
    # is a cell or two, so any count fits (refused past about 4e6 steps before 8e16f2d)
    import mpmath

    mu = mpmath.sqrt(count) / mpmath.mpf(sigma)  # the composition is GDP(mu), exactly

    def delta(eps):
        with mpmath.workdps(80):
            eps = mpmath.mpf(eps)
            return mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(
                -eps / mu - mu / 2)

    pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma=sigma), count)
    accountant = plda.PLDAccountant()
    accountant.step(noise_multiplier=sigma, sample_rate=1.0, count=count)
    for query in (pld.epsilon_bounds, accountant.epsilon_bounds):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", plda.AccuracyWarning)  # (3e-10: a gap of 0.6%)
            bounds = query(1e-5)
        assert 0 < bounds.lower <= bounds.upper <= bounds.lower * 1.01
        assert delta(bounds.upper) <= 1e-5 <= delta(bounds.lower)


@pytest.mark.parametrize(
    "mechanism", [plda.Laplace(1.0), plda.PoissonSampled(plda.Laplace(1.0), 0.01)])
def test_a_count_whose_spread_outgrows_the_grid_cap_is_refused_by_name(mechanism):
    # 1e12 steps of a law with two or more losses spread over ~1e6 grid cells at any step
    # (past the cap); the internal GridTooLarge must not reach the user (from the subsampled
    # one it did, out of the lazily composed optimistic version)
    pld = plda.PrivacyLossDistribution.from_mechanism(mechanism, 10**12)
    accountant = plda.PLDAccountant()
    accountant.compose(mechanism, 10**12)
    for query in (pld.epsilon_bounds, accountant.epsilon_bounds):
        with pytest.raises(plda.UncoveredParametersError, match=r"^count: .*sqrt\(n\)"):
            query(1e-5)


def test_an_optimistic_version_past_the_cap_leaves_a_trivial_lower_bound_and_warns():
    # 2.5e11 subsampled Laplace steps: the pessimistic version fits, its optimistic twin (read
    # later) needs 4.9e6 points. It raised the internal GridTooLarge; P = Q is below every law,
    # so the lower bound is 0, the upper one still certified, and the gap warns
    pld = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Laplace(1.0), 0.01), 25 * 10**10)
    with pytest.warns(plda.AccuracyWarning):
        bounds = pld.epsilon_bounds(1e-5)
    assert bounds.lower == 0 and 1e7 < bounds.upper < 1.2e7
