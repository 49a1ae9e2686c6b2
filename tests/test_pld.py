"""PrivacyLossDistribution: certified bounds against closed forms and exact enumerations."""

from __future__ import annotations

import math
import warnings

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis_settings import examples

import plda


def at_40_digits(function):
    """Run a reference at 40 digits without changing mpmath's global precision for others."""

    def wrapped(*args, **kwargs):
        with mp.workdps(40):
            return function(*args, **kwargs)

    return wrapped


# ------------------------------------------------------------------ exact references
@at_40_digits
def gaussian_delta(epsilon: float, mu: float) -> float:
    """k-fold Gaussian: delta = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), at 40 digits."""
    e, m = mp.mpf(epsilon), mp.mpf(mu)
    return float(mp.ncdf(-e / m + m / 2) - mp.e**e * mp.ncdf(-e / m - m / 2))


@at_40_digits
def gaussian_epsilon(delta: float, mu: float) -> float:
    """Root of the closed form by bisection at 40 digits."""
    e, m, d = None, mp.mpf(mu), mp.mpf(delta)
    f = lambda x: mp.ncdf(-x / m + m / 2) - mp.e**x * mp.ncdf(-x / m - m / 2) - d  # noqa: E731
    lo, hi = mp.mpf(0), mp.mpf(1)
    while f(hi) > 0:
        hi *= 2
    if f(lo) <= 0:
        return 0.0
    for _ in range(120):
        e = (lo + hi) / 2
        lo, hi = (e, hi) if f(e) > 0 else (lo, e)
    return float((lo + hi) / 2)


@at_40_digits
def atoms_delta(losses, probs, infinity, epsilon):
    """delta(eps) of an exact atomic law (mpmath numbers)."""
    e = mp.mpf(epsilon)
    total = mp.mpf(infinity)
    for loss, p in zip(losses, probs, strict=True):
        if loss > e:
            total += p * (1 - mp.e ** (e - loss))
    return total


@at_40_digits
def kov_delta(eps0: float, delta0: float, k: int, epsilon: float):
    """Exact k-fold composition of RR_(eps0, delta0) by enumerating the binomial law."""
    e0 = mp.mpf(eps0)
    p_plus = mp.e**e0 / (1 + mp.e**e0)
    losses, probs = [], []
    for i in range(k + 1):  # i steps at -eps0
        losses.append((k - 2 * i) * e0)
        weight = mp.binomial(k, i) * p_plus ** (k - i) * (1 - p_plus) ** i
        probs.append((1 - mp.mpf(delta0)) ** k * weight)
    infinity = -mp.expm1(k * mp.log1p(-mp.mpf(delta0)))  # no cancellation for tiny delta0
    return atoms_delta(losses, probs, infinity, epsilon)


@at_40_digits
def discrete_laplace_delta(t: float, k: int, epsilon: float):
    """Exact k-fold discrete Laplace (sensitivity 1): per-step loss atoms +-t, by enumeration."""
    t = mp.mpf(t)
    p_plus = 1 / (1 + mp.e ** (-t))  # P(X <= 0)
    p_minus = mp.e ** (-t) / (1 + mp.e ** (-t))  # P(X >= 1)
    losses = [(k - 2 * i) * t for i in range(k + 1)]
    probs = [mp.binomial(k, i) * p_plus ** (k - i) * p_minus**i for i in range(k + 1)]
    return atoms_delta(losses, probs, 0, epsilon)


