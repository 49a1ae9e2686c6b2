"""Tradeoff curves, membership-inference reading and Gaussian DP against closed forms and exact
enumerations; convexity, monotonicity and symmetry as properties."""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
import tradeoff_reference as reference
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis_settings import examples
from scipy.special import ndtr, ndtri

import plda
from plda.conversions import gdp, tradeoff
from plda.conversions.composed import ComposedLaws
from plda.conversions.envelope import LowerEnvelope
from plda.engine.recipe import add_remove_steps

P = plda.PrivacyLossDistribution.from_mechanism
ALPHA = np.concatenate(
    [[0.0, 1e-12, 1e-9, 1e-6, 1e-3], np.linspace(0.01, 0.99, 99), [1 - 1e-9, 1.0]]
)


def gaussian_curve(alpha, mu):
    with np.errstate(divide="ignore"):
        return np.where(alpha <= 0, 1.0, np.where(alpha >= 1, 0.0, ndtr(-ndtri(alpha) - mu)))


def assert_brackets(lower, exact, upper, slack=1e-13):
    lower, exact, upper = map(np.asarray, (lower, exact, upper))
    assert np.all(lower <= exact + slack), np.max(lower - exact)
    assert np.all(exact <= upper + slack), np.max(exact - upper)


@pytest.fixture(scope="module")
def sampled():
    """An asymmetric composition (two directions): 1000 Poisson-sampled Gaussian steps."""
    return P(plda.PoissonSampled(plda.Gaussian(1.0), sample_rate=0.01)).self_compose(1000)


# ------------------------------------------------------------ closed forms
@pytest.mark.parametrize("sigma,count", [(1.0, 1), (2.0, 10), (0.5, 3)])
def test_gaussian_tradeoff(sigma, count):
    pld = P(plda.Gaussian(sigma)).self_compose(count)
    mu = math.sqrt(count) / sigma
    lower, upper = pld.tradeoff_bounds(ALPHA)
    exact = gaussian_curve(ALPHA, mu)
    assert_brackets(lower, exact, upper)
    assert np.max(upper - lower) < 1e-3
    np.testing.assert_array_equal(pld.tradeoff(ALPHA), lower)
    assert isinstance(pld.tradeoff(0.3), float)


@pytest.mark.parametrize("epsilon,delta", [(1.0, 0.0), (0.5, 1e-3), (2.0, 0.05)])
def test_approximate_dp_tradeoff(epsilon, delta):
    pld = P(plda.ApproximateDP(epsilon, delta))
    exact = np.maximum.reduce([
        np.zeros_like(ALPHA),
        1 - delta - math.exp(epsilon) * ALPHA,
        math.exp(-epsilon) * (1 - delta - ALPHA),
    ])
    lower, upper = pld.tradeoff_bounds(ALPHA)
    assert_brackets(lower, exact, upper)
    assert np.max(upper - lower) < 1e-6


@pytest.mark.parametrize("epsilon0", [0.3, 1.0, 3.0])
def test_laplace_tradeoff(epsilon0):
    """Dong, Roth & Su 2019: ``T(Lap(0,1), Lap(mu,1))(a) = F(F^-1(1 - a) - mu)``."""

    def cdf(x):
        return np.where(x < 0, 0.5 * np.exp(np.minimum(x, 0)), 1 - 0.5 * np.exp(-np.maximum(x, 0)))

    def quantile(p):
        with np.errstate(divide="ignore"):
            return np.where(p < 0.5, np.log(2 * p), -np.log(2 * (1 - p)))

    pld = P(plda.Laplace(scale=1.0 / epsilon0))
    inner = ALPHA[(ALPHA > 0) & (ALPHA < 1)]
    exact = cdf(quantile(1 - inner) - epsilon0)
    lower, upper = pld.tradeoff_bounds(inner)
    assert_brackets(lower, exact, upper, slack=1e-12)
    assert np.max(upper - lower) < 2e-3


