"""plda.testing references at the ends of their range, against independent mpmath values.

Every counterexample an audit found is kept: an OverflowError past epsilon ~709.78 (e^eps
overflowed in the sampled-Gaussian forms), ``inf`` for an epsilon above 1e12 (the float solve
gave up there), ``inf`` a few ulps above the mass at infinity of a composition (the float error
bound of delta is a few ulps of it, so no finite epsilon was ever certified) and a loose epsilon
for a subnormal delta (below the float error floor).
"""

from __future__ import annotations

import math

import mpmath
import pytest

from plda.testing import (
    approximate_dp_composition_epsilon,
    gaussian_delta,
    gaussian_epsilon,
    poisson_gaussian_delta,
    poisson_gaussian_epsilon,
)

mp = mpmath.mp
DPS = 60


# ------------------------------------------------ independent mpmath computations
def gaussian_exact(eps, mu):
    """``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (Balle & Wang 2018), directly."""
    eps, mu = mpmath.mpf(eps), mpmath.mpf(mu)
    return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


def poisson_remove_exact(eps, sigma, q):
    """``P = (1-q) N(0, s^2) + q N(1, s^2)`` against ``Q = N(0, s^2)``: ``P(x > c) - e^eps
    Q(x > c)`` at the cut ``c`` where the densities' ratio is ``e^eps``."""
    eps, s, q = mpmath.mpf(eps), mpmath.mpf(sigma), mpmath.mpf(q)
    cut = s**2 * mp.log((mp.exp(eps) - 1 + q) / q) + mpmath.mpf(1) / 2
    return (1 - q) * mp.ncdf(-cut / s) + q * mp.ncdf(-(cut - 1) / s) - mp.exp(eps) * mp.ncdf(
        -cut / s)


def kov_exact(eps, e0, d0, k):
    """Kairouz, Oh & Viswanath 2015, Thm. 3.3, term by term."""
    eps, e0, d0 = mpmath.mpf(eps), mpmath.mpf(e0), mpmath.mpf(d0)
    total = mp.fsum(
        mp.binomial(k, i) * max(0, mp.exp((k - i) * e0) - mp.exp(eps + i * e0))
        for i in range(k + 1)
    ) / (1 + mp.exp(e0)) ** k
    return 1 - (1 - d0) ** k + (1 - d0) ** k * total