@at_40_digits
def subsampled_gaussian_delta(q: float, sigma: float, epsilon: float) -> float:
    """One Poisson-sampled Gaussian step, max of both directions, in closed form with Phi.

    remove: P = (1-q)N(0,s^2) + qN(1,s^2) vs Q = N(0,s^2); L increasing in x, L > eps iff
    x > x_eps = s^2 log((e^eps - 1 + q)/q) + 1/2. add: the reversed pair; L' > eps iff x < x'.
    """
    q, s, e = mp.mpf(q), mp.mpf(sigma), mp.mpf(epsilon)
    x = s**2 * mp.log((mp.e**e - 1 + q) / q) + mp.mpf(1) / 2
    sf = lambda y, m: 1 - mp.ncdf((y - m) / s)  # noqa: E731
    remove = (1 - q) * sf(x, 0) + q * sf(x, 1) - mp.e**e * sf(x, 0)
    inner = (mp.e ** (-e) - 1 + q) / q  # reversed: L' > eps iff 1-q+q e^{L} < e^-eps
    if inner <= 0:
        add = mp.mpf(0)
    else:
        xa = s**2 * mp.log(inner) + mp.mpf(1) / 2
        cdf = lambda y, m: mp.ncdf((y - m) / s)  # noqa: E731
        add = cdf(xa, 0) - mp.e**e * ((1 - q) * cdf(xa, 0) + q * cdf(xa, 1))
    return float(max(remove, add, 0))


def pld_of(mechanism, count=1, **kwargs):
    return plda.PrivacyLossDistribution.from_mechanism(mechanism, count, **kwargs)


# ------------------------------------------------------------------ closed forms
@pytest.mark.parametrize(
    "sigma,k,delta", [(1.0, 1, 1e-5), (2.0, 10, 1e-6), (10.0, 1000, 1e-5), (0.7, 3, 1e-3)]
)
def test_gaussian_composition_matches_closed_form(sigma, k, delta):
    pld = pld_of(plda.Gaussian(sigma), k)
    mu = math.sqrt(k) / sigma
    exact = gaussian_epsilon(delta, mu)
    lower, upper = pld.epsilon_bounds(delta)
    assert lower <= exact <= upper
    assert (upper - lower) / upper <= 1e-3
    for eps in [0.0, 0.5, 2.0]:
        dl, du = pld.delta_bounds(eps)
        assert dl <= gaussian_delta(eps, mu) <= du * (1 + 1e-12)


def test_gaussian_sensitivity_scales_mu():
    a = pld_of(plda.Gaussian(2.0, sensitivity=3.0)).epsilon(1e-5)
    b = pld_of(plda.Gaussian(2.0 / 3.0)).epsilon(1e-5)
    assert a == pytest.approx(b, rel=1e-9)


@pytest.mark.parametrize("eps0,delta0,k", [(0.1, 1e-3, 30), (0.5, 0.0, 20), (1.0, 1e-4, 5)])
def test_approximate_dp_composition_matches_kov(eps0, delta0, k):
    pld = pld_of(plda.ApproximateDP(eps0, delta0), k)
    for eps in [0.0, 0.3, 1.0, 2.5]:
        exact = kov_delta(eps0, delta0, k, eps)
        lower, upper = pld.delta_bounds(eps)
        assert lower <= exact * (1 + 1e-12) and exact <= upper * (1 + 1e-12)


@pytest.mark.parametrize("t,k", [(0.3, 10), (1.0, 4), (0.05, 50)])
def test_discrete_laplace_composition_matches_enumeration(t, k):
    pld = pld_of(plda.DiscreteLaplace(t), k)
    for eps in [0.0, 0.25, 1.0]:
        exact = discrete_laplace_delta(t, k, eps)
        lower, upper = pld.delta_bounds(eps)
        assert lower <= exact * (1 + 1e-12) and exact <= upper * (1 + 1e-12)
        assert upper - lower <= 1e-3 * max(float(exact), 1e-12) + 1e-12


def test_discrete_gaussian_one_step_matches_enumeration():
    sigma = 1.5
    xs = range(-60, 61)
    weights = [mp.e ** (-mp.mpf(x) ** 2 / (2 * sigma**2)) for x in xs]
    z = sum(weights)
    losses = [(1 - 2 * mp.mpf(x)) / (2 * sigma**2) for x in xs]
    probs = [w / z for w in weights]
    pld = pld_of(plda.DiscreteGaussian(sigma))
    for eps in [0.0, 0.3, 1.0]:
        exact = atoms_delta(losses, probs, 0, eps)
        lower, upper = pld.delta_bounds(eps)
        assert lower <= exact * (1 + 1e-12) and exact <= upper * (1 + 1e-12)