def exact_rr_composition_tradeoff(epsilon0, count, alpha):
    """Symmetric tradeoff of ``count`` randomized responses by exact enumeration (mpmath): the
    privacy loss takes the values ``(count - 2j) epsilon0``, ``delta`` is linear in ``e^eps``
    between them, so the conjugate supremum is attained at those losses."""
    mpmath.mp.dps = 40
    e0 = mpmath.mpf(epsilon0)
    p = mpmath.exp(e0) / (1 + mpmath.exp(e0))
    losses = [(count - 2 * j) * e0 for j in range(count + 1)]
    probs = [mpmath.binomial(count, j) * p ** (count - j) * (1 - p) ** j for j in range(count + 1)]

    def delta(eps):
        return mpmath.fsum(
            w * max(0, 1 - mpmath.exp(eps - loss)) for w, loss in zip(probs, losses, strict=True)
        )

    points = [mpmath.mpf(0)] + [loss for loss in losses if loss > 0]
    out = []
    for a in alpha:
        a = mpmath.mpf(float(a))
        best = mpmath.mpf(0)
        for eps in points:
            d = delta(eps)
            best = max(best, 1 - d - mpmath.exp(eps) * a, mpmath.exp(-eps) * (1 - d - a))
        out.append(float(best))
    return np.array(out)


def test_composed_randomized_response_exact():
    pld = P(plda.ApproximateDP(0.4)).self_compose(6)
    alpha = np.linspace(0, 1, 41)
    lower, upper = pld.tradeoff_bounds(alpha)
    assert_brackets(lower, exact_rr_composition_tradeoff(0.4, 6, alpha), upper, slack=1e-12)


# --------------------------------------------------------------- properties
def test_curve_shape(sampled):
    alpha = np.linspace(0, 1, 2001)
    lower, upper = sampled.tradeoff_bounds(alpha)
    for curve in (lower, upper):
        assert np.all(np.diff(curve) <= 1e-15)  # non-increasing
        assert np.min(np.diff(curve, 2)) >= -1e-12  # convex
        assert np.all(curve <= 1 - alpha + 1e-15) and np.all(curve >= 0)
    assert np.all(lower <= upper)
    assert np.max(upper - lower) < 1e-3


@examples(40)
@given(st.floats(1e-9, 0.999))
def test_symmetric_curve_is_its_own_inverse(sampled, alpha):
    """``f`` is symmetric for add/remove (``f(f(a)) = a`` where ``f > 0``); with ``L <= f <= U``
    and ``f`` decreasing: ``L(U(a)) <= a <= U(L(a))``."""
    lower, upper = sampled.tradeoff_bounds(alpha)
    if lower <= 0:
        return
    assert sampled.tradeoff_bounds(upper).lower <= alpha + 1e-12
    assert sampled.tradeoff_bounds(lower).upper >= alpha - 1e-12


@examples(40)
@given(st.floats(1e-9, 0.999))
def test_directions_are_inverse_and_dominate_the_symmetric_curve(sampled, alpha):
    """Poisson sampling: ``T_add = T_remove^-1``; the add/remove curve is below both."""
    rem = sampled.tradeoff_bounds(alpha, direction="remove")
    add = sampled.tradeoff_bounds(alpha, direction="add")
    both = sampled.tradeoff_bounds(alpha)
    assert both.lower <= min(rem.upper, add.upper) + 1e-12
    if rem.lower > 0:
        assert sampled.tradeoff_bounds(rem.upper, direction="add").lower <= alpha + 1e-12
        assert sampled.tradeoff_bounds(rem.lower, direction="add").upper >= alpha - 1e-12


def test_symmetric_composition_directions_agree():
    pld = P(plda.Gaussian(1.5)).self_compose(4)
    alpha = np.linspace(0, 1, 101)
    both = pld.tradeoff_bounds(alpha)
    for direction in ("remove", "add"):
        one = pld.tradeoff_bounds(alpha, direction=direction)
        assert_brackets(one.lower, gaussian_curve(alpha, math.sqrt(4) / 1.5), one.upper)
        assert np.max(np.abs(one.lower - both.lower)) < 1e-4