def solve(delta_of, target, lo, hi, steps=200):
    """Smallest ``eps`` in ``[lo, hi]`` with ``delta_of(eps) <= target`` (delta decreasing)."""
    lo, hi, target = mpmath.mpf(lo), mpmath.mpf(hi), mpmath.mpf(target)
    for _ in range(steps):
        mid = (lo + hi) / 2
        if delta_of(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi


def assert_outward(got, exact, rtol=1e-13):
    """A float epsilon: an upper bound on the exact one, and within ``rtol`` of it."""
    assert math.isfinite(got), got
    assert mpmath.mpf(got) >= exact * (1 - mpmath.mpf(10) ** -40), (got, exact)
    assert abs(mpmath.mpf(got) - exact) <= rtol * exact, (got, mpmath.nstr(exact, 20))


# --------------------------------------------- the sampled Gaussian past e^eps overflow
@pytest.mark.parametrize("eps", [709.0, 710.0, 800.0, 1e4, 1e300])
@pytest.mark.parametrize("direction", ["max", "remove", "add"])
def test_poisson_gaussian_delta_takes_any_epsilon(eps, direction):
    # 710 raised OverflowError (math.expm1(710)); at 709 it returned 0.0
    got = poisson_gaussian_delta(eps, 1.0, 0.5, direction=direction)
    assert got == 0.0  # exactly: Phi(-710) is below the float range


@pytest.mark.parametrize("eps", [705.0, 710.0, 750.0, 1000.0])
def test_poisson_gaussian_delta_beyond_709_matches_mpmath(eps):
    sigma, q = 0.02, 0.5  # small noise: delta is far from 0 at these epsilons
    with mp.workdps(DPS):
        exact = poisson_remove_exact(eps, sigma, q)
        assert exact > 1e-3
        for direction in ("remove", "max"):
            got = poisson_gaussian_delta(eps, sigma, q, direction=direction)
            assert abs(got - exact) <= 1e-12 * exact, (direction, got, exact)


@pytest.mark.parametrize("eps", [705.0, 710.0, 750.0, 5000.0])
def test_add_direction_at_sample_rate_one_is_the_gaussian_beyond_709(eps):
    # the add form multiplies by e^eps: OverflowError from 709.78 on
    sigma = 0.01
    with mp.workdps(DPS):
        exact = gaussian_exact(eps, 1 / mpmath.mpf(sigma))
        got = poisson_gaussian_delta(eps, sigma, 1.0, direction="add")
        assert abs(got - exact) <= 1e-12 * exact + 1e-300, (got, exact)


@pytest.mark.parametrize(("sigma", "q"), [(0.03, 0.5), (0.05, 0.5), (0.025, 0.9)])
def test_poisson_gaussian_epsilon_beyond_709_matches_mpmath(sigma, q):
    # (0.03, 0.5) raised OverflowError; the exact epsilon there is 690.8356 (its float solve
    # doubles past 709.78 before bisecting)
    target = 1e-5
    with mp.workdps(DPS):
        exact = solve(lambda e: poisson_remove_exact(e, sigma, q), target, 0, 5000)
        assert_outward(poisson_gaussian_epsilon(target, sigma, q), exact)
        assert_outward(poisson_gaussian_epsilon(target, sigma, q, direction="remove"), exact)


def test_poisson_gaussian_epsilon_at_sample_rate_one_beyond_709():
    target, sigma = 1e-5, 0.03
    with mp.workdps(DPS):
        exact = solve(lambda e: gaussian_exact(e, 1 / mpmath.mpf(sigma)), target, 0, 5000)
    assert exact > 690
    for direction in ("add", "remove", "max"):
        assert_outward(poisson_gaussian_epsilon(target, sigma, 1.0, direction=direction), exact)


# ------------------------------------------------------------ mu-GDP at a huge mu
@pytest.mark.parametrize("mu", [1e5, 2e6, 1e7, 1e9])
def test_gaussian_epsilon_above_1e12_is_finite_and_exact(mu):
    # mu = 1e7 returned inf (exact 5.0000043e13): the float solve stopped doubling at 1e12
    target = 1e-5
    with mp.workdps(DPS):
        m = mpmath.mpf(mu)
        exact = solve(lambda e: gaussian_exact(e, m), target, m**2 / 2, m**2 / 2 + 10 * m)
        assert_outward(gaussian_epsilon(target, mu), exact)
        got = gaussian_epsilon(target, mu)
        assert gaussian_exact(got, m) <= target


# ------------------------------------- composition a few ulps above the mass at infinity
@pytest.mark.parametrize(("e0", "d0", "k"), [(0.01, 0.01, 200), (0.05, 0.1, 60)])
@pytest.mark.parametrize("ulps", [-1, 0, 1, 2, 3, 8])
def test_composition_epsilon_is_inf_only_at_or_below_the_mass(e0, d0, k, ulps):
    # one ulp above 1 - (1 - d0)^k (0.01, 0.01, 200) and three above (0.05, 0.1, 60) returned
    # inf, although the docs promise inf only for delta <= the mass (exact 1.0345 and 2.4985)
    with mp.workdps(DPS):
        mass = 1 - (1 - mpmath.mpf(d0)) ** k
        target = float(mass)
        for _ in range(abs(ulps)):
            target = math.nextafter(target, math.copysign(1.0, ulps))
        got = approximate_dp_composition_epsilon(target, step_epsilon=e0, step_delta=d0,
                                                 count=k)
        if mpmath.mpf(target) <= mass:
            assert got == math.inf
            return
        # the exact epsilon is in [got (1 - 1e-12), got]: certified at got, exceeded below
        assert math.isfinite(got) and got < k * e0
        assert kov_exact(got, e0, d0, k) <= target
        assert kov_exact(got * (1 - 1e-12), e0, d0, k) > target


def test_the_audited_composition_values():
    with mp.workdps(DPS):
        got = approximate_dp_composition_epsilon(0.8660203251420382, step_epsilon=0.01,
                                                 step_delta=0.01, count=200)
        assert abs(got - 1.034508446357172) <= 1e-12
        got = approximate_dp_composition_epsilon(0.9982029897000859, step_epsilon=0.05,
                                                 step_delta=0.1, count=60)
        assert abs(got - 2.4984535664060847) <= 1e-9


# ------------------------------------------------------------------ subnormal delta
@pytest.mark.parametrize("target", [5e-324, 1e-320, 1e-310, 2e-308])
def test_subnormal_delta_gives_a_tight_epsilon(target):
    # below the float delta's error floor the float solve certified only far out: 1e-320 came
    # out 2.5e-6 relative too large for 1-GDP (the sampled Gaussian likewise)
    with mp.workdps(DPS):
        exact = solve(lambda e: gaussian_exact(e, 1), target, 0, 100)
        assert_outward(gaussian_epsilon(target, 1.0), exact)
        precise = gaussian_epsilon(target, 1.0, precise=True, dps=20)
        assert precise >= exact and abs(precise - exact) <= 1e-18 * exact
        exact = solve(lambda e: poisson_remove_exact(e, 1.0, 0.1), target, 0, 100)
        assert_outward(poisson_gaussian_epsilon(target, 1.0, 0.1), exact)


@pytest.mark.parametrize(("mu", "eps", "rtol"), [
    (100.0, 750.0, 1e-12), (1e3, 5e5, 1e-12),
    # eps / mu = 5e6 is rounded in float: the relative error of delta, d log(delta)/da times
    # u eps / mu = 4.6 x 5.5e-10, is 2.5e-9 at most (inside the bound the solver uses)
    (1e7, 5.0000042648906984e13, 3e-9),
])
def test_large_epsilon_deltas_agree_with_mpmath(mu, eps, rtol):
    with mp.workdps(DPS):
        exact = gaussian_exact(eps, mu)
        assert abs(gaussian_delta(eps, mu) - exact) <= rtol * exact, (mu, eps, exact)