@pytest.mark.parametrize("q,sigma", [(0.01, 1.0), (0.2, 0.8), (256 / 60000, 1.1)])
def test_subsampled_gaussian_one_step_matches_closed_form(q, sigma):
    pld = pld_of(plda.PoissonSampled(plda.Gaussian(sigma), q))
    for eps in [0.0, 0.01, 0.1, 0.5]:
        exact = subsampled_gaussian_delta(q, sigma, eps)
        lower, upper = pld.delta_bounds(eps)
        assert lower <= exact * (1 + 1e-9) + 1e-15 and exact <= upper * (1 + 1e-9)


def test_laplace_one_step_is_pure_dp():
    pld = pld_of(plda.Laplace(scale=2.0))  # eps0 = 0.5
    lower, upper = pld.delta_bounds(0.5)
    assert upper <= 1e-12
    # delta(0) = TV distance = 1 - e^{-eps0/2} for Laplace
    lower, upper = pld.delta_bounds(0.0)
    assert lower <= 1 - math.exp(-0.25) <= upper


@pytest.mark.slow
def test_dp_sgd_reference_case_b2():
    step = plda.PoissonSampled(plda.Gaussian(sigma=1.1), sample_rate=256 / 60000)
    pld = pld_of(step, 14062)
    lower, upper = pld.epsilon_bounds(1e-5)
    assert 2.375 < lower <= upper < 2.39
    assert (upper - lower) / upper <= 1e-3


# ------------------------------------------------------------------ API behaviour
def test_vectorized_delta_and_epsilon():
    pld = pld_of(plda.Gaussian(3.0), 5)
    eps = np.linspace(0, 5, 200)
    deltas = pld.delta(eps)
    assert deltas.shape == (200,)
    assert np.all(np.diff(deltas) <= 1e-15)
    lower, upper = pld.delta_bounds(eps)
    assert np.all(lower <= upper)
    epsilons = pld.epsilon(np.array([1e-3, 1e-5, 1e-7]))
    assert epsilons.shape == (3,) and np.all(np.diff(epsilons) > 0)
    assert isinstance(pld.epsilon(1e-5), float)


def test_compose_order_does_not_matter():
    a = pld_of(plda.Gaussian(5.0), 3)
    b = pld_of(plda.Laplace(10.0), 7)
    x, y = a.compose(b), b.compose(a)
    assert x.epsilon(1e-6) == pytest.approx(y.epsilon(1e-6), rel=1e-12)


def test_compose_different_mechanisms_bounds_the_exact_gaussian_part():
    total = pld_of(plda.Gaussian(4.0), 4).compose(pld_of(plda.Gaussian(2.0), 1))
    mu = math.sqrt(4 / 16 + 1 / 4)
    lower, upper = total.epsilon_bounds(1e-6)
    assert lower <= gaussian_epsilon(1e-6, mu) <= upper


def test_epsilon_edge_cases():
    pld = pld_of(plda.ApproximateDP(1.0, 1e-3), 2)
    assert pld.epsilon(1.0) == 0.0
    assert pld.epsilon(1e-4) == math.inf  # below the +inf mass 1 - (1 - 1e-3)^2
    lower, upper = pld.epsilon_bounds(1e-4)
    assert lower == math.inf and upper == math.inf


def test_immutable_and_returns_new_objects():
    pld = pld_of(plda.Gaussian(1.0))
    composed = pld.self_compose(3)
    assert composed is not pld and pld.count == 1 and composed.count == 3
    with pytest.raises(AttributeError):
        pld.relation = "replace_one"


