"""Certified bounds at large epsilon (issue 12, item 3) and outward-rounded closed forms.

``e^eps`` overflows a double past 709.78 and ``e^-l`` underflows past 745: the profile is solved in
a frame shifted to each cut, and cells whose Q-mass underflowed are not read as exact. References:
the k-fold Gaussian's privacy loss is exactly ``N(mu^2/2, mu^2)`` with ``mu = sqrt(k)/sigma``, so
``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``, evaluated in mpmath.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import mpmath
import numpy as np
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
        if gaussian_delta(mu, 0) <= delta:
            return mpmath.mpf(0)
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
    exact = testing.discrete_laplace_composition_delta(eps, parameter=2.0, count=1000, precise=True)
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
@example(sigma=4.0, count=1, log_delta=-1.0)  # exact epsilon 0 (the reference said 3e-59)
@examples(15)
def test_gaussian_epsilon_bounds_bracket_the_exact_value(sigma, count, log_delta):
    delta = 10.0**log_delta
    mu = math.sqrt(count) / sigma
    reference = gaussian_epsilon(mu, delta)
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma), count)
    bounds = pld.epsilon_bounds(delta)
    assert bounds.lower <= reference <= bounds.upper


@given(
    sigma=st.floats(min_value=0.05, max_value=20.0),
    count=st.integers(min_value=1, max_value=10**6),
    log_delta=st.floats(min_value=-300.0, max_value=-12.0),
)
@example(sigma=1.0, count=10**5, log_delta=-300.0)
@examples(8)
@pytest.mark.filterwarnings("ignore::plda.AccuracyWarning")  # wide there, and says so
def test_gaussian_epsilon_bounds_bracket_tiny_deltas(sigma, count, log_delta):
    # deltas far below the FFT's resolution: tilted compositions and the Chernoff tail
    delta = 10.0**log_delta
    reference = gaussian_epsilon(math.sqrt(count) / sigma, delta)
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma), count)
    bounds = pld.epsilon_bounds(delta)
    assert 0 <= bounds.lower <= reference <= bounds.upper < math.inf


@given(
    sigma=st.floats(min_value=0.05, max_value=20.0),
    count=st.integers(min_value=1, max_value=10**6),
    where=st.one_of(
        st.floats(min_value=-3.0, max_value=40.0).map(lambda z: ("z", z)),
        st.floats(min_value=0.0, max_value=5.0).map(lambda x: ("log10", x)),
    ),
)
# the far-tail Chernoff bound read its cut tail (1e-320) as 0: upper 5e-324, exact 2e-322
@example(sigma=8.472702315602351, count=252, where=("log10", math.log10(73.49770275843325)))
@example(sigma=0.1351853973028406, count=79, where=("log10", math.log10(4680.395480254667)))
@examples(12)
def test_gaussian_delta_bounds_bracket_the_exact_value(sigma, count, where):
    # eps around the mean loss mu^2/2 (z standard deviations away) or anywhere up to 1e5
    mu = math.sqrt(count) / sigma
    kind, x = where
    eps = max(0.0, mu * mu / 2 + x * mu) if kind == "z" else 10.0**x
    with mpmath.workdps(60):
        reference = gaussian_delta(mpmath.sqrt(count) / mpmath.mpf(sigma), eps)
    bounds = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma), count).delta_bounds(
        eps
    )
    assert 0 <= bounds.lower <= reference <= bounds.upper <= 1


def laplace_composition_delta(scale: float, count: int, eps: float) -> mpmath.mpf:
    """Exact ``delta(eps)`` of ``count`` Laplace runs (sensitivity 1) for
    ``eps >= (count - 2) eps0``, ``eps0 = 1/scale`` (the float scale taken exactly).

    One run's loss is ``eps0 - Y`` with ``Y = 0`` w.p. 1/2, density ``e^(-y/2)/4`` on
    ``(0, 2 eps0)`` and an atom at ``2 eps0``. Below ``y0 = count eps0 - eps <= 2 eps0`` no
    run reaches that atom or the density's end, so with ``j`` runs in the density their sum
    has density ``4^-j y^(j-1) e^(-y/2) / (j-1)!`` there, and
    ``delta = E[(1 - e^(Y - y0))_+] = sum_j C(k, j) 2^(j-k) 4^-j int_0^y0 ...``."""
    with mpmath.workdps(40):
        eps0 = 1 / mpmath.mpf(scale)
        y0 = count * eps0 - mpmath.mpf(eps)
        assert y0 <= 2 * eps0
        if y0 <= 0:
            return mpmath.mpf(0)
        total = mpmath.mpf(2) ** -count * -mpmath.expm1(-y0)
        for j in range(1, count + 1):

            def integrand(y, j=j):
                return y ** (j - 1) / mpmath.factorial(j - 1) * mpmath.exp(-y / 2) * -mpmath.expm1(
                    y - y0
                )

            weight = mpmath.binomial(count, j) * mpmath.mpf(2) ** (j - count) * mpmath.mpf(4) ** -j
            total += weight * mpmath.quad(integrand, [0, y0 / 2, y0])
        return total


@pytest.mark.parametrize(
    ("scale", "count", "eps"),
    [
        (0.01, 10, 970.0),
        # eps 3.4e-11 below the top loss: the tilted upper law claimed delta 8e-38 (exact 3.3e-14)
        (0.029783072817777166, 10, 335.76119096851943),
        (0.1446244428922091, 16, 110.63118568203237),
        # the top loss is 1000 - 2e-14 (0.005 is not a double): exact 0, the lower bound was 1.2e-15
        (0.005, 5, 1000.0),
    ],
)
def test_laplace_composition_near_its_top_loss(scale, count, eps):
    exact = laplace_composition_delta(scale, count, eps)
    bounds = plda.PrivacyLossDistribution.from_mechanism(plda.Laplace(scale), count).delta_bounds(
        eps
    )
    assert bounds.lower <= exact <= bounds.upper


@given(
    scale=st.floats(min_value=0.0015, max_value=1.0),
    count=st.integers(min_value=1, max_value=12),
    depth=st.floats(min_value=0.0, max_value=0.999),  # the reference holds up to depth 1
)
@example(scale=1.0, count=1, depth=0.999)
@examples(5)
def test_laplace_composition_below_its_top_loss(scale, count, depth):
    # eps between the top loss count/scale and two steps' worth below it, cubed toward the top
    eps = max(0.0, count / scale - 2 * depth**3 / scale)
    exact = laplace_composition_delta(scale, count, eps)
    bounds = plda.PrivacyLossDistribution.from_mechanism(plda.Laplace(scale), count).delta_bounds(
        eps
    )
    assert bounds.lower <= exact <= bounds.upper


@given(scale=st.floats(min_value=0.0015, max_value=1.0))
@example(scale=0.00758384796150766)  # 1/scale rounds down: upper delta(1/scale) was 0, exact 6e-16
@example(scale=0.0023890263495783093)
@examples(10)
def test_one_laplace_at_its_rounded_pure_epsilon(scale):
    eps = 1 / scale  # within an ulp of the top loss, on either side
    with mpmath.workdps(50):
        gap = mpmath.mpf(eps) - 1 / mpmath.mpf(scale)
        exact = -mpmath.expm1(gap / 2) if gap < 0 else mpmath.mpf(0)
    bounds = plda.PrivacyLossDistribution.from_mechanism(plda.Laplace(scale)).delta_bounds(eps)
    assert bounds.lower <= exact <= bounds.upper


@pytest.mark.parametrize(
    ("parameter", "count", "eps"),
    [
        # 6e-12 below the top loss 57.53: the upper bound was 0 against an exact 2.4e-31
        (0.5752761240543938, 100, 57.52761240543362),
        (2.399478015369556, 164, 393.51439452056786),
    ],
)
def test_discrete_laplace_just_below_its_top_loss(parameter, count, eps):
    exact = testing.discrete_laplace_composition_delta(eps, parameter=parameter, count=count,
                                                       precise=True)
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.DiscreteLaplace(parameter), count)
    bounds = pld.delta_bounds(eps)
    assert bounds.lower <= exact <= bounds.upper


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
        summary = pld.gdp_summary()
        assert mpmath.mpf(summary.mu_lower) <= exact <= mpmath.mpf(pld.gdp_mu())
        rho = pld.zcdp_bounds()
        assert mpmath.mpf(rho.lower) <= exact**2 / 2 <= mpmath.mpf(rho.upper)
        assert rho.upper == pld.zcdp()


def test_the_accountant_at_large_epsilon():
    accountant = plda.PLDAccountant()
    accountant.compose(plda.Gaussian(1.0), count=1200)
    reference = gaussian_epsilon(math.sqrt(1200), 1e-5)
    bounds = accountant.epsilon_bounds(1e-5)
    assert bounds.lower <= reference <= bounds.upper
    assert accountant.epsilon(1e-5) == bounds.upper


# ------------------------------------------------------------- the largest epsilons and inf
@pytest.mark.parametrize("eps", [1e300, 9e307, 1e308, 1.7976931348623157e308, math.inf])
@pytest.mark.parametrize("delta,count", [(1e-6, 1), (1e-6, 10), (0.5, 3), (0.0, 1)])
def test_delta_at_the_largest_epsilons_is_the_mass_at_infinity(eps, delta, count):
    """Past every finite loss ``delta(eps)`` is the mass at infinity, ``1 - (1 - delta)^k`` for
    ``k`` runs of ``(1, delta)``-DP. Past eps = 9e307, ``2 |eps|`` in the rounding slack
    overflowed: the slack was inf, the pessimistic law was read at eps = -inf and the upper
    bound was 1.0 (for 1e-6), with numpy's overflow RuntimeWarning leaking."""
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.ApproximateDP(1.0, delta))
    pld = pld.self_compose(count) if count > 1 else pld
    with mpmath.workdps(50):
        exact = float(1 - (1 - mpmath.mpf(delta)) ** count)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        bounds = pld.delta_bounds(eps)
        value = pld.delta(eps)
    assert bounds.lower <= exact <= bounds.upper <= exact * (1 + 1e-12) + 1e-300
    assert value == bounds.upper


