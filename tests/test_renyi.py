"""Rényi DP, zCDP and the RDP -> (epsilon, delta) conversion against closed forms and exact
(mpmath) sums and integrals."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis_settings import examples
from scipy.optimize import minimize_scalar

import plda
from plda.conversions import renyi
from plda.conversions.per_step import step_cumulant

P = plda.PrivacyLossDistribution.from_mechanism
ORDERS = np.array([1.001, 1.1, 1.5, 2.0, 3.0, 7.5, 20.0, 64.0, 256.0])


def assert_brackets(bounds, exact, rtol=1e-12):
    lower, upper = (np.asarray(b) for b in bounds)
    exact = np.asarray(exact, dtype=float)
    assert np.all(lower <= exact * (1 + rtol)), (lower, exact)
    assert np.all(exact <= upper * (1 + rtol)), (exact, upper)


# ---------------------------------------------------------------- exact refs
def sampled_gaussian_integer(alpha: int, sigma: float, q: float) -> float:
    """Mironov, Talwar & Zhang 2019: remove-direction ``D_alpha`` of one Poisson-sampled
    Gaussian step at integer ``alpha``,
    ``log sum_j C(a, j) (1-q)^(a-j) q^j e^{j(j-1)/(2 s^2)} / (a - 1)`` (the larger direction)."""
    mpmath.mp.dps = 60
    q, s = mpmath.mpf(q), mpmath.mpf(sigma)
    total = mpmath.fsum(
        mpmath.binomial(alpha, j) * (1 - q) ** (alpha - j) * q**j
        * mpmath.exp(j * (j - 1) / (2 * s * s))
        for j in range(alpha + 1)
    )
    return float(mpmath.log(total) / (alpha - 1))


def sampled_gaussian_integral(alpha: float, sigma: float, q: float, direction: str) -> float:
    """Any real order, either direction, by mpmath quadrature over the base noise."""
    mpmath.mp.dps = 30
    mu, q, a = 1 / mpmath.mpf(sigma), mpmath.mpf(q), mpmath.mpf(alpha)

    def ratio(x):  # mixture / Q0
        return 1 - q + q * mpmath.exp(mu * x - mu * mu / 2)

    power = a if direction == "remove" else 1 - a
    pieces = [-mpmath.inf, 0, 5, 15, mpmath.inf]
    value = mpmath.quad(lambda x: mpmath.npdf(x) * ratio(x) ** power, pieces)
    return float(mpmath.log(value) / (a - 1))


# ------------------------------------------------------------- closed forms
def test_gaussian_composition():
    pld = P(plda.Gaussian(2.0)).self_compose(7).compose(P(plda.Gaussian(0.5), 2))
    exact = ORDERS * (7 / 4 + 2 * 4) / 2
    bounds = pld.renyi_bounds(ORDERS)
    assert_brackets(bounds, exact)
    np.testing.assert_allclose(bounds.upper, exact, rtol=1e-12)
    np.testing.assert_array_equal(pld.renyi(ORDERS), bounds.upper)
    assert isinstance(pld.renyi(2.0), float)


@pytest.mark.parametrize("sigma,q", [(1.1, 256 / 60000), (0.8, 0.05), (2.0, 0.3), (5.0, 0.001)])
@pytest.mark.parametrize("alpha", [2, 3, 8, 32, 256])
def test_sampled_gaussian_integer_orders(sigma, q, alpha):
    count = 1000
    pld = P(plda.PoissonSampled(plda.Gaussian(sigma), q)).self_compose(count)
    exact = count * sampled_gaussian_integer(alpha, sigma, q)
    bounds = pld.renyi_bounds(float(alpha))
    assert_brackets(bounds, exact)
    assert bounds.upper - bounds.lower <= 2e-3 * bounds.upper


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [1.05, 1.7, 4.5, 12.3])
@pytest.mark.parametrize("direction", ["remove", "add"])
def test_sampled_gaussian_fractional_orders_each_direction(alpha, direction):
    sigma, q = 1.0, 0.02
    exact = sampled_gaussian_integral(alpha, sigma, q, direction)
    step = step_cumulant(plda.PoissonSampled(plda.Gaussian(sigma), q), direction, np.array([alpha]))
    lower, upper = step.lower[0] / (alpha - 1), step.upper[0] / (alpha - 1)
    assert lower <= exact * (1 + 1e-9) and exact <= upper * (1 + 1e-9)
    # the add direction (the smaller one) is computed on coarser cells
    assert upper - lower <= (1e-3 if direction == "remove" else 5e-3) * upper


def test_laplace_closed_form():
    t = 0.7
    pld = P(plda.Laplace(scale=1 / t), 3)
    mpmath.mp.dps = 40
    exact = [
        3 * float(mpmath.log(a / (2 * a - 1) * mpmath.exp((a - 1) * t)
                             + (a - 1) / (2 * a - 1) * mpmath.exp(-a * t)) / (a - 1))
        for a in map(mpmath.mpf, ORDERS)
    ]
    assert_brackets(pld.renyi_bounds(ORDERS), exact)


def exact_discrete(log_p, log_q, alpha):
    """``log sum P^a Q^(1-a) / (a - 1)`` over a finite support (mpmath)."""
    mpmath.mp.dps = 40
    a = mpmath.mpf(alpha)
    total = mpmath.fsum(
        mpmath.exp(a * lp + (1 - a) * lq) for lp, lq in zip(log_p, log_q, strict=True)
    )
    return float(mpmath.log(total) / (a - 1))


@pytest.mark.parametrize("sigma", [0.6, 1.3, 4.0])
def test_discrete_gaussian(sigma):
    mpmath.mp.dps = 40
    xs = range(-int(60 * sigma) - 5, int(60 * sigma) + 6)
    log_z = mpmath.log(mpmath.fsum(mpmath.exp(-mpmath.mpf(x) ** 2 / (2 * sigma**2)) for x in xs))
    log_p = [-mpmath.mpf(x) ** 2 / (2 * sigma**2) - log_z for x in xs]
    log_q = [-mpmath.mpf(x - 1) ** 2 / (2 * sigma**2) - log_z for x in xs]
    orders = ORDERS[:7]
    exact = [exact_discrete(log_p, log_q, a) for a in orders]
    assert_brackets(P(plda.DiscreteGaussian(sigma)).renyi_bounds(orders), exact)


def test_discrete_laplace_and_randomized_response():
    t = 0.5
    xs = range(-300, 301)
    mpmath.mp.dps = 40
    log_z = mpmath.log(mpmath.fsum(mpmath.exp(-t * abs(x)) for x in xs))
    log_p = [-t * abs(x) - log_z for x in xs]
    log_q = [-t * abs(x - 1) - log_z for x in xs]
    orders = ORDERS[:7]
    exact = [exact_discrete(log_p, log_q, a) for a in orders]
    assert_brackets(P(plda.DiscreteLaplace(t)).renyi_bounds(orders), exact)
    e = mpmath.mpf(1.2)
    p = mpmath.exp(e) / (1 + mpmath.exp(e))
    log_p, log_q = [mpmath.log(p), mpmath.log(1 - p)], [mpmath.log(1 - p), mpmath.log(p)]
    exact = [exact_discrete(log_p, log_q, a) for a in orders]
    assert_brackets(P(plda.ApproximateDP(1.2)).renyi_bounds(orders), exact)


def test_mass_at_infinity_is_infinite():
    bounds = P(plda.ApproximateDP(1.0, 1e-6)).compose(P(plda.Gaussian(1.0))).renyi_bounds(ORDERS)
    assert np.all(np.isinf(bounds.lower)) and np.all(np.isinf(bounds.upper))
    assert P(plda.ApproximateDP(1.0, 1e-6)).zcdp() == math.inf


def test_sampled_laplace_generic_path():
    """No closed form: per-step grid laws; checked against mpmath quadrature, worse direction."""
    b, q = 0.5, 0.1
    mpmath.mp.dps = 30

    def lap(x, m):
        return mpmath.exp(-abs(x - m) / b) / (2 * b)

    def divergence(a, direction):
        mix = lambda x: q * lap(x, 1) + (1 - q) * lap(x, 0)  # noqa: E731
        if direction == "remove":
            f = lambda x: mix(x) ** a * lap(x, 0) ** (1 - a)  # noqa: E731
        else:
            f = lambda x: lap(x, 0) ** a * mix(x) ** (1 - a)  # noqa: E731
        return float(mpmath.log(mpmath.quad(f, [-mpmath.inf, 0, 1, mpmath.inf])) / (a - 1))

    orders = np.array([1.5, 2.0, 6.0, 30.0])
    exact = [4 * max(divergence(a, "remove"), divergence(a, "add")) for a in orders]
    bounds = P(plda.PoissonSampled(plda.Laplace(b), q), 4).renyi_bounds(orders)
    assert_brackets(bounds, exact)
    assert np.max((bounds.upper - bounds.lower) / bounds.upper) < 1e-2


def test_replace_one_doubles_the_sensitivity():
    pld = P(plda.Gaussian(2.0), relation="replace_one")
    np.testing.assert_allclose(pld.renyi(ORDERS), ORDERS * 4 / 8, rtol=1e-12)


@examples(30)
@given(st.floats(1.001, 500), st.floats(1.001, 500))
def test_monotone_in_the_order(a, b):
    """``eps_alpha`` does not decrease with ``alpha``: bounds at two orders are consistent."""
    pld = P(plda.PoissonSampled(plda.Gaussian(1.0), 0.05), 50)
    lo, hi = sorted((a, b))
    assert pld.renyi_bounds(lo).lower <= pld.renyi_bounds(hi).upper * (1 + 1e-12)


# --------------------------------------------------------------------- zCDP
def test_zcdp_of_gaussians_is_exact():
    pld = P(plda.Gaussian(2.0), 10)
    lower, upper = pld.zcdp_bounds()
    assert upper == pytest.approx(10 / 8, rel=1e-12) and lower <= upper
    assert pld.zcdp() == upper


def test_zcdp_of_sampled_gaussian_approaches_the_unsampled_one():
    pld = P(plda.PoissonSampled(plda.Gaussian(1.0), 0.01), 100)
    lower, upper = pld.zcdp_bounds()
    assert upper == pytest.approx(50.0, rel=1e-12)
    assert 0.99 * upper <= lower <= upper


def test_zcdp_of_laplace_brackets_the_supremum():
    t = 0.5
    pld = P(plda.Laplace(scale=1 / t))

    mpmath.mp.dps = 30

    def negative(a):
        a = mpmath.mpf(a)
        return -mpmath.log(a / (2 * a - 1) * mpmath.exp((a - 1) * t)
                           + (a - 1) / (2 * a - 1) * mpmath.exp(-a * t)) / ((a - 1) * a)

    grid = np.geomspace(1.0001, 200, 2000)
    start = grid[np.argmin([float(negative(a)) for a in grid])]
    best = float(-negative(mpmath.findroot(lambda a: mpmath.diff(negative, a), start)))
    lower, upper = pld.zcdp_bounds()
    assert lower <= best * (1 + 1e-9) and best <= upper
    assert upper <= t * t / 2 and upper <= 1.05 * best


# --------------------------------------------------------------- conversion
def test_gaussian_conversion_matches_the_continuous_optimum():
    rho = 0.5
    delta = 1e-6

    def eps(a):
        return a * rho + math.log1p(-1 / a) - (math.log(delta) + math.log(a)) / (a - 1)

    best = minimize_scalar(eps, bounds=(1.0001, 1e3), method="bounded", options={"xatol": 1e-10})
    pld = P(plda.Gaussian(1.0))
    value = pld.renyi_epsilon(delta)
    assert best.fun <= value <= best.fun * (1 + 1e-6)
    delta_back = pld.renyi_delta(value)
    assert delta_back <= delta * (1 + 1e-6)


def test_rdp_never_beats_the_pld():
    pld = P(plda.PoissonSampled(plda.Gaussian(1.0), 0.01), 1000)
    deltas = np.array([1e-3, 1e-5, 1e-8])
    rdp = pld.renyi_epsilon(deltas)
    assert np.all(rdp >= pld.epsilon_bounds(deltas).lower)
    assert np.all(rdp <= 1.5 * pld.epsilon(deltas))


def test_conversion_of_explicit_curves():
    orders = np.array([2.0, 4.0, 8.0])
    curve = np.array([0.1, 0.3, 0.9])
    value = renyi.epsilon_from_renyi(orders, curve, 1e-5)
    expected = min(
        e + math.log1p(-1 / a) - (math.log(1e-5) + math.log(a)) / (a - 1)
        for a, e in zip(orders, curve, strict=True)
    )
    assert value == pytest.approx(max(expected, 0.0), rel=1e-12)
    assert renyi.delta_from_renyi(orders, curve, value) == pytest.approx(1e-5, rel=1e-9)
    assert renyi.epsilon_from_renyi(orders, curve, 1.0) == 0.0
    assert renyi.delta_from_renyi(orders, np.full(3, np.inf), 1.0) == 1.0


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("bad", [1.0, 0.5, -2.0, float("nan"), float("inf"), [2.0, 1.0]])
def test_order_outside_range(bad):
    pld = P(plda.Gaussian(1.0))
    with pytest.raises(ValueError, match="order"):
        pld.renyi(bad)
    with pytest.raises(ValueError, match="order"):
        pld.renyi_bounds(bad)


def test_other_bad_arguments():
    pld = P(plda.Gaussian(1.0))
    with pytest.raises(ValueError, match="delta"):
        pld.renyi_epsilon(1.5)
    with pytest.raises(ValueError, match="epsilon"):
        pld.renyi_delta(-1.0)
    with pytest.raises(ValueError, match="orders"):
        pld.renyi_epsilon(1e-5, orders=[0.5, 2.0])
    with pytest.raises(ValueError, match="curve_epsilons"):
        renyi.epsilon_from_renyi([2.0, 3.0], [0.1], 1e-5)


# ------------------------------------------------- non-tight steps (issue 14)
def max_shift_renyi(alpha: float, mu: float, steps: int) -> float:
    """Remove-direction ``D_alpha`` of the pair realized by a shuffled epoch's worst-case input,
    post-processed to the maximum coordinate: ``P = law of max_t X_t``, ``X ~ N(mu e_J, I)``,
    ``J`` uniform on ``steps`` coordinates, against ``Q = law of max_t X_t``, ``X ~ N(0, I)``,
    by mpmath quadrature of ``p^alpha q^(1 - alpha)``."""
    mpmath.mp.dps = 15
    a, mu, t = mpmath.mpf(alpha), mpmath.mpf(mu), steps

    def p(y):
        return mpmath.npdf(y - mu) * mpmath.ncdf(y) ** (t - 1) + (t - 1) * mpmath.ncdf(
            y - mu
        ) * mpmath.ncdf(y) ** (t - 2) * mpmath.npdf(y)

    def q(y):
        return t * mpmath.npdf(y) * mpmath.ncdf(y) ** (t - 1)

    pieces = [-mpmath.inf, -5, 0, 5, mpmath.inf]
    value = mpmath.quad(lambda y: p(y) ** a * q(y) ** (1 - a), pieces)
    return float(mpmath.log(value) / (a - 1))


def max_shift_pair_renyi(alpha: float, mu: float, steps: int) -> float:
    """``D_alpha`` of the larger direction of the pair realized by a shuffled epoch's input with
    the other records at ``-C``, post-processed to the maximum coordinate: one random
    coordinate shifted by ``2 mu`` (``P``) against ``mu`` (``Q``), by mpmath quadrature."""
    mpmath.mp.dps = 15
    a, mu, t = mpmath.mpf(alpha), mpmath.mpf(mu), steps

    def density(shift):
        return lambda y: (mpmath.npdf(y - shift) * mpmath.ncdf(y) ** (t - 1) + (t - 1)
                          * mpmath.ncdf(y - shift) * mpmath.ncdf(y) ** (t - 2) * mpmath.npdf(y))

    p, q = density(2 * mu), density(mu)
    pieces = [-mpmath.inf, -5, 0, 5, 10, mpmath.inf]

    def divergence(f, g):
        return float(mpmath.log(mpmath.quad(lambda y: f(y) ** a * g(y) ** (1 - a), pieces))
                     / (a - 1))

    return max(divergence(p, q), divergence(q, p))


@pytest.mark.slow
def allocation_renyi(alpha: int, mu: float, steps: int) -> float:
    """Remove-direction ``D_alpha`` of the random-allocation pair (the pair a shuffled epoch's
    worst-case input realizes when :class:`plda.RandomAllocation` supports it) at an integer
    order: the likelihood ratio is ``S / t`` with ``S`` a sum of ``t`` i.i.d. lognormals
    ``Y = e^(mu X - mu^2 / 2)``, ``E[Y^k] = e^(mu^2 k (k - 1) / 2)``, so ``E_Q[(S / t)^alpha]``
    is exact by convolving moment sequences (binomial sums), in mpmath."""
    mpmath.mp.dps = 40
    moments_y = [mpmath.e ** (mpmath.mpf(mu) ** 2 * k * (k - 1) / 2) for k in range(alpha + 1)]
    moments = [mpmath.mpf(1)] + [mpmath.mpf(0)] * alpha
    for _ in range(steps):
        moments = [
            mpmath.fsum(mpmath.binomial(n, k) * moments[k] * moments_y[n - k] for k in range(n + 1))
            for n in range(alpha + 1)
        ]
    return float(mpmath.log(moments[alpha] / mpmath.mpf(steps) ** alpha) / (alpha - 1))


@pytest.mark.filterwarnings("ignore::plda.NotTightWarning")
@pytest.mark.filterwarnings("ignore::plda.SamplerAssumptionWarning")
@pytest.mark.parametrize(
    "sigma, orders, other_reference",
    [
        # random allocation supports sigma = 1: the others-at-0 pair is its pair
        (1.0, [2, 4], allocation_renyi),
        # it refuses sigma = 0.5: the others-at-0 pair is its post-processing by the maximum
        (0.5, [1.5, 4.0], max_shift_renyi),
    ],
)
def test_a_shuffled_epoch_takes_its_lower_bound_from_the_realized_pair(sigma, orders,
                                                                       other_reference):
    epoch = plda.Shuffled(plda.Gaussian(sigma=sigma), num_steps=10)
    orders = np.array(orders, dtype=float)
    bounds = P(epoch).self_compose(3).renyi_bounds(orders)
    realized = P(epoch.lower_bound_mechanism()).self_compose(3).renyi_bounds(orders)
    # upper: no amplification, one run of the base Gaussian per epoch (alpha mu^2 / 2 each)
    np.testing.assert_allclose(bounds.upper, 3 * orders / (2 * sigma**2), rtol=1e-12)
    # lower: the realized pair's, not the dominating pair's (which is the upper bound itself)
    np.testing.assert_array_equal(bounds.lower, realized.lower)
    # ... a certified lower bound on the true value of that pair (the other records at -C, its
    # largest coordinate; the larger direction), and tight
    exact = np.array([3 * max_shift_pair_renyi(float(a), 1 / sigma, 10) for a in orders])
    assert np.all(bounds.lower <= exact * (1 + 1e-9))
    assert np.all(bounds.lower >= exact * (1 - 1e-3))
    # the other input's pair (others at 0) is certified against its own exact value, and lower
    other = P(epoch.lower_bound_mechanisms()[1]).self_compose(3).renyi_bounds(orders)
    exact_other = np.array([3 * other_reference(int(a) if a.is_integer() else a, 1 / sigma, 10)
                            for a in orders])
    assert np.all(other.lower <= exact_other * (1 + 1e-9))
    assert np.all(other.lower >= exact_other * (1 - 1e-3))
    assert np.all(other.lower < bounds.lower)
    # zCDP: the Gaussian's rho on top, the realized pair's below
    rho = P(epoch).zcdp_bounds()
    assert rho.upper == pytest.approx(0.5 / sigma**2, rel=1e-12) and 0 < rho.lower < rho.upper


@pytest.mark.filterwarnings("ignore::plda.NotTightWarning")
def test_non_tight_samplers_take_their_lower_bound_from_the_realized_pair():
    orders = np.array([2.0, 8.0])
    gauss = plda.Gaussian(1.0)
    truncated = plda.TruncatedPoisson(gauss, 256 / 60000, 300, 60000)
    assert not truncated.tight
    bounds = P(truncated, 100).renyi_bounds(orders)
    realized = P(truncated.lower_bound_mechanism(), 100).renyi_bounds(orders)
    np.testing.assert_array_equal(bounds.lower, realized.lower)
    # the realized pair is Poisson sampling at a lower rate: below the nominal rate's curve
    poisson = P(plda.PoissonSampled(gauss, 256 / 60000), 100).renyi_bounds(orders)
    assert np.all(bounds.lower < poisson.lower)
    # one step per epoch is tight: a shuffled epoch's bracket is then the base mechanism's
    single = P(plda.Shuffled(plda.Gaussian(2.0), num_steps=1)).renyi_bounds(orders)
    np.testing.assert_array_equal(single.lower, P(plda.Gaussian(2.0)).renyi_bounds(orders).lower)


def test_replace_one_sampled_gaussian_has_a_finite_certified_upper_bound():
    # P = (1-q) N(0,1) + q N(mu,1) against Q = (1-q) N(0,1) + q N(-mu,1): joint convexity
    # bounds it by the shifted pair's divergence, where the grid law alone gave +inf
    q, orders = 0.01, np.array([2.0, 5.0])
    step = plda.PoissonSampled(plda.Gaussian(1.0), q)
    bounds = P(step, relation="replace_one").renyi_bounds(orders)
    mpmath.mp.dps = 20
    mq = mpmath.mpf(q)

    def density(x, shift):
        return (1 - mq) * mpmath.npdf(x) + mq * mpmath.npdf(x - shift)

    for a, lower, upper in zip(orders, bounds.lower, bounds.upper, strict=True):
        pieces = [-mpmath.inf, 0, mpmath.inf]
        value = mpmath.quad(lambda x, a=a: density(x, 1) ** a * density(x, -1) ** (1 - a), pieces)
        exact = float(mpmath.log(value) / (a - 1))
        assert lower <= exact * (1 + 1e-9) and exact <= upper
        assert math.isfinite(upper)


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_a_sampled_gaussian_past_the_cells_reach_has_closed_form_bounds(direction):
    # sigma 0.025 (mu = 40): E[(R - 1)^2] = e^1600 - 1 overflowed (OverflowError from
    # renyi_bounds) and the cells, which stop at x = 36, miss the bulk of N(mu, 1)
    q, sigma = 0.5, 0.025
    bounds = step_cumulant(plda.PoissonSampled(plda.Gaussian(sigma), q), direction,
                           np.array([2.0, 3.0]))
    assert np.all(np.isfinite(bounds.upper)) and np.all(bounds.lower <= bounds.upper)
    if direction == "remove":
        for alpha, lower, upper in zip([2, 3], bounds.lower, bounds.upper, strict=True):
            exact = sampled_gaussian_integer(alpha, sigma, q) * (alpha - 1)  # K = (a - 1) D
            assert lower <= exact * (1 + 1e-12) and exact <= upper * (1 + 1e-12)


def test_a_stated_zcdp_guarantee_is_its_own_rho():
    # step_rho knew Gaussian pairs and samplers but read an imported ZCDP(rho) as +inf (its
    # envelope law has no closed form): the zCDP sanity cap of the queries then saw no bound
    from plda.conversions.per_step import step_rho

    assert step_rho(plda.ZCDP(0.3)) == 0.3
    assert step_rho(plda.GaussianDP(2.0)) == 2.0
    assert P(plda.ZCDP(0.3), 3).zcdp_bounds().upper <= 0.9 * (1 + 1e-12)


def test_atom_sum_in_blocks_of_orders_matches_the_direct_sum():
    # a law too large for one (orders x atoms) array is summed a block of orders at a time
    # (an allocation epoch of millions of atoms held 24 GB at a hundred orders)
    from plda.conversions.cumulants import log_atom_sum

    rng = np.random.default_rng(3)
    losses = rng.normal(size=200_000)
    probs = rng.random(200_000)
    probs /= probs.sum()
    alpha = np.linspace(1.5, 64.0, 40)
    got = log_atom_sum(losses, probs, alpha)
    for a, value in zip(alpha[::13], got[::13], strict=True):
        terms = np.log(probs) + (a - 1) * losses
        top = terms.max()
        assert value == pytest.approx(top + np.log(np.exp(terms - top).sum()), rel=1e-12)