def test_replace_one_doubles_gaussian_sensitivity():
    a = pld_of(plda.Gaussian(2.0), relation="replace_one").epsilon(1e-5)
    b = pld_of(plda.Gaussian(1.0)).epsilon(1e-5)
    assert a == pytest.approx(b, rel=1e-9)


@at_40_digits
def replace_one_sampled_gaussian_delta(q: float, sigma: float, epsilon: float) -> float:
    """Hockey stick of ((1-q)N(0,s^2) + qN(1,s^2), (1-q)N(0,s^2) + qN(-1,s^2)) by quadrature."""
    q, s, e = mp.mpf(q), mp.mpf(sigma), mp.mpf(epsilon)
    dens = lambda x, m: mp.npdf(x, m, s)  # noqa: E731
    p = lambda x: (1 - q) * dens(x, 0) + q * dens(x, 1)  # noqa: E731
    r = lambda x: (1 - q) * dens(x, 0) + q * dens(x, -1)  # noqa: E731
    # the integrand is positive exactly above the point where the loss equals eps
    x0 = mp.findroot(lambda x: mp.log(p(x)) - mp.log(r(x)) - e, 1.0)
    return float(mp.quad(lambda x: p(x) - mp.e**e * r(x), [x0, x0 + 5, mp.inf]))


@pytest.mark.parametrize("q,sigma", [(0.05, 1.0), (0.3, 2.0)])
def test_replace_one_subsampled_gaussian_matches_quadrature(q, sigma):
    step = plda.PoissonSampled(plda.Gaussian(sigma), q)
    pld = pld_of(step, relation="replace_one")
    for eps in [0.01, 0.1, 0.4]:
        exact = replace_one_sampled_gaussian_delta(q, sigma, eps)
        lower, upper = pld.delta_bounds(eps)
        assert lower <= exact * (1 + 1e-7) + 1e-15 and exact <= upper * (1 + 1e-7)
    # it lies between add/remove and doubling the sensitivity
    add_remove = pld_of(step, 50).epsilon(1e-5)
    doubled = pld_of(plda.PoissonSampled(plda.Gaussian(sigma / 2), q), 50).epsilon(1e-5)
    assert add_remove < pld_of(step, 50, relation="replace_one").epsilon(1e-5) < doubled


def test_replace_one_subsampling_needs_a_gaussian_base():
    step = plda.PoissonSampled(plda.Laplace(1.0), 0.1)
    with pytest.raises(ValueError, match="replace_one"):
        pld_of(step, relation="replace_one").epsilon(1e-5)


def test_add_remove_reports_worse_direction_for_subsampling():
    step = plda.PoissonSampled(plda.Gaussian(0.8), 0.2)
    pld = pld_of(step, 3)
    remove = {d: v for d, v in pld.discrete("upper").items()}
    assert set(remove) == {"remove", "add"}
    eps = np.array([0.5, 1.0, 2.0])
    each = [v.delta(eps) for v in remove.values()]
    assert np.allclose(pld.delta(eps), np.maximum(*each))


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "make,arg",
    [
        (lambda: plda.Gaussian(0.0), "sigma"),
        (lambda: plda.Gaussian(float("nan")), "sigma"),
        (lambda: plda.Gaussian(float("inf")), "sigma"),
        (lambda: plda.Gaussian(-1.0), "sigma"),
        (lambda: plda.Laplace(0.0), "scale"),
        (lambda: plda.PoissonSampled(plda.Gaussian(1.0), 0.0), "sample_rate"),
        (lambda: plda.PoissonSampled(plda.Gaussian(1.0), 1.5), "sample_rate"),
        (lambda: plda.DiscreteLaplace(1.0, sensitivity=1.5), "sensitivity"),
        (lambda: plda.DiscreteGaussian(1.0, sensitivity=0), "sensitivity"),
        (lambda: plda.ApproximateDP(-0.1), "epsilon"),
        # past 1e150 the grid's moments overflowed: "math domain error" (theorems.optimal too)
        (lambda: plda.ApproximateDP(1e200), "epsilon must be in \\[0, 1e\\+150\\]"),
        (lambda: plda.theorems.optimal([(1e200, 0.0), (1.0, 0.0)], 1e-5), "epsilon"),
        (lambda: plda.ApproximateDP(1.0, 1.5), "delta"),
        (lambda: pld_of(plda.Gaussian(1.0)).epsilon(-0.1), "delta"),
        (lambda: pld_of(plda.Gaussian(1.0)).epsilon(1.5), "delta"),
        (lambda: pld_of(plda.Gaussian(1.0)).delta(-1.0), "epsilon"),
        (lambda: pld_of(plda.Gaussian(1.0)).delta(float("nan")), "epsilon"),
        (lambda: pld_of(plda.Gaussian(1.0)).self_compose(-1), "count"),
        (lambda: pld_of(plda.Gaussian(1.0)).self_compose(2.5), "count"),
        (lambda: pld_of(plda.Gaussian(1.0), relation="neighbours"), "relation"),
    ],
)
def test_bad_input_names_the_argument(make, arg):
    with pytest.raises(ValueError, match=arg):
        make()


