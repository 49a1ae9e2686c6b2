"""Mechanisms expose their privacy-loss laws like scipy.stats distributions."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.stats import norm

import plda

LAWS = [
    plda.Gaussian(1.3),
    plda.Laplace(2.0),
    plda.PoissonSampled(plda.Gaussian(0.9), 0.05),
    plda.PoissonSampled(plda.Laplace(1.0), 0.3),
    plda.DiscreteLaplace(0.4, sensitivity=2),
    plda.DiscreteGaussian(1.5),
    plda.ApproximateDP(0.7, 1e-3),
]


@pytest.mark.parametrize("mechanism", LAWS, ids=lambda m: type(m).__name__)
@pytest.mark.parametrize("direction", ["remove", "add"])
def test_law_is_a_valid_pair(mechanism, direction):
    law = mechanism.privacy_loss(direction)
    lo, hi = -50.0, 50.0
    # total mass 1 under P and Q (Q's mass at -inf included in its cdf)
    assert law.cdf(hi, "P") + law.sf(hi, "P") == pytest.approx(1.0, abs=1e-12)
    assert law.cdf(lo, "P") <= 1e-12
    assert law.cdf(hi, "Q") + law.sf(hi, "Q") == pytest.approx(1.0, abs=1e-12)
    x = np.linspace(-3, 3, 41)
    assert np.all(np.diff(law.cdf(x, "P")) >= -1e-15)
    assert np.allclose(law.cdf(x, "P") + law.sf(x, "P"), 1.0, atol=1e-12)


@pytest.mark.parametrize("mechanism", LAWS[:4], ids=lambda m: type(m).__name__)
def test_density_matches_cdf(mechanism):
    law = mechanism.privacy_loss("remove")
    a, b = -0.2, 0.3
    for hypothesis in "PQ":
        density = lambda t, h=hypothesis: law._cont_pdf(np.array([t]), h)[0]  # noqa: E731
        integral = quad(density, a, b, epsabs=1e-13, limit=200)[0]
        cdf = law._cont_cdf(np.array([a, b]), hypothesis)
        diff = cdf[1] - cdf[0]
        assert integral == pytest.approx(diff, rel=1e-7, abs=1e-12)


def test_gaussian_law_closed_form_and_quantiles():
    law = plda.Gaussian(2.0).privacy_loss()
    mu = 0.5
    assert law.cdf(0.3, "P") == pytest.approx(norm.cdf(0.3, mu**2 / 2, mu))
    assert law.sf(0.3, "Q") == pytest.approx(norm.sf(0.3, -(mu**2) / 2, mu))
    q = law.ppf(0.9)
    assert law.cdf(q) == pytest.approx(0.9, abs=1e-9)
    assert law.sf(law.isf(1e-6)) == pytest.approx(1e-6, rel=1e-6)


def test_law_delta_is_the_hockey_stick():
    law = plda.Gaussian(1.0).privacy_loss()
    eps = 1.0
    exact = norm.cdf(-eps + 0.5) - np.exp(eps) * norm.cdf(-eps - 0.5)
    assert law.delta(eps) == pytest.approx(exact, rel=1e-12)


def test_reversed_law_swaps_roles():
    law = plda.PoissonSampled(plda.Gaussian(1.0), 0.2).privacy_loss("remove")
    rev = law.reversed()
    x = np.array([-0.5, 0.0, 0.5])
    assert np.allclose(rev.cdf(x, "P"), law.sf(-x, "Q") + 0 * x, atol=1e-15)
    assert rev.reversed() is law


def test_custom_mechanism_reproduces_builtin():
    mu = 0.5
    law = plda.LossLaw(
        cdf_p=lambda x: norm.cdf(x, mu**2 / 2, mu),
        sf_p=lambda x: norm.sf(x, mu**2 / 2, mu),
        cdf_q=lambda x: norm.cdf(x, -(mu**2) / 2, mu),
        sf_q=lambda x: norm.sf(x, -(mu**2) / 2, mu),
        pdf_p=lambda x: norm.pdf(x, mu**2 / 2, mu),
        support=(-np.inf, np.inf),
    )
    custom = plda.PoissonSampled(plda.CustomMechanism(law, name="gauss"), 0.1)
    builtin = plda.PoissonSampled(plda.Gaussian(2.0), 0.1)
    a = plda.PrivacyLossDistribution.from_mechanism(custom).self_compose(20).epsilon_bounds(1e-5)
    b = plda.PrivacyLossDistribution.from_mechanism(builtin).self_compose(20).epsilon_bounds(1e-5)
    assert a.lower <= b.upper and b.lower <= a.upper
    assert a.upper == pytest.approx(b.upper, rel=1e-3)


def test_custom_law_without_density_uses_cdf_differences():
    mu = 1.0
    law = plda.LossLaw(
        cdf_p=lambda x: norm.cdf(x, mu**2 / 2, mu),
        sf_p=lambda x: norm.sf(x, mu**2 / 2, mu),
        cdf_q=lambda x: norm.cdf(x, -(mu**2) / 2, mu),
        sf_q=lambda x: norm.sf(x, -(mu**2) / 2, mu),
        support=(-np.inf, np.inf),
    )
    lower, upper = plda.PrivacyLossDistribution.from_mechanism(
        plda.CustomMechanism(law)
    ).self_compose(3).epsilon_bounds(1e-4)
    exact = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(1 / np.sqrt(3))).epsilon(1e-4)
    assert lower <= exact * (1 + 1e-9) and exact <= upper * (1 + 1e-9)


def test_loss_law_validation():
    with pytest.raises(ValueError, match="together"):
        plda.LossLaw(cdf_p=norm.cdf)
    with pytest.raises(TypeError, match="callables"):
        plda.LossLaw(cdf_p=1, sf_p=1, cdf_q=1, sf_q=1, support=(0, 1))
    with pytest.raises(ValueError, match="support"):
        plda.LossLaw(cdf_p=norm.cdf, sf_p=norm.sf, cdf_q=norm.cdf, sf_q=norm.sf, support=(1, 0))
    with pytest.raises(TypeError, match="remove"):
        plda.CustomMechanism("not a law")


def test_mechanisms_are_hashable_value_objects():
    assert plda.Gaussian(1.0) == plda.Gaussian(1.0)
    assert len({plda.Gaussian(1.0), plda.Gaussian(1.0), plda.Laplace(1.0)}) == 2
    with pytest.raises(AttributeError):
        plda.Gaussian(1.0).sigma = 2.0


def test_laws_are_shared_by_equal_mechanisms_and_kept_by_each():
    # equal mechanisms share one law object (the discretizations key on its identity), and a
    # mechanism keeps its laws even when the shared cache has forgotten them (a history
    # longer than that cache must not rediscretize its laws at every query)
    first, second = plda.Gaussian(1.37), plda.Gaussian(1.37)
    assert first.privacy_loss("remove") is second.privacy_loss("remove")
    law = first.privacy_loss("add")
    plda.clear_caches()
    assert first.privacy_loss("add") is law
    assert plda.Gaussian(1.37).privacy_loss("add") is not law  # a fresh one after clearing
    sampled = plda.PoissonSampled(plda.Gaussian(1.37), 0.013)
    coarse = sampled.coarsened()
    assert sampled.coarsened() is coarse
    assert coarse.sample_rate >= sampled.sample_rate and coarse.mechanism.sigma <= 1.37
    # what a mechanism remembers is not part of its value or its pickle
    assert sampled == plda.PoissonSampled(plda.Gaussian(1.37), 0.013)
    assert "_memo" not in pickle.loads(pickle.dumps(sampled)).__dict__


def test_a_sampled_gaussian_maps_both_tail_points_in_one_call(monkeypatch):
    # every discretization asks a law for three tails; the loss map's fixed cost per call
    # was an eighth of a noise schedule's discretization
    from plda.mechanisms.subsampled import SubsampledLaw

    law = plda.PoissonSampled(plda.Gaussian(0.9), 0.01).privacy_loss("remove")
    calls = []
    original = SubsampledLaw.subsampled_loss
    monkeypatch.setattr(SubsampledLaw, "subsampled_loss",
                        lambda self, loss: calls.append(np.size(loss)) or original(self, loss))
    for hypothesis in ("P", "Q"):
        lo, hi = law.tail_points(1e-17, hypothesis)
        assert isinstance(lo, float) and isinstance(hi, float) and lo < 0 < hi
    assert calls == [2, 2]


def test_a_discrete_laplace_of_tiny_decay_is_silent_and_keeps_its_mass():
    """At parameter 1e-300, log1p(-e^-t) took log(0): a RuntimeWarning, and the interior atoms
    (mass ~ t / 2 each) came out 0. Past parameter * sensitivity = 1e150 the engine answered
    with a bare 'math domain error': refused up front now, naming the product."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        law = plda.DiscreteLaplace(1e-300, sensitivity=5).privacy_loss("remove")
    assert np.all(law.atom_probs > 0) and law.atom_probs.sum() == pytest.approx(1, abs=1e-12)
    with pytest.raises(ValueError, match=r"parameter \* sensitivity .* must be at most 1e\+150"):
        plda.DiscreteLaplace(1e160)
    with pytest.raises(ValueError, match=r"at most 5e\+149 under relation='replace_one'"):
        plda.DiscreteLaplace(1e150).under_replace_one()


def test_replace_one_sampled_gaussian_far_out_inverts_without_a_warning():
    """Its loss map's Newton steps divided by a slope of 0 or NaN at shift / sigma 1e3
    (RuntimeWarning 'invalid value encountered in divide'): such a step is not inside the
    bracket and was already replaced by bisection; the warning leaked."""
    step = plda.PoissonSampled(plda.Gaussian(1.0, 1000.0), 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        pld = plda.PrivacyLossDistribution.from_mechanism(step, relation="replace_one")
        bounds = pld.epsilon_bounds(0.25)
    assert 0.0 <= bounds.lower <= bounds.upper