@examples(60)
@given(
    st.lists(st.tuples(st.floats(0.01, 100), st.floats(-5, 5)), min_size=1, max_size=40),
    st.lists(st.floats(0, 2), min_size=1, max_size=20),
)
def test_envelope_is_the_minimum_of_the_lines(lines, xs):
    slopes = np.array([s for s, _ in lines])
    intercepts = np.array([a for _, a in lines])
    envelope = LowerEnvelope.from_lines(slopes, intercepts)
    x = np.array(xs)
    brute = np.min(intercepts[None, :] + slopes[None, :] * x[:, None], axis=1)
    np.testing.assert_allclose(envelope(x), brute, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------- membership inference
def test_true_positive_rate_keeps_relative_accuracy_at_tiny_rates():
    pld = P(plda.Gaussian(1.0)).self_compose(4)
    fpr = np.array([1e-15, 1e-12, 1e-9, 1e-6, 1e-3, 0.1])
    exact = ndtr(ndtri(fpr) + 2.0)  # 1 - G_2(fpr)
    lower, upper = pld.true_positive_rate_bounds(fpr)
    assert_brackets(lower, exact, upper, slack=0)
    assert np.max(upper / lower) < 1.01
    np.testing.assert_array_equal(pld.true_positive_rate_bounds(fpr).upper, upper)


def test_advantage_is_total_variation():
    mu = 1.3
    pld = P(plda.Gaussian(1 / mu))
    lower, upper = pld.advantage_bounds()
    exact = 2 * ndtr(mu / 2) - 1
    assert lower <= exact <= upper and upper - lower < 1e-4
    alpha = np.linspace(0, 1, 20001)
    assert np.max(1 - alpha - pld.tradeoff(alpha)) <= upper + 1e-12


# -------------------------------------------------------------- Gaussian DP
def test_gaussian_composition_is_exactly_gdp():
    pld = P(plda.Gaussian(2.0)).self_compose(9).compose(P(plda.Gaussian(1.0)))
    mu = math.sqrt(9 / 4 + 1)
    assert pld.gdp_mu() == pytest.approx(mu, rel=1e-12)
    summary = pld.gdp_summary()
    # the closed form, rounded outward by a few ulps (certified on both sides)
    assert summary.mu_lower <= mu <= summary.mu
    assert summary.mu_lower == pytest.approx(mu, rel=1e-12)
    assert summary.mu == pytest.approx(mu, rel=1e-12)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_randomized_response_gdp(epsilon):
    """``f_{eps,0} >= G_mu`` iff ``G_mu`` passes below the kink of ``f_{eps,0}``:
    ``mu* = 2 Phi^-1(e^eps / (1 + e^eps))``."""
    exact = 2 * ndtri(math.exp(epsilon) / (1 + math.exp(epsilon)))
    summary = P(plda.ApproximateDP(epsilon)).gdp_summary()
    assert summary.mu_lower <= exact <= summary.mu
    assert summary.mu <= exact * (1 + 1e-6)
    assert abs(summary.best_fit - exact) < 0.5 * exact


def test_certified_gdp_curve_lies_below_the_tradeoff(sampled):
    summary = sampled.gdp_summary(delta_floor=1e-9)
    assert summary.mu_lower <= summary.mu < 1.1 * summary.mu_lower
    assert sampled.gdp_mu() >= summary.mu  # a lower floor certifies less
    comparison = gdp.gdp_comparison(sampled.composed_laws(), mu=summary.mu)
    # (eps, max(delta_mu, floor))-DP for all eps: its conjugate is at least G_mu - floor
    assert np.all(comparison.gaussian - 1e-9 <= comparison.upper + 1e-12)
    assert np.max(comparison.gaussian - comparison.lower) < 0.01


def test_no_gdp_with_mass_at_infinity():
    with pytest.warns(plda.GaussianDPWarning, match="probability 1e-06 on an infinite"):
        assert P(plda.ApproximateDP(1.0, 1e-6)).gdp_mu() == math.inf


def test_gaussian_profile_far_tail():
    """The log-domain GDP profile agrees with mpmath deep into the tail."""
    mpmath.mp.dps = 50
    mu = 1.2
    for eps in (0.0, 1.0, 10.0, 40.0):
        e = mpmath.mpf(eps)
        exact = mpmath.ncdf(-e / mu + mu / 2) - mpmath.exp(e) * mpmath.ncdf(-e / mu - mu / 2)
        value = float(gdp.log_gaussian_delta(np.array(eps), mu))
        assert value == pytest.approx(float(mpmath.log(exact)), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("mu", [1e-12, 3e-6, 9.9e-6, 1.1e-5, 1e-4])
def test_gaussian_profile_tiny_mu(mu):
    """At a tiny mu both terms of the profile nearly cancel (delta ~ mu phi): at mu = eps =
    1e-12 the direct form was 4e-4 off relatively (log -30.1157 against -30.1161)."""
    mpmath.mp.dps = 60
    for ratio in (0.0, 0.5, 1.0, 5.0, 99.0, 101.0, 1e3):
        eps = ratio * mu
        e, m = mpmath.mpf(eps), mpmath.mpf(mu)
        exact = mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)
        value = float(gdp.log_gaussian_delta(np.array(eps), mu))
        assert value == pytest.approx(float(mpmath.log(exact)), rel=1e-10, abs=1e-9)


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), [0.5, 2.0]])
def test_alpha_outside_unit_interval(bad):
    pld = P(plda.Gaussian(1.0))
    with pytest.raises(ValueError, match="alpha"):
        pld.tradeoff(bad)
    with pytest.raises(ValueError, match="alpha"):
        pld.tradeoff_bounds(bad)
    with pytest.raises(ValueError, match="false_positive_rate"):
        pld.true_positive_rate_bounds(bad)