@pytest.mark.parametrize(
    "grow",
    [
        lambda p: p.self_compose(10**11),
        lambda p: p.compose(pld_of(plda.Gaussian(1.0), count=10**12)),
        lambda p: p.compose(pld_of(plda.Laplace(1.0), count=10**12)),
    ],
)
def test_a_composition_beyond_the_count_cap_names_its_total(grow):
    # self_compose and compose said "count must be an integer in [0, 1e+12]" (a component's
    # range) where the count given was in range: the total is what exceeds it (issue 25)
    with pytest.raises(ValueError) as error:
        grow(pld_of(plda.Gaussian(1.0), count=100))
    assert str(error.value).startswith("count: the composition holds 1000000000")
    assert "more than 1e+12" in str(error.value) and "[0," not in str(error.value)


def test_wrong_types():
    with pytest.raises(TypeError, match="sigma"):
        plda.Gaussian("1.0")
    with pytest.raises(TypeError, match="mechanism"):
        plda.PrivacyLossDistribution.from_mechanism("gaussian")
    with pytest.raises(TypeError, match="mechanism"):
        plda.PoissonSampled(3.0, 0.1)


# ------------------------------------------------------------------ extreme but valid
@pytest.mark.parametrize(
    "mechanism,count,delta",
    [
        (plda.Gaussian(1.0), 1, 1e-300),
        (plda.Gaussian(0.05), 1, 1e-5),
        (plda.Gaussian(1000.0), 1, 1e-5),
        (plda.Gaussian(1.0), 10**9, 1e-5),
        (plda.PoissonSampled(plda.Gaussian(1.0), 0.01), 10, 1e-300),
    ],
)
@pytest.mark.filterwarnings("error::RuntimeWarning")  # no overflow or NaN on the way either
def test_extreme_inputs_give_finite_ordered_bounds(mechanism, count, delta):
    lower, upper = pld_of(mechanism, count).epsilon_bounds(delta)
    assert not math.isnan(lower) and not math.isnan(upper)
    assert 0 <= lower <= upper < math.inf
    if type(mechanism) is plda.Gaussian:
        mu = math.sqrt(count) * mechanism.mu
        if delta > 1e-200:
            assert lower <= gaussian_epsilon(delta, mu) <= upper


