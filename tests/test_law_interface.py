"""Public interface of a law's continuous part (scipy.stats pattern: validate, call the hook)."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

import plda


def _gaussian_law(sigma: float = 1.0):
    return plda.Gaussian(sigma).privacy_loss("remove")


def test_continuous_cdf_sf_pdf_match_closed_form():
    # Gaussian, sensitivity 1: L ~ N(mu^2/2, mu^2) under P, N(-mu^2/2, mu^2) under Q, mu = 1/sigma.
    sigma = 0.7
    mu = mpmath.mpf(1) / mpmath.mpf(sigma)
    law = _gaussian_law(sigma)
    xs = np.array([-3.0, 0.0, 1.5, 6.0])
    for hypothesis, mean in (("P", mu**2 / 2), ("Q", -(mu**2) / 2)):
        cdf = law.continuous_cdf(xs, hypothesis)
        sf = law.continuous_sf(xs, hypothesis)
        pdf = law.continuous_pdf(xs, hypothesis)
        for i, x in enumerate(xs):
            z = (mpmath.mpf(x) - mean) / mu
            assert cdf[i] == pytest.approx(float(mpmath.ncdf(z)), rel=1e-10, abs=1e-300)
            assert sf[i] == pytest.approx(float(mpmath.ncdf(-z)), rel=1e-10, abs=1e-300)
            dens = mpmath.npdf(mpmath.mpf(x), mean, mu)
            assert pdf[i] == pytest.approx(float(dens), rel=1e-10, abs=1e-300)
    four = law.continuous_cdf_sf(xs)
    np.testing.assert_allclose(four[0], law.continuous_cdf(xs, "P"), rtol=1e-12)
    np.testing.assert_allclose(four[3], law.continuous_sf(xs, "Q"), rtol=1e-12)


def test_tail_points_bound_the_tails():
    law = _gaussian_law(1.3)
    for hypothesis in ("P", "Q"):
        a, b = law.tail_points(1e-12, hypothesis)
        assert a < b
        assert law.continuous_cdf([a], hypothesis)[0] <= 1e-12 * (1 + 1e-9)
        assert law.continuous_sf([b], hypothesis)[0] <= 1e-12 * (1 + 1e-9)



def test_tail_points_are_remembered_per_law_and_per_hypothesis():
    # a discretization asks for the same tails many times: the hook runs once per (mass,
    # hypothesis), and a remembered answer is the one the hook gives
    law = plda.PoissonSampled(plda.Gaussian(0.9), 0.01).privacy_loss("remove")
    law.__dict__.pop("_memo", None)  # the law object is shared: start from nothing
    calls = []
    hook = law._cont_tail

    def counting(mass, hypothesis):
        calls.append((mass, hypothesis))
        return hook(mass, hypothesis)

    object.__setattr__(law, "_cont_tail", counting)
    try:
        first = law.tail_points(1e-13, "P")
        assert law.tail_points(1e-13, "P") == first
        assert law.tail_points(1e-13, "Q") != first  # another hypothesis, another answer
        assert law.tail_points(1e-20, "P") != first
        assert calls == [(1e-13, "P"), (1e-13, "Q"), (1e-20, "P")]
        assert first == hook(1e-13, "P")
    finally:
        object.__delattr__(law, "_cont_tail")

@pytest.mark.parametrize("method", ["continuous_cdf", "continuous_sf", "continuous_pdf"])
def test_bad_hypothesis_is_a_value_error(method):
    with pytest.raises(ValueError, match="hypothesis"):
        getattr(_gaussian_law(), method)(np.zeros(2), "R")


@pytest.mark.parametrize("mass", [-0.1, 1.5, float("nan")])
def test_bad_tail_mass_is_a_value_error(mass):
    with pytest.raises(ValueError, match="mass"):
        _gaussian_law().tail_points(mass)


@pytest.mark.parametrize("sigma", [0.05, 0.8, 30.0])
def test_gaussian_cdf_sf_together_are_the_four_alone(sigma):
    # continuous_cdf_sf takes one ndtr per hypothesis (the smaller tail and its complement):
    # each of the four must be the one continuous_cdf / continuous_sf give, to full relative
    # accuracy in both tails (a complement formed on the small side would lose it there)
    law = _gaussian_law(sigma)
    mu = 1.0 / sigma
    z = np.concatenate([np.linspace(-38, 38, 2001), [-1.0, -0.999, 0.0, 0.999, 1.0]])
    for index, (hypothesis, mean) in enumerate((("P", mu**2 / 2), ("Q", -(mu**2) / 2))):
        x = mean + mu * z
        cdf, sf = law.continuous_cdf_sf(x)[2 * index : 2 * index + 2]
        np.testing.assert_allclose(cdf, law.continuous_cdf(x, hypothesis), rtol=1e-15, atol=0)
        np.testing.assert_allclose(sf, law.continuous_sf(x, hypothesis), rtol=1e-15, atol=0)
        assert cdf[0] < 1e-300 and sf[-6] < 1e-300  # the tails reached
    # a scalar in, scalars out (the one-entry array's values)
    single = law.continuous_cdf_sf(0.3)
    assert all(np.ndim(v) == 0 for v in single)
    assert [float(v) for v in single] == [float(v[0]) for v in law.continuous_cdf_sf([0.3])]


def test_subsampled_base_loss_inverts_the_loss_map_above_30():
    # above loss 30 the base loss takes the form l - log q + log1p((q - 1) e^{-l}), computed
    # only for those entries; checked against 50 digits on both sides of the switch
    q = 0.01
    law = plda.PoissonSampled(plda.Gaussian(1.0), q).privacy_loss("remove")
    losses = np.array([-1.0, 0.0, 0.5, 29.999, 30.0, 30.001, 45.0, 700.0, 800.0])
    got = law.base_loss(losses)
    assert got[0] == -np.inf  # at or below log(1 - q): no base loss maps there
    with mpmath.workdps(50):
        for loss, value in zip(losses[1:], got[1:], strict=True):
            exact = mpmath.log(1 + mpmath.expm1(mpmath.mpf(loss)) / q)
            assert value == pytest.approx(float(exact), rel=1e-14, abs=1e-300)
    assert float(law.base_loss(45.0)) == got[6]  # a scalar takes the same path