@pytest.mark.parametrize("eps", [1e300, 1e308, 1.7976931348623157e308, math.inf])
def test_gaussian_delta_at_the_largest_epsilons(eps):
    """A Gaussian has no mass at infinity and delta(eps) > 0 at every finite eps (below the
    smallest double here): the upper bound is tiny, not 1.0 (it was past 9e307)."""
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(1.0)).self_compose(100)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        bounds = pld.delta_bounds(eps)
    assert bounds.lower == 0.0 and 0.0 <= bounds.upper < 1e-300
    assert bounds.upper <= pld.delta_bounds(1e3).upper  # delta never increases in eps


def test_a_nan_moment_says_nothing_in_the_chernoff_bound():
    """An order whose moment is NaN gives no Chernoff bound: it was read as a bound of 0 (NaN >
    -inf is False), so a pessimistic law's delta fell to its mass at infinity wherever the
    profile itself said more (0.001 for 0.115 at eps = 0)."""
    from plda._internal.chernoff import CHERNOFF_ORDERS
    from plda.grid.discrete import DiscreteLoss

    probs = np.array([0.25, 0.25, 0.5])
    eps = np.array([0.0, 0.05, 0.15, 1e308, np.inf])
    mass = dict(infinity_mass=1e-3, chernoff_infinity_mass=1e-3)
    plain = DiscreteLoss(step=0.1, offset=0, probs=probs, **mass)
    for broken in (np.full(len(CHERNOFF_ORDERS), np.nan),
                   np.where(np.arange(len(CHERNOFF_ORDERS)) % 2, np.nan, np.inf)):
        law = DiscreteLoss(step=0.1, offset=0, probs=probs, log_mgf=broken, **mass)
        value = law.delta(eps)
        np.testing.assert_array_equal(value[:3], plain.delta(eps[:3]))
        # past the last loss, and at inf: the mass at infinity
        assert np.all((value[3:] >= 1e-3) & (value[3:] <= 1e-3 * (1 + 1e-12)))


@pytest.mark.parametrize("epsilon", [708.0, 708.5, 709.0, 709.7])
@pytest.mark.parametrize("kind", ["approximate", "profile"])
def test_epsilon_at_exactly_the_floor_delta_is_finite(epsilon, kind):
    # delta(epsilon0) = delta0 exactly, so epsilon(delta0) = epsilon0. Past epsilon 708.4 the
    # atom at -epsilon0 has a subnormal P-mass, which the pessimistic version moved to +inf:
    # 1.00000002e-300 there, so no epsilon reached delta 1e-300 and the upper bound was inf.
    # It now goes up to the top grid point (still pessimistic: its loss only rises)
    mechanism = (plda.ApproximateDP(epsilon, 1e-300) if kind == "approximate"
                 else plda.PrivacyProfile((epsilon,), (1e-300,)))
    bounds = plda.PrivacyLossDistribution.from_mechanism(mechanism).epsilon_bounds(1e-300)
    assert bounds.lower <= epsilon <= bounds.upper <= epsilon * (1 + 1e-3)
