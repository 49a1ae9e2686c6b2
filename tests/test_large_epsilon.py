"""Certified bounds at large epsilon (issue 12, item 3) and outward-rounded closed forms.

``e^eps`` overflows a double past 709.78 and ``e^-l`` underflows past 745: the profile is solved in
a frame shifted to each cut, and cells whose Q-mass underflowed are not read as exact. References:
the k-fold Gaussian's privacy loss is exactly ``N(mu^2/2, mu^2)`` with ``mu = sqrt(k)/sigma``, so
``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``, evaluated in mpmath.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis_settings import examples

import plda
from plda import testing


def gaussian_delta(mu, eps) -> mpmath.mpf:
    with mpmath.workdps(60):
        mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
        return mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2)


def gaussian_epsilon(mu, delta) -> mpmath.mpf:
    with mpmath.workdps(60):
        mu = mpmath.mpf(mu)
        # delta(eps) decreases in eps: bisect on a bracket around the mean loss
        lo, hi = mpmath.mpf(0), mu * mu / 2 + 40 * mu + 40
        for _ in range(200):
            mid = (lo + hi) / 2
            if gaussian_delta(mu, mid) > delta:
                lo = mid
            else:
                hi = mid
        return hi


@pytest.mark.parametrize(
    ("sigma", "count", "delta", "exact"),
    [(1.0, 1200, 1e-5, 746.797), (0.5, 1000, 1e-3, 2194.467), (1.0, 10**5, 1e-8, 51773.68)],
)
def test_reported_epsilons_are_bracketed(sigma, count, delta, exact):
    mu = math.sqrt(count) / sigma
    reference = gaussian_epsilon(mu, delta)
    assert float(reference) == pytest.approx(exact, abs=0.01)
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma), count)
    bounds = pld.epsilon_bounds(delta)
    assert bounds.lower <= reference <= bounds.upper
    assert bounds.lower < bounds.upper


@pytest.mark.parametrize(("eps", "exact"), [(700.0, None), (710.0, 0.98694), (760.0, 0.83514)])
def test_reported_deltas_near_the_overflow_are_bracketed(eps, exact):
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(1.0), 1600)  # mu = 40
    reference = gaussian_delta(40, eps)
    if exact is not None:
        assert float(reference) == pytest.approx(exact, abs=1e-5)
    bounds = pld.delta_bounds(eps)
    assert bounds.lower <= reference <= bounds.upper
    assert bounds.upper - bounds.lower < 1e-2


@pytest.mark.slow
@pytest.mark.parametrize("eps", [1300.0, 1500.0, 1700.0])
def test_discrete_laplace_at_large_epsilon(eps):
    exact = testing.discrete_laplace_composition_delta(2.0, 1000, eps, precise=True)
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.DiscreteLaplace(parameter=2.0), 1000)
    bounds = pld.delta_bounds(eps)
    assert bounds.lower <= exact <= bounds.upper


@pytest.mark.parametrize("eps", [90.0, 99.0, 99.99])
def test_one_laplace_with_a_large_pure_epsilon(eps):
    # scale 0.01: a pure 100-DP step
    exact = testing.laplace_delta(eps, 0.01, precise=True)
    bounds = plda.PrivacyLossDistribution.from_mechanism(plda.Laplace(scale=0.01)).delta_bounds(eps)
    assert bounds.lower <= exact <= bounds.upper


@given(
    sigma=st.floats(min_value=0.05, max_value=20.0),
    count=st.integers(min_value=1, max_value=10**6),
    log_delta=st.floats(min_value=-12.0, max_value=-1.0),
)
@example(sigma=1.0, count=1200, log_delta=-5.0)
@example(sigma=0.5, count=1000, log_delta=-3.0)
@examples(15)
def test_gaussian_epsilon_bounds_bracket_the_exact_value(sigma, count, log_delta):
    delta = 10.0**log_delta
    mu = math.sqrt(count) / sigma
    reference = gaussian_epsilon(mu, delta)
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma), count)
    bounds = pld.epsilon_bounds(delta)
    assert bounds.lower <= reference <= bounds.upper


def test_zcdp_of_a_gaussian_is_rounded_up():
    rho = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(7.0)).zcdp()
    assert Fraction(rho) >= Fraction(1, 98)


@given(sigma=st.floats(min_value=0.01, max_value=1e4), count=st.integers(1, 10**9))
@example(sigma=7.0, count=11)
@examples(50)
def test_gaussian_dp_mu_is_rounded_outward(sigma, count):
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma), count)
    with mpmath.workdps(50):
        exact = mpmath.sqrt(count) / mpmath.mpf(sigma)
        summary = plda.tradeoff.gaussian_dp(pld)
        assert mpmath.mpf(summary.mu_lower) <= exact <= mpmath.mpf(pld.gdp_mu())
        rho = mpmath.mpf(pld.zcdp())
        assert rho >= exact**2 / 2


def test_the_accountant_at_large_epsilon():
    accountant = plda.PLDAccountant()
    accountant.compose(plda.Gaussian(1.0), count=1200)
    reference = gaussian_epsilon(math.sqrt(1200), 1e-5)
    bounds = accountant.epsilon_bounds(1e-5)
    assert bounds.lower <= reference <= bounds.upper
    assert accountant.epsilon(1e-5) == bounds.upper