@pytest.mark.parametrize("delta", [1e-10, 1e-12, 1e-15, 1e-20])
def test_small_deltas_stay_tight_by_tilting(delta):
    sigma, k = 3.0, 20
    pld = pld_of(plda.PoissonSampled(plda.Gaussian(sigma), 0.5), k)
    lower, upper = pld.epsilon_bounds(delta)
    assert 0 < lower <= upper < math.inf
    d = np.array([delta])  # the untilted grid laws alone: tilting may only tighten them
    plain_upper = max(float(v.epsilon(d)[0]) for v in pld.discrete("upper").values())
    plain_lower = max(float(v.epsilon(d)[0]) for v in pld.discrete("lower").values())
    assert upper <= plain_upper and lower >= plain_lower
    if delta >= 1e-10:
        assert (upper - lower) / upper <= 5e-3
    mu = math.sqrt(k) / sigma  # unsampled: exact closed form, tilted path (single factor)
    exact = gaussian_epsilon(delta, mu)
    lower, upper = pld_of(plda.Gaussian(sigma), k).epsilon_bounds(delta)
    assert lower <= exact <= upper and (upper - lower) / upper <= 1e-3


@pytest.mark.parametrize("delta", [1e-12, 1e-20])
def test_tilting_falls_back_to_smaller_tilts_when_the_lower_bound_collapses(delta):
    # the Chernoff-optimal tilt (32 here) left the optimistic side swamped by its error terms
    # (bounds [0.926, 0.999] at 1e-12); a smaller tilt resolves it to the accuracy target
    pld = pld_of(plda.PoissonSampled(plda.Gaussian(2.2885), 0.01), 1000)
    lower, upper = pld.epsilon_bounds(delta)
    assert 0 < lower <= upper < math.inf
    assert (upper - lower) / upper <= 1e-3


def test_tilted_bounds_contain_the_exact_rr_composition():
    eps0, delta0, k = 0.2, 0.0, 60
    pld = pld_of(plda.ApproximateDP(eps0, delta0), k)
    eps = np.array([6.0, 8.0, 10.0])
    lower, upper = pld.delta_bounds(eps)
    for e, lo, up in zip(eps, lower, upper, strict=True):
        exact = float(kov_delta(eps0, delta0, k, e))
        assert lo <= exact * (1 + 1e-9) and exact <= up * (1 + 1e-9)
        assert up <= 2 * exact  # tight far below the FFT floor


def test_extreme_epsilon_gives_tiny_delta():
    lower, upper = pld_of(plda.Gaussian(1.0), 10).delta_bounds(500.0)
    assert 0 <= lower <= upper <= 1e-100


# ------------------------------------------------------------------ properties
@examples(15)
@given(
    sigma=st.floats(0.5, 20.0),
    k=st.integers(1, 200),
    epsilon=st.floats(0.0, 10.0),
)
def test_gaussian_bounds_always_contain_the_truth(sigma, k, epsilon):
    pld = pld_of(plda.Gaussian(sigma), k)
    lower, upper = pld.delta_bounds(epsilon)
    exact = gaussian_delta(epsilon, math.sqrt(k) / sigma)
    assert lower <= exact * (1 + 1e-9) + 1e-300
    assert exact <= upper * (1 + 1e-9) + 1e-300


@examples(8)
@given(q=st.floats(0.001, 0.5), sigma=st.floats(0.6, 3.0), k=st.integers(1, 50))
def test_monotone_in_epsilon_delta_and_count(q, sigma, k):
    step = plda.PoissonSampled(plda.Gaussian(sigma), q)
    pld = pld_of(step, k)
    eps = np.linspace(0, 4, 30)
    assert np.all(np.diff(pld.delta(eps)) <= 1e-15)
    assert np.all(np.diff(pld.epsilon(np.array([1e-2, 1e-4, 1e-6]))) >= 0)
    more = pld_of(step, k + 5)
    assert more.epsilon(1e-5) >= pld.epsilon_bounds(1e-5).lower