def test_other_bad_arguments():
    pld = P(plda.Gaussian(1.0))
    with pytest.raises(ValueError, match="direction"):
        pld.tradeoff(0.5, direction="sideways")
    with pytest.raises(ValueError, match=r"delta_floor must be in \[1e-250, 1\)"):
        pld.gdp_mu(delta_floor=0.0)  # (it said "(0, inf)", which 1.0 is in)
    with pytest.raises(ValueError, match="delta_floor"):
        pld.gdp_summary(delta_floor=1.0)
    with pytest.raises(ValueError, match="mu"):
        gdp.gaussian_tradeoff(0.5, -1.0)


# ----------------------------------------------- conversions on composed laws
def test_conversions_read_composed_laws_without_a_pld():
    pld = P(plda.PoissonSampled(plda.Gaussian(1.0), 0.05), 200)
    laws = ComposedLaws.from_laws(upper=pld.discrete("upper"), lower=pld.discrete("lower"))
    alpha = np.array([1e-6, 1e-3, 0.1, 0.5])
    for direction in (None, "remove", "add"):
        direct = tradeoff.tradeoff_bounds(laws, alpha, direction=direction)
        via_pld = pld.tradeoff_bounds(alpha, direction=direction)
        np.testing.assert_array_equal(direct.lower, via_pld.lower)
        np.testing.assert_array_equal(direct.upper, via_pld.upper)
    np.testing.assert_array_equal(
        tradeoff.true_positive_rate_bounds(laws, alpha).upper,
        pld.true_positive_rate_bounds(alpha).upper,
    )
    assert gdp.gdp_mu(laws, delta_floor=1e-9) == pld.gdp_mu(delta_floor=1e-9)
    # the steps alone give the exact Gaussian mu; no grid laws are needed for it
    gaussians = ComposedLaws(steps=add_remove_steps(((plda.Gaussian(2.0), 4),)))
    assert gdp.gdp_mu(gaussians) == pytest.approx(1.0, rel=1e-15)
    with pytest.raises(ValueError, match="grid laws"):
        tradeoff.tradeoff_bounds(gaussians, 0.5)
    with pytest.raises(TypeError, match="ComposedLaws"):
        tradeoff.tradeoff_bounds(pld, 0.5)
    with pytest.raises(ValueError, match="upper"):
        ComposedLaws.from_laws(upper=pld.discrete("lower"), lower=pld.discrete("lower"))
    with pytest.raises(ValueError, match="lower"):
        ComposedLaws.from_laws(upper=pld.discrete("upper"), lower={"sideways": None})
    with pytest.raises(ValueError, match="relation"):
        add_remove_steps((), relation="swap")


