"""Tiny probabilities keep their accuracy: infinite-loss masses composed as
``1 - prod (1 - m)^k`` via log1p/expm1 and rounded outward (issue 12, item 2).

Reference: the k-fold composition of ``ApproximateDP(eps0, d0)`` (randomized response with an
infinite-loss mass, Kairouz, Oh & Viswanath 2015) has privacy loss ``+inf`` w.p.
``1 - (1 - d0)^k`` and ``(k - 2i) eps0`` w.p. ``(1 - d0)^k C(k, i) p^(k-i) (1-p)^i`` with
``p = e^eps0 / (1 + e^eps0)``; delta(eps) is computed from it in mpmath at 60 digits.
"""

from __future__ import annotations

import math

import mpmath
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis_settings import examples

import plda
from plda._internal.floats import union_probability


def exact_delta(eps0: float, d0: float, k: int, eps: float) -> mpmath.mpf:
    with mpmath.workdps(60):
        e0, d, e = mpmath.mpf(eps0), mpmath.mpf(d0), mpmath.mpf(eps)
        # 1 - (1 - d)^k loses everything to cancellation at 60 digits when d is tiny
        keep = mpmath.exp(k * mpmath.log1p(-d))
        p = mpmath.e**e0 / (1 + mpmath.e**e0)
        total = -mpmath.expm1(k * mpmath.log1p(-d))
        for i in range(k + 1):
            loss = (k - 2 * i) * e0
            if loss > e:
                total += keep * mpmath.binomial(k, i) * p ** (k - i) * (1 - p) ** i * (
                    1 - mpmath.e ** (e - loss)
                )
        return total


@pytest.mark.parametrize("d0", [1e-6, 1e-12, 1e-14, 1e-17, 1e-100, 1e-300])
def test_reported_two_fold_delta_above_the_pure_part(d0):
    # eps = 3 is above the pure part (2 eps0 = 2): delta is exactly the infinite mass
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.ApproximateDP(1.0, d0), 2)
    bounds = pld.delta_bounds(3.0)
    exact = exact_delta(1.0, d0, 2, 3.0)
    assert bounds.lower <= exact <= bounds.upper
    assert bounds.upper <= exact * (1 + 1e-12)  # and tight


@pytest.mark.parametrize("d0", [1e-14, 1e-17, 1e-300])
def test_epsilon_is_infinite_below_the_infinite_mass(d0):
    # delta = 1e-300 < 1 - (1 - d0)^2: no finite epsilon holds (the truth is +inf)
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.ApproximateDP(1.0, d0), 2)
    delta = min(1e-300, d0 / 2)
    assert pld.epsilon(delta) == math.inf


def test_many_compositions_of_a_tiny_delta():
    k, d0 = 1000, 1e-17
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.ApproximateDP(0.01, d0), k)
    bounds = pld.delta_bounds(20.0)  # above the pure part k * eps0 = 10
    exact = exact_delta(0.01, d0, k, 20.0)
    assert bounds.lower <= exact <= bounds.upper
    assert float(exact) == pytest.approx(1e-14, rel=1e-6)


def test_a_tiny_delta_composed_with_a_gaussian_is_never_lost():
    d0 = 1e-15
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma=1.0)).compose(
        plda.PrivacyLossDistribution.from_mechanism(plda.ApproximateDP(1.0, d0), 2)
    )
    infinite_mass = exact_delta(1.0, d0, 2, 1e9)  # at a huge epsilon only the +inf mass counts
    assert pld.delta(60.0) >= infinite_mass
    assert pld.epsilon(1e-300) == math.inf


def test_the_accountant_keeps_a_tiny_delta():
    accountant = plda.PLDAccountant()
    accountant.compose(plda.ApproximateDP(1.0, 1e-15), count=2)
    exact = exact_delta(1.0, 1e-15, 2, 3.0)
    bounds = accountant.delta_bounds(3.0)
    assert bounds.lower <= exact <= bounds.upper


@given(
    masses=st.lists(
        st.tuples(
            st.floats(min_value=1e-300, max_value=0.5), st.integers(min_value=1, max_value=10**9)
        ),
        min_size=1,
        max_size=4,
    )
)
@example(masses=[(1e-17, 2)])
@example(masses=[(1e-300, 10**9)])
@examples(60)
def test_union_probability_is_rounded_outward(masses):
    with mpmath.workdps(60):
        exact = -mpmath.expm1(mpmath.fsum(k * mpmath.log1p(-mpmath.mpf(m)) for m, k in masses))
    assert union_probability(masses, upper=False) <= exact <= union_probability(masses, upper=True)


@given(
    log_d0=st.floats(min_value=-300, max_value=math.log10(0.5)),
    eps0=st.floats(min_value=0.0, max_value=5.0),
    k=st.integers(min_value=1, max_value=40),
    eps=st.floats(min_value=0.0, max_value=50.0),
)
@example(log_d0=-12.0, eps0=1.0, k=2, eps=3.0)
@example(log_d0=-14.0, eps0=1.0, k=2, eps=3.0)
@example(log_d0=-17.0, eps0=1.0, k=2, eps=3.0)
@example(log_d0=-1.0, eps0=2.7197157556414662e-185, k=1, eps=0.0)  # spread underflowed
@examples(25)
def test_approximate_dp_compositions_bracket_the_exact_delta(log_d0, eps0, k, eps):
    d0 = 10.0**log_d0
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.ApproximateDP(eps0, d0), k)
    bounds = pld.delta_bounds(eps)
    exact = exact_delta(eps0, d0, k, eps)
    assert bounds.lower <= exact <= bounds.upper