@examples(40)
@given(
    eps0=st.floats(0.01, 1.0),
    delta0=st.one_of(st.just(0.0), st.floats(-300, -3).map(lambda x: 10.0**x)),
    k=st.integers(1, 40),
)
@example(eps0=1.0, delta0=1e-12, k=2)  # the upper bound was 2.2e-5 relative low at k eps0 + 1
@example(eps0=1.0, delta0=1e-14, k=2)
@example(eps0=1.0, delta0=1e-17, k=2)  # it was 0
@example(eps0=1.0, delta0=1e-300, k=2)
def test_pessimistic_composition_stays_pessimistic_for_rr(eps0, delta0, k):
    # no tolerance: the bounds must hold exactly, at 1 - (1 - delta0)^k ~ 1e-300 too
    pld = pld_of(plda.ApproximateDP(eps0, delta0), k)
    for eps in [0.0, eps0, 3 * eps0, k * eps0 + 1]:
        exact = kov_delta(eps0, delta0, k, eps)
        lower, upper = pld.delta_bounds(eps)
        assert lower <= exact <= upper


@examples(150)
@given(
    st.integers(1, 3000),
    st.floats(1.0, 30.0),
    st.sampled_from([1e-3, 1e-2, 0.1]),
    st.integers(-100, 400),
    st.booleans(),
    st.sampled_from([0.0, 1e-9, 1e-3]),
    st.sampled_from([0.5, 1e-3, 1e-5, 1e-9, 1e-13, 1e-30, 0.0, 1.0]),
    st.integers(0, 2**32 - 1),
)
def test_epsilon_block_search_agrees_with_full_segments(
    n, power, step, offset, upper, infinity, delta, seed
):
    # one delta on a fresh law takes the block search (the accountant's per-query path), many
    # deltas the full segment arrays: the same closed form, so the same epsilon up to rounding
    from dataclasses import replace

    from plda.grid.discrete import DiscreteLoss

    rng = np.random.default_rng(seed)
    probs = rng.random(n) ** power
    probs /= probs.sum() * rng.uniform(1, 2)
    law = DiscreteLoss(step, offset, probs, infinity, upper, 1e-15, 1e-20, None, 0.0, 1e-13)
    fast = float(replace(law).epsilon(np.array(delta)))
    full = float(replace(law).epsilon(np.full(5, delta))[0])
    if upper or delta > 1e-9:
        assert fast == pytest.approx(full, rel=1e-12, abs=1e-12) or fast == full == math.inf
    else:
        # deltas in the error-term noise of a lower version: the bisection may stop at a later
        # crossing than the full profile's first one (valid: the profile exceeds delta before)
        assert fast >= full - 1e-12 * (1 + abs(full)) or fast == full == math.inf
        if math.isfinite(fast) and fast > 1e-9:
            assert float(law.delta(np.array(fast * (1 - 1e-9) - 1e-12))) > delta
    if upper and math.isfinite(fast):
        assert float(law.delta(np.array(fast))) <= delta * (1 + 1e-9) + 1e-15


def test_an_answer_does_not_depend_on_the_questions_asked_before():
    def make():
        return plda.PrivacyLossDistribution.from_mechanism(
            plda.PoissonSampled(plda.Gaussian(0.9), 0.01), 500)

    asked = make()
    asked.delta_bounds(1.0)
    asked.epsilon_bounds(1e-3)
    assert asked.epsilon_bounds(1e-7) == make().epsilon_bounds(1e-7)
    assert asked.delta_bounds(0.3) == make().delta_bounds(0.3)


def test_a_conversion_leaves_the_latest_query_grid_alone():
    # the conversions read the first grid; reading it must not overwrite what discrete() and
    # grid_step show (the grid the latest epsilon/delta query reached)
    pld = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Gaussian(0.8), 0.001), 1000)
    first = pld.grid_step
    pld.epsilon_bounds(1e-5)  # (its start grid misses the accuracy: two rounds)
    refined = pld.grid_step
    assert refined < first
    pld.tradeoff_bounds(0.1)
    assert pld.grid_step == refined