def test_a_long_run_leaks_no_numpy_warning():
    # the Chernoff bound of a far grid point overflowed in np.exp (a bound above 1, clipped
    # later) and numpy's RuntimeWarning reached the user from tradeoff_bounds and gdp_summary
    pld = P(plda.Gaussian(0.5), 10**6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        pld.tradeoff_bounds([1e-6, 0.1])
        pld.gdp_summary()


# ------------------------------------------------------------------ realized grids, f near 1
def test_realized_compositions_on_their_own_grids_keep_the_bracket():
    """PermuteAndFlip(0.01) takes its lower bounds from realized pairs composed on grids of
    their own steps; read as if on the first one, their samples sat up to 4% off in epsilon and
    the tradeoff's upper bound fell 1e-8 below its lower one (InvertedBracketError). The truth
    lies above randomized response's 1 - e^eps alpha (an epsilon-DP pair) and in the bracket."""
    eps = 0.01
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.PermuteAndFlip(eps))
    alpha = np.array([1e-6, 1e-3, 0.1])
    with mpmath.workdps(30):
        rr = np.array([float(1 - mpmath.exp(eps) * mpmath.mpf(a)) for a in alpha])
    bounds = pld.tradeoff_bounds(alpha)
    assert np.all(bounds.lower <= bounds.upper)
    assert np.all(bounds.upper >= rr) and np.all(bounds.upper - bounds.lower < 1e-9)
    samples = pld.symmetric_profile("lower")  # certified lower samples, every grid's
    worst = (math.exp(eps) - np.exp(samples.epsilon)) / (1 + math.exp(eps))
    assert np.all(samples.delta <= np.maximum(worst, 0.0) + 1e-15)


def test_a_tiny_true_positive_rate_is_not_lost_to_cancellation():
    """1 - f at f near 1: formed as 1 - (1 - x), a true-positive rate of 3.2e-11 lost 2e-6 of
    itself and its lower bound rose above the truth e^eps alpha (InvertedBracketError)."""
    eps, alpha = 1e-6, 3.1622776601683795e-11
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.ApproximateDP(eps))
    with mpmath.workdps(30):
        exact = float(mpmath.exp(eps) * mpmath.mpf(alpha))
    bounds = pld.true_positive_rate_bounds(alpha)
    assert bounds.lower <= exact <= bounds.upper
    assert bounds.upper - bounds.lower < 2e-6 * exact  # at worst [alpha, e^eps alpha]


# ------------------------------------------------- finite mechanisms against their exact curves
FINITE = {
    "ApproximateDP": plda.ApproximateDP,
    "ApproximateDP with delta": lambda epsilon: plda.ApproximateDP(epsilon, 1e-6),
    "PermuteAndFlip": plda.PermuteAndFlip,
    "ReportNoisyMax": plda.ReportNoisyMax,  # Laplace noise
    "ReportNoisyMax, Gumbel": lambda epsilon: plda.ReportNoisyMax(epsilon, "gumbel"),
    "ExponentialMechanism": plda.ExponentialMechanism,
}
LOG_ALPHA = np.logspace(-12, 0, 25)


@examples(10)
@given(kind=st.sampled_from(sorted(FINITE)), epsilon=st.floats(-6.0, 3.0).map(lambda x: 10**x),
       count=st.integers(1, 20))
