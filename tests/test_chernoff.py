"""The Chernoff tail bound of pessimistic grid laws (:mod:`plda.grid.chernoff`): computed only
where a query needs it, and the same answers as when it was always computed."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import plda
from plda.discretization import discretize as discretize_module
from plda.engine.composer import compose
from plda.grid.chernoff import CHERNOFF_GATE, chernoff_delta, chernoff_epsilon
from plda.grid.discrete import DiscreteLoss


def _composed(q=0.01, sigma=1.0, count=1000, step=2.0**-10):
    law = plda.PoissonSampled(plda.Gaussian(sigma), q).privacy_loss("remove")
    upper = discretize_module.discretize(law, step)[0]
    return law, upper, compose([(upper, count)])


def _eager(law: DiscreteLoss) -> DiscreteLoss:
    """The same law with its Chernoff moments computed and held, as before they were lazy."""
    log_mgf, infinity = law.chernoff()
    return DiscreteLoss(step=law.step, offset=law.offset, probs=law.probs,
                        infinity_mass=law.infinity_mass, upper=law.upper,
                        entry_error=law.entry_error, l2_error=law.l2_error,
                        loss_error=law.loss_error, log_mgf=log_mgf,
                        chernoff_infinity_mass=infinity)


def test_a_dp_sgd_query_computes_no_far_tail(monkeypatch):
    # B1's epsilon(1e-5) is resolved by the grid: the far tail's coarse discretization (a
    # third of a Laplace composition's time) is never built
    plda.clear_caches()
    calls = []
    original = discretize_module.far_tail_moments

    def counting(law):
        calls.append(law)
        return original(law)

    monkeypatch.setattr(discretize_module, "far_tail_moments", counting)
    pld = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Gaussian(1.0), 0.01)
    ).self_compose(1000)
    pld.epsilon_bounds(1e-5)
    pld.delta_bounds(1.0)
    assert calls == []
    with pytest.warns(plda.AccuracyWarning):  # below what a tilt resolves: Chernoff's
        pld.epsilon_bounds(1e-310)
    assert calls


@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-9, 1e-15, 1e-25, 1e-60, 1e-200])
def test_lazy_moments_answer_as_the_eager_ones(delta):
    # wherever the gate is closed the Chernoff bound is no better than the grid's answer
    _, _, composed = _composed()
    eager = _eager(composed)
    d = np.array([delta])
    assert composed.epsilon(d) == eager.epsilon(d)
    assert composed.epsilon(np.array([delta] * 6)).tolist() == eager.epsilon(
        np.array([delta] * 6)).tolist()
    eps = np.linspace(0.0, 12.0, 49)
    assert composed.delta(eps).tolist() == eager.delta(eps).tolist()


def test_the_gate_opens_near_what_the_grid_cannot_resolve():
    _, _, composed = _composed()
    n = len(composed.probs)
    floor = composed.infinity_mass + min(composed.entry_error * n,
                                         composed.l2_error * np.sqrt(n))
    # below the gate the grid's answer alone is looser than with the Chernoff bound
    d = np.array([floor])
    grid_alone = DiscreteLoss(step=composed.step, offset=composed.offset, probs=composed.probs,
                              infinity_mass=composed.infinity_mass, upper=True,
                              entry_error=composed.entry_error, l2_error=composed.l2_error,
                              loss_error=composed.loss_error)
    assert composed.epsilon(d)[0] <= grid_alone.epsilon(d)[0]
    assert composed.epsilon(d)[0] < np.inf
    assert CHERNOFF_GATE * floor < 1e-5  # B1's query lies above it


def test_composed_moments_are_the_sum_of_the_factors():
    law, upper, composed = _composed(count=7)
    log_mgf, infinity = composed.chernoff()
    factor_mgf, factor_infinity = upper.chernoff()
    np.testing.assert_allclose(log_mgf, 7 * factor_mgf, rtol=1e-15)
    # the union of seven events of 2e-320 each (subnormal: rounded up, never down)
    assert factor_infinity <= infinity <= 8 * factor_infinity
    # the composed law holds the factors' sources, not their grid arrays
    assert all(not isinstance(s, DiscreteLoss) for s, _ in composed.far_tail.sources)


def test_a_law_with_lazy_moments_pickles():
    _, _, composed = _composed(count=3)
    again = pickle.loads(pickle.dumps(composed))
    np.testing.assert_array_equal(again.chernoff()[0], composed.chernoff()[0])


def test_without_moments_the_bounds_say_nothing():
    assert np.all(chernoff_delta(None, np.array([0.0, 1.0])) == np.inf)
    assert np.all(chernoff_epsilon(None, np.array([1e-5])) == np.inf)
    law = DiscreteLoss(step=0.1, offset=0, probs=np.array([0.5, 0.5]))
    assert law.chernoff() is None and law.chernoff_source() is None


def test_the_delta_bound_at_many_points_is_the_bound_at_each():
    # chernoff_delta works through long arrays in chunks (the profile samples its tail with
    # it): each point gets the bound it gets alone, the underflow floor included
    law = discretize_module.discretize(
        plda.PoissonSampled(plda.Gaussian(0.9), 0.01).privacy_loss("remove"), 2.0**-8)[0]
    moments = law.chernoff()
    eps = np.concatenate([np.linspace(0.0, 50.0, 9000), [1e5, np.inf]])
    many = chernoff_delta(moments, eps)
    alone = np.array([float(chernoff_delta(moments, np.array(e))) for e in eps[::97]])
    assert np.array_equal(many[::97], alone)
    assert np.all(np.diff(many[:-2]) <= 0) and many[-2] > 0  # 5e-324, not 0, at eps = 1e5