def test_a_sparse_heavy_tailed_composition_meets_the_accuracy():
    # rate 1e-4 over 5000 steps: the composed spread is 0.045 but a sampling's loss reaches 18,
    # so the best Chernoff cut is near order 1; the ladder started at 0.5 / spread = 11, cut the
    # window at 9000, the grid cap forced a step of 4e-3 and epsilon(1e-5) was [0, 0.236]
    # (dp_accounting's pessimistic estimate: 0.21358)
    step = plda.PoissonSampled(plda.Gaussian(0.6), 1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", plda.AccuracyWarning)
        pld_bounds = plda.PrivacyLossDistribution.from_mechanism(step, 5000).epsilon_bounds(1e-5)
        accountant = plda.PLDAccountant()
        accountant.step(0.6, 1e-4, count=5000)
        accountant_bounds = accountant.epsilon_bounds(1e-5)
    for lower, upper in (pld_bounds, accountant_bounds):
        assert 0.2130 < lower <= upper < 0.2140 and upper - lower <= 1e-3 * upper
    assert max(pld_bounds.lower, accountant_bounds.lower) <= min(pld_bounds.upper,
                                                                 accountant_bounds.upper)


def test_epsilon_alone_composes_no_realized_pair(monkeypatch):
    # epsilon() is the upper bound only: the realized compositions that certify a lower bound
    # for a factor that is not tight (a shuffled epoch: seconds) are not its business
    import warnings

    from plda.engine import query

    def refuse(*args, **kwargs):
        raise AssertionError("epsilon() composed the realized pairs")

    pld = plda.PrivacyLossDistribution.from_mechanism(plda.ZCDP(0.1), 10)
    expected = pld.epsilon_bounds(1e-5).upper
    monkeypatch.setattr(query, "realized_lower", refuse)
    fresh = plda.PrivacyLossDistribution.from_mechanism(plda.ZCDP(0.1), 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fresh.epsilon(1e-5) == expected
        assert list(fresh.epsilon([1e-5])) == [expected]


@pytest.mark.parametrize("make", [
    lambda a: plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(1.0), accuracy=a),
    lambda a: plda.PLDAccountant(accuracy=a),
])
@pytest.mark.parametrize("bad", [0.0, -1.0, 1.0, 2.0, float("nan")])
def test_an_accuracy_out_of_range_is_refused_with_its_range(make, bad):
    # accuracy = 0 was refused as "a finite number in (0, inf)", a range 2.0 is in
    with pytest.raises(ValueError, match=r"accuracy must be in \(0, 1\)"):
        make(bad)


def test_delta_alone_composes_no_realized_pair(monkeypatch):
    # delta() is the upper bound only, like epsilon(): it returned delta_bounds().upper
    from plda.engine import query

    def refuse(*args, **kwargs):
        raise AssertionError("delta() composed the realized pairs")

    expected = plda.PrivacyLossDistribution.from_mechanism(plda.ZCDP(0.1), 10).delta_bounds(
        [0.5, 2.0]).upper
    monkeypatch.setattr(query, "realized_lower", refuse)
    fresh = plda.PrivacyLossDistribution.from_mechanism(plda.ZCDP(0.1), 10)
    assert list(fresh.delta([0.5, 2.0])) == list(expected)
    assert fresh.delta(0.5) == expected[0]


@pytest.mark.parametrize("query", ["epsilon_bounds", "delta_bounds", "tradeoff_bounds",
                                   "true_positive_rate_bounds"])
@pytest.mark.parametrize("value", [0.1 + 1j, [0.1, 0.2 + 0j], np.array([1e-5 - 3j])])
def test_a_complex_argument_is_a_type_error_not_its_real_part(query, value):
    # numpy's cast dropped the imaginary part with only a ComplexWarning (the constructors and
    # renyi_bounds refused complex numbers already)
    pld = pld_of(plda.DiscreteLaplace(1.0), count=2)
    with pytest.raises(TypeError, match="must be a number or an array of numbers"):
        getattr(pld, query)(value)