# the upper bound of 10 runs of PermuteAndFlip(0.01) was 3.8e-8 below the exact curve of its
# realized pairs (PermuteAndFlip(0.003): 7e-10 to 3.7e-8 at 3 to 20 runs), and the lower
# bound on the true-positive rate above it: realized pairs sharing one grid had no crossings
@example(kind="PermuteAndFlip", epsilon=0.01, count=10)
@example(kind="PermuteAndFlip", epsilon=0.003, count=3)
@example(kind="PermuteAndFlip", epsilon=0.003, count=20)
@example(kind="PermuteAndFlip", epsilon=0.01, count=1)  # the first inversion, grids mixed
# one direction's curve raised ValueError (no finite line) once the support passed e^700
@example(kind="ApproximateDP", epsilon=300.0, count=3)
@example(kind="ApproximateDP", epsilon=1000.0, count=1)
@example(kind="ExponentialMechanism", epsilon=300.0, count=5)
def test_finite_mechanisms_bracket_their_exact_curves(kind, epsilon, count):
    """Every bracket of a mechanism with finite laws holds the exact curves (mpmath, from the
    laws; tests/tradeoff_reference.py): the lower bounds lie below the curve of the law the
    upper side is computed from (randomized response for the epsilon-DP selections), the upper
    ones above the curve of the realized compositions' common profile."""
    mechanism = FINITE[kind](epsilon)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        pld = P(mechanism).self_compose(count) if count > 1 else P(mechanism)
        realized = reference.realized_laws(mechanism, count)
        above = reference.upper_laws(mechanism, count)
        highest = reference.Curve(realized)
        lowest = reference.Curve(above) if above else None
        f = pld.tradeoff_bounds(LOG_ALPHA)
        rate = pld.true_positive_rate_bounds(LOG_ALPHA)
        sides = {d: pld.tradeoff_bounds(LOG_ALPHA, direction=d) for d in ("remove", "add")}
        advantage = pld.advantage_bounds()
    for i, alpha in enumerate(LOG_ALPHA):
        top = highest(alpha)
        assert f.upper[i] >= top - 1e-13, (alpha, f.upper[i], float(top))
        assert rate.lower[i] <= (1 - top) * (1 + 1e-12), (alpha, rate.lower[i], float(1 - top))
        if lowest is not None:
            bottom = lowest(alpha)
            assert f.lower[i] <= bottom + 1e-13, (alpha, f.lower[i], float(bottom))
            assert rate.upper[i] >= (1 - bottom) * (1 - 1e-12), (alpha, rate.upper[i])
    for j, (direction, side) in enumerate(sides.items()):
        top = reference.Curve(realized[j::2], one_direction=True)
        bottom = reference.Curve(above[j::2], one_direction=True) if above else None
        for i, alpha in enumerate(LOG_ALPHA):
            assert side.upper[i] >= top(alpha) - 1e-13, (direction, alpha)
            assert bottom is None or side.lower[i] <= bottom(alpha) + 1e-13, (direction, alpha)
    assert advantage.lower <= max(law.delta(0) for law in realized) + 1e-13
    assert above is None or advantage.upper >= max(law.delta(0) for law in above) - 1e-13


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_one_direction_upper_bound_reads_every_realized_composition(direction):
    # each realized composition bounds f from above; one direction's curve read only the
    # first of them, up to 0.02 above the smallest for five steps of ExponentialMechanism(1),
    # and the add direction left out the symmetric pair (lead -1), which has one law for both
    mechanism = plda.ExponentialMechanism(1.0)
    alpha = np.linspace(0.0, 1.0, 41)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NotTightWarning: the analysis gap, not the subject
        ours = plda.PrivacyLossDistribution.from_mechanism(mechanism, 5).tradeoff_bounds(
            alpha, direction=direction)
        each = [plda.PrivacyLossDistribution.from_mechanism(pair, 5).tradeoff_bounds(
            alpha, direction=direction).upper for pair in mechanism.lower_bound_mechanisms()]
    assert np.all(ours.upper <= np.min(each, axis=0) + 1e-12)
    assert np.all(ours.lower <= ours.upper)
