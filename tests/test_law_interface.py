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


@pytest.mark.parametrize("method", ["continuous_cdf", "continuous_sf", "continuous_pdf"])
def test_bad_hypothesis_is_a_value_error(method):
    with pytest.raises(ValueError, match="hypothesis"):
        getattr(_gaussian_law(), method)(np.zeros(2), "R")


@pytest.mark.parametrize("mass", [-0.1, 1.5, float("nan")])
def test_bad_tail_mass_is_a_value_error(mass):
    with pytest.raises(ValueError, match="mass"):
        _gaussian_law().tail_points(mass)
