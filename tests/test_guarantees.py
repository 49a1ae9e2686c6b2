"""Guarantees imported as composable steps (issue 29, item 3): ``PrivacyProfile``,
``TradeoffCurve``, ``GaussianDP``, ``ZCDP``, ``RenyiDP``, against exact references computed in
mpmath (``guarantee_reference.py``), and their argument checks."""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from guarantee_reference import (
    cks_delta,
    gaussian_delta,
    kov_delta,
    profile_delta,
    profile_lines,
    tradeoff_atoms,
    zcdp_delta,
)
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis_settings import examples
from scipy.stats import norm

import plda
from plda.mechanisms import renyi_conversion
from plda.mechanisms.privacy_profile import envelope_law
from plda.mechanisms.tradeoff_curve import curve_points, pessimistic_vertices

PLD = plda.PrivacyLossDistribution
DPS = 40
EPS = np.array([0.0, 0.3, 1.0, 2.5, 6.0])
TINY = 5e-324  # a delta below the smallest float is reported as it


def _bracket(pld, reference, epsilons=EPS):
    """``lower <= reference <= upper`` of ``delta`` at every epsilon (the reference in mpmath)."""
    bounds = pld.delta_bounds(epsilons)
    with mpmath.workdps(DPS):
        for e, lower, upper in zip(epsilons, bounds.lower, bounds.upper, strict=True):
            exact = reference(float(e))
            assert lower <= exact * (1 + 1e-12) + 1e-300, (e, lower, exact)
            assert exact <= upper * (1 + 1e-12) + 1e-300, (e, exact, upper)
            assert lower <= upper
    return bounds


def _hockey_stick(law, eps):
    """``delta(eps)`` of an atom law, in mpmath."""
    eps = mpmath.mpf(eps)
    total = mpmath.mpf(law.infinity_mass)
    for loss, p in zip(law.atom_losses, law.atom_probs, strict=True):
        if loss > eps:
            total += mpmath.mpf(p) * -mpmath.expm1(eps - mpmath.mpf(loss))
    return total


# ------------------------------------------------------------------- PrivacyProfile
@pytest.mark.parametrize(("epsilon", "delta"), [
    (1.0, 1e-5), (0.0, 0.1), (3.0, 0.0), (0.25, 1e-300), (700.0, 1e-3), (800.0, 0.2),
    (1.0, 1.0), (1e-9, 0.5),
])
def test_one_point_profile_is_approximate_dp_bit_for_bit(epsilon, delta):
    ours = plda.PrivacyProfile(epsilons=[epsilon], deltas=[delta])
    theirs = plda.ApproximateDP(epsilon, delta)
    for direction in ("remove", "add"):
        a, b = ours.privacy_loss(direction), theirs.privacy_loss(direction)
        assert np.array_equal(a.atom_losses, b.atom_losses)
        assert np.array_equal(a.atom_probs, b.atom_probs)
        assert (a.infinity_mass, a.neg_infinity_mass) == (b.infinity_mass, b.neg_infinity_mass)
    if epsilon < 100:
        x, y = PLD.from_mechanism(ours, 3), PLD.from_mechanism(theirs, 3)
        assert np.array_equal(x.delta(EPS), y.delta(EPS))
        assert x.epsilon_bounds(1e-6) == y.epsilon_bounds(1e-6)


@pytest.mark.parametrize(("epsilon", "delta", "count"), [(1.0, 1e-5, 5), (0.3, 1e-3, 20),
                                                         (2.0, 0.0, 3)])
def test_one_point_profile_composes_as_kairouz_oh_viswanath(epsilon, delta, count):
    pld = PLD.from_mechanism(plda.PrivacyProfile(epsilons=[epsilon], deltas=[delta]), count)
    _bracket(pld, lambda e: kov_delta(epsilon, delta, count, e))


PROFILES = [
    ((0.5, 1.0, 2.0), (1e-2, 1e-4, 1e-8)),
    ((0.0, 0.1, 3.0), (0.3, 0.05, 0.0)),
    ((0.2, 0.4, 0.6, 0.8), (0.2, 0.2, 0.01, 0.005)),  # a repeated delta, a redundant point
    ((1.0, 4.0), (1e-3, 1e-3)),  # the second point is implied by the first
]


@pytest.mark.parametrize(("epsilons", "deltas"), PROFILES)
@pytest.mark.parametrize("count", [1, 3])
def test_profile_composes_as_its_tight_pair(epsilons, deltas, count):
    """The brute-force tradeoff function (every line, every crossing) in mpmath, its pair's
    atoms and their exact k-fold composition."""
    pld = PLD.from_mechanism(plda.PrivacyProfile(epsilons=epsilons, deltas=deltas), count)
    _bracket(pld, lambda e: profile_delta(epsilons, deltas, count, e))


@pytest.mark.parametrize(("epsilons", "deltas"), PROFILES)
def test_profile_pair_meets_every_point_and_no_more(epsilons, deltas):
    law = envelope_law(epsilons, deltas)
    with mpmath.workdps(120):
        atoms, inf_p, neg_inf_q = tradeoff_atoms(profile_lines(epsilons, deltas))
        assert abs(law.infinity_mass - inf_p) < 1e-15
        assert abs(law.neg_infinity_mass - neg_inf_q) < 1e-15
        for e, d in zip(epsilons, deltas, strict=True):
            assert _hockey_stick(law, e) <= d + 1e-15
        # the brute-force pair's masses, loss by loss
        reference = sorted((float(loss), float(p)) for loss, p in atoms)
        ours = sorted((float(loss), float(p)) for loss, p in
                      zip(law.atom_losses, law.atom_probs, strict=True) if p > 0)
        assert len(ours) == len(reference)
        for (l1, p1), (l2, p2) in zip(ours, reference, strict=True):
            assert l1 == pytest.approx(l2, abs=1e-12) and p1 == pytest.approx(p2, abs=1e-14)


def test_profile_with_epsilons_beyond_the_float_range_of_e_to_the_eps():
    """At eps = 1000 the low side's positions (~e^-1000) underflow; the envelope is found in
    logs and the mirrored outcomes keep their mass."""
    epsilons, deltas = (1.0, 800.0, 1000.0, 2000.0), (0.1, 1e-5, 1e-9, 0.0)
    law = envelope_law(epsilons, deltas)
    assert law.atom_probs.sum() + law.infinity_mass == pytest.approx(1, abs=1e-12)
    with mpmath.workdps(DPS):
        for e, d in zip(epsilons, deltas, strict=True):
            assert _hockey_stick(law, e) <= d + 1e-15
        assert abs(_hockey_stick(law, 800.0) - mpmath.mpf(1e-5)) < 1e-15  # tight there
    lower, upper = PLD.from_mechanism(plda.ZCDP(rho=1e3)).epsilon_bounds(1e-6)
    with mpmath.workdps(DPS):
        assert gaussian_delta(math.sqrt(2e3), upper) <= 1e-6  # the Gaussian is rho-zCDP
    assert 0 < lower <= upper


def test_a_sampled_profile_keeps_the_q_mass_of_its_far_low_side():
    """At eps = 1000 the low side's P-mass (~e^-1000) underflows, and its Q-mass (the mirror's
    P-mass) read 0 * e^1000 = NaN: a Poisson-sampled RenyiDP((1.0000001, 1e6), (1e-9, 1e3))
    raised FloatingPointError, and at rate 0.1 the sampled pair lost 90% of P (its delta_bounds
    came out inverted). That Q-mass is kept as a Q-only outcome now."""
    law = envelope_law((1.0, 1000.0), (0.1, 1e-9))
    with np.errstate(over="ignore", invalid="ignore"):
        q = np.where(law.atom_probs > 0, law.atom_probs * np.exp(-law.atom_losses), 0.0)
    assert q.sum() + law.neg_infinity_mass == pytest.approx(1, abs=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.PLDAWarning)
        step = plda.PoissonSampled(plda.RenyiDP((1.0000001, 1e6), (1e-9, 1e3)), 0.5)
        bounds = PLD.from_mechanism(step).epsilon_bounds(1e-5)
        assert 0 <= bounds.lower <= bounds.upper <= 1000.001
        sampled = plda.PoissonSampled(plda.RenyiDP((1e6,), (1e3,)), 0.1)
        for direction in ("remove", "add"):
            law = sampled.privacy_loss(direction)
            assert law.atom_probs.sum() + law.infinity_mass == pytest.approx(1, abs=1e-9)
        # one of three steps picks the record (0.271), and it then reveals it (loss ~1000)
        delta = PLD.from_mechanism(sampled, 3).delta_bounds([0.0, 0.2])
        assert np.all(delta.lower <= delta.upper) and np.all(delta.upper >= 0.27)
        # the randomized response of eps = 800 alike (its outcome at -800 underflows)
        for direction in ("remove", "add"):
            law = plda.PoissonSampled(plda.ApproximateDP(800.0), 0.1).privacy_loss(direction)
            assert law.atom_probs.sum() + law.infinity_mass == pytest.approx(1, abs=1e-9)


@pytest.mark.parametrize("epsilon", [1e20, 1e150])
@pytest.mark.parametrize("steps", [1, 2, 1000])
def test_a_law_with_one_finite_loss_far_from_zero_is_on_a_grid_that_fits(epsilon, steps):
    """Past epsilon 708 ApproximateDP keeps only its atom at +epsilon (its Q-mass at -inf):
    the pilot's step, set by the law's width alone, put that atom at grid index 1e22 (past
    int64), and epsilon_bounds answered [0, 0] under the truth k epsilon."""
    bounds = PLD.from_mechanism(plda.ApproximateDP(epsilon, 0.0), steps).epsilon_bounds(1e-5)
    assert bounds.lower <= steps * epsilon <= bounds.upper <= steps * epsilon * (1 + 1e-9)
    accountant = plda.PLDAccountant()  # the accountant's entry point alike
    accountant.compose(plda.ApproximateDP(epsilon, 0.0), steps)
    bounds = accountant.epsilon_bounds(1e-5)
    assert bounds.lower <= steps * epsilon <= bounds.upper <= steps * epsilon * (1 + 1e-9)
    # the same atom as RenyiDP's profile (the lower bound is GaussianDP(1e15)'s: far below)
    bounds = PLD.from_mechanism(plda.RenyiDP((2.0,), (epsilon,)), steps).epsilon_bounds(1e-5)
    assert 0 < bounds.lower <= bounds.upper and bounds.upper >= steps * epsilon


@pytest.mark.parametrize("epsilon", [708.5, 709.0, 709.75])
@pytest.mark.parametrize("steps", [1, 2])
def test_a_subnormal_low_side_stays_out_of_the_lower_bound(epsilon, steps):
    """Between epsilon 708.4 and 709.78 the P-mass at -epsilon is subnormal, not 0: it was
    charged to +inf like an underflowed one, in the law both bounds come from, so the lower
    bounds passed the truth: delta(1e4) = 0 came out >= 1.2e-308, epsilon(1e-308) as inf."""
    for step in (plda.ApproximateDP(epsilon, 0.0), plda.PrivacyProfile((epsilon,), (0.0,))):
        # the privacy profile's envelope alike: its low side's P-mass is now read from its
        # mirror (high e^-eps, 50+ bits), where the difference it came from may have none
        pld = PLD.from_mechanism(step, steps)
        assert pld.delta_bounds(1e4).lower == 0.0  # no loss above k epsilon
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", plda.AccuracyWarning)
            bounds = pld.epsilon_bounds(1e-308)  # the truth is k epsilon (up to 1e-308)
        assert bounds.lower <= steps * epsilon <= bounds.upper
    # one step of the profile with a floor: epsilon at the floor delta is epsilon, not inf
    # (two steps have 2e-300 at +inf: inf is the truth there)
    pld = PLD.from_mechanism(plda.PrivacyProfile((epsilon,), (1e-300,)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.AccuracyWarning)
        assert pld.epsilon_bounds(1e-300).lower <= epsilon


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("epsilon", [1e20, 1e150])
@pytest.mark.parametrize("steps", [1, 2, 1000])
def test_one_finite_loss_far_from_zero_fits_the_chernoff_grid_too(epsilon, steps):
    """Below the FFT's reach (delta 1e-300) the answer comes from the Chernoff moments of a
    coarse far-tail grid, whose step (width / 2048, at least 1e-12) put the lone atom at index
    1e32: int64 overflowed, the upper bound was 0 (an InvertedBracketError at 2 steps)."""
    pld = PLD.from_mechanism(plda.ApproximateDP(epsilon, 0.0), steps)
    for bounds in (pld.epsilon_bounds(1e-300), pld.epsilon_bounds(np.array([1e-300, 0.5]))):
        lower, upper = np.atleast_1d(bounds.lower), np.atleast_1d(bounds.upper)
        assert np.all(lower <= steps * epsilon) and np.all(upper >= steps * epsilon)
        assert np.all(upper <= steps * epsilon * (1 + 1e-9))


@st.composite
def profiles(draw):
    n = draw(st.integers(1, 6))
    eps = sorted(set(draw(st.lists(st.floats(0, 8), min_size=n, max_size=n))))
    deltas = sorted(draw(st.lists(st.floats(0, 0.5), min_size=len(eps), max_size=len(eps))),
                    reverse=True)
    return eps, deltas


@given(profiles())
@examples(40)
def test_profile_law_is_a_pair_meeting_its_profile(profile):
    epsilons, deltas = profile
    law = envelope_law(epsilons, deltas)
    p = law.atom_probs
    q = p * np.exp(-law.atom_losses)
    assert np.all(p >= 0)
    assert p.sum() + law.infinity_mass == pytest.approx(1, abs=1e-12)
    assert q.sum() + law.neg_infinity_mass == pytest.approx(1, abs=1e-12)
    assert np.all(np.diff(law.atom_losses) > 0)
    with mpmath.workdps(30):
        for e, d in zip(epsilons, deltas, strict=True):
            assert _hockey_stick(law, e) <= d + 1e-12


@given(profiles())
@example(([0.0, 0.5, 1.0, 1.5, 4.0], [0.5, 0.5, 0.5, 1.1754943508222875e-38, 0.0]))  # 1e-40 wide
@examples(25)
def test_composed_profile_brackets_the_brute_force_pair(profile):
    epsilons, deltas = profile
    pld = PLD.from_mechanism(plda.PrivacyProfile(epsilons=epsilons, deltas=deltas), 2)
    with mpmath.workdps(30):
        _bracket(pld, lambda e: profile_delta(epsilons, deltas, 2, e), np.array([0.0, 1.0, 5.0]))


# ------------------------------------------------------------------- GaussianDP
@pytest.mark.parametrize(("mu", "count"), [(1.0, 1), (0.5, 10), (0.05, 400), (3.0, 2)])
def test_gaussian_dp_is_the_gaussian_mechanism(mu, count):
    ours = PLD.from_mechanism(plda.GaussianDP(mu=mu), count)
    theirs = PLD.from_mechanism(plda.Gaussian(sigma=1 / mu), count)
    a, b = ours.delta_bounds(EPS), theirs.delta_bounds(EPS)
    # the same law, merged with the Gaussians (mu^2 adds up): the same bounds
    assert np.allclose(a.lower, b.lower, rtol=1e-12, atol=0)
    assert np.allclose(a.upper, b.upper, rtol=1e-12, atol=0)
    a, b = ours.epsilon_bounds(1e-6), theirs.epsilon_bounds(1e-6)
    assert a.lower == pytest.approx(b.lower, rel=1e-12)
    assert a.upper == pytest.approx(b.upper, rel=1e-12)
    _bracket(ours, lambda e: gaussian_delta(mu * math.sqrt(count), e))


def test_gaussian_dp_zero_reveals_nothing():
    pld = PLD.from_mechanism(plda.GaussianDP(mu=0), 7)
    assert np.all(pld.delta(EPS) == 0) and pld.epsilon(1e-9) == 0
    mixed = PLD((( plda.GaussianDP(mu=0), 3), (plda.Gaussian(sigma=2.0), 4)))
    _bracket(mixed, lambda e: gaussian_delta(1.0, e))


# ------------------------------------------------------------------- TradeoffCurve
def _g(mu, alpha):
    return norm.cdf(norm.ppf(1 - np.asarray(alpha)) - mu)


@pytest.mark.parametrize("alpha", [
    np.linspace(0, 1, 41)[:-1], np.logspace(-9, 0, 150)[:-1], np.array([0.05, 0.3, 0.7]),
])
@pytest.mark.parametrize("symmetric", [True, False])
def test_curve_sampled_on_a_gaussian_is_never_below_it(alpha, symmetric):
    mu = 1.0
    beta = _g(mu, alpha)
    xs, ys = pessimistic_vertices(*curve_points(alpha, beta))
    fine = np.linspace(0, 1, 20001)
    assert np.all(np.interp(fine, xs, ys) <= _g(mu, fine) + 1e-12)  # below the true curve
    assert np.all(np.interp(alpha, xs, ys) <= beta + 1e-15)  # and the given points
    pld = PLD.from_mechanism(plda.TradeoffCurve(alpha=alpha, beta=beta, symmetric=symmetric))
    bounds = pld.delta_bounds(EPS)
    with mpmath.workdps(DPS):
        for e, upper in zip(EPS, bounds.upper, strict=True):
            assert gaussian_delta(mu, e) <= upper  # certified: at least the true delta
    assert np.all(bounds.lower <= bounds.upper)


@given(st.floats(0.05, 4.0), st.lists(st.floats(1e-12, 1 - 1e-9), min_size=1, max_size=30,
                                      unique=True), st.booleans())
@example(1.0, [1e-12, 1.0000000000000002e-12], False)  # a chord too short to extend
@example(0.125, [0.5, 1.0000000000000002e-12, 1e-12], False)
@examples(30)
def test_curve_sampled_anywhere_is_pessimistic_and_bracketed(mu, alpha, symmetric):
    alpha = np.array(sorted(alpha))
    beta = _g(mu, alpha)
    xs, ys = pessimistic_vertices(*curve_points(alpha, beta))
    fine = np.union1d(np.linspace(0, 1, 2001), alpha)
    assert np.all(np.interp(fine, xs, ys) <= _g(mu, fine) + 1e-12)
    assert np.all(np.diff(ys) <= 0) and xs[0] == 0 and (xs[-1], ys[-1]) == (1, 0)
    pld = PLD.from_mechanism(plda.TradeoffCurve(alpha=alpha, beta=beta, symmetric=symmetric))
    bounds = pld.delta_bounds(EPS)  # raises InvertedBracketError if lower > upper
    assert np.all(bounds.upper >= [float(gaussian_delta(mu, e)) * (1 - 1e-12) for e in EPS])


def test_curve_on_the_pieces_of_a_randomized_response_is_that_response():
    """Points on each linear piece of f_(eps, delta): the pessimistic curve is f itself."""
    e, d = 1.0, 1e-3
    corner = (1 - d) / (1 + math.exp(e))
    alpha = np.array([0.0, corner / 2, corner, (corner + 1 - d) / 2, 1 - d])
    beta = np.maximum.reduce([np.zeros(5), 1 - d - math.exp(e) * alpha,
                              math.exp(-e) * (1 - d - alpha)])
    step = plda.TradeoffCurve(alpha=alpha, beta=beta)
    ours, theirs = step.privacy_loss(), plda.ApproximateDP(e, d).privacy_loss()
    with mpmath.workdps(DPS):  # the same pair, up to the rounding kept pessimistic
        for x in (-2.0, -1.0, -0.5, 0.0, 0.5, 0.999, 2.0):
            assert 0 <= _hockey_stick(ours, x) - _hockey_stick(theirs, x) < 1e-14
    _bracket(PLD.from_mechanism(step, 4), lambda x: kov_delta(e, d, 4, x))


def test_curve_one_way_is_the_remove_direction():
    """A curve of the remove pair only: the add direction is its reverse, so the PLD (worse
    direction) matches the mechanism whose remove tradeoff it is, up to the pessimistic step."""
    step = plda.PoissonSampled(plda.Gaussian(sigma=1.0), sample_rate=0.2)
    alpha = np.union1d(np.logspace(-12, -0.5, 300), 1 - np.logspace(-12, -0.5, 300))
    reference = PLD.from_mechanism(step)
    beta = reference.tradeoff(alpha, direction="remove")
    curve = PLD.from_mechanism(plda.TradeoffCurve(alpha=alpha, beta=beta, symmetric=False))
    assert np.all(curve.delta(EPS[:4]) >= reference.delta_bounds(EPS[:4]).lower)
    assert curve.epsilon(1e-5) == pytest.approx(reference.epsilon(1e-5), rel=0.05)


# ------------------------------------------------------------------- ZCDP and RenyiDP
@pytest.mark.parametrize("rho", [0.005, 0.125, 2.0])
def test_zcdp_step_between_its_gaussian_and_the_conversion(rho):
    pld = PLD.from_mechanism(plda.ZCDP(rho=rho))
    bounds = pld.delta_bounds(EPS)
    with mpmath.workdps(DPS):
        for e, lower, upper in zip(EPS, bounds.lower, bounds.upper, strict=True):
            gauss = gaussian_delta(math.sqrt(2 * rho), e)
            assert lower <= gauss * (1 + 1e-12) <= upper * (1 + 1e-12)
            assert upper <= max(zcdp_delta(rho, e) * (1 + 1e-6), TINY)  # TINY: underflow


@pytest.mark.parametrize(("rho", "count"), [(0.125, 10), (0.005, 100), (0.01, 1000)])
def test_composed_zcdp_never_looser_than_summed_rho(rho, count):
    pld = PLD.from_mechanism(plda.ZCDP(rho=rho), count)
    total = rho * count
    with mpmath.workdps(DPS):
        for e, upper in zip(EPS, pld.delta(EPS), strict=True):
            assert upper <= zcdp_delta(total, e) * (1 + 1e-6)
            assert gaussian_delta(math.sqrt(2 * total), e) <= upper * (1 + 1e-12)
    lower, upper = pld.epsilon_bounds(1e-5)
    assert lower <= upper
    # mixed with Gaussian currencies: still one zCDP composition
    mixed = PLD(((plda.ZCDP(rho=rho), count), (plda.GaussianDP(mu=0.5), 2),
                 (plda.Gaussian(sigma=4.0), 8)))
    total += 2 * 0.125 + 8 / 32
    with mpmath.workdps(DPS):
        for e, upper in zip(EPS, mixed.delta(EPS), strict=True):
            assert upper <= zcdp_delta(total, e) * (1 + 1e-6)


def test_the_accountant_takes_the_summed_rho_too():
    accountant = plda.PLDAccountant()
    accountant.compose(plda.ZCDP(rho=0.05), 10)
    accountant.compose(plda.Gaussian(sigma=2.0), 1)
    pld = PLD(((plda.ZCDP(rho=0.05), 10), (plda.Gaussian(sigma=2.0), 1)))
    with mpmath.workdps(DPS):
        conversion = zcdp_delta(0.625, 2.0)
    assert accountant.delta(2.0) <= conversion * (1 + 1e-6)
    assert accountant.epsilon(1e-6) == pytest.approx(pld.epsilon(1e-6), rel=1e-6)


def test_zcdp_with_a_sampler_is_composed_through_its_pair():
    """Not a zCDP composition (a Poisson-sampled step): the PLD of the pairs, no conversion."""
    pld = PLD(((plda.ZCDP(rho=0.1), 3),
               (plda.PoissonSampled(plda.Gaussian(sigma=1.0), sample_rate=0.01), 100)))
    lower, upper = pld.epsilon_bounds(1e-5)
    assert 0 < lower <= upper < math.inf


def test_beside_a_training_run_never_looser_than_rdp_of_the_whole():
    """A zCDP part beside DP-SGD: the pairs alone gave 4.6156 at delta 1e-6 where RDP
    accounting of the whole gives 4.2747; the answer takes the smaller."""
    run = plda.PoissonSampled(plda.Gaussian(sigma=1.0), sample_rate=0.01)
    pld = PLD(((run, 1000), (plda.ZCDP(rho=0.05), 5)))
    lower, upper = pld.epsilon_bounds(1e-6)
    assert lower <= upper <= pld.renyi_epsilon(1e-6) * (1 + 1e-8)
    assert upper < 4.3
    accountant = plda.PLDAccountant()
    accountant.compose(run, 1000)
    accountant.compose(plda.ZCDP(rho=0.05), 5)
    assert accountant.epsilon(1e-6) <= pld.renyi_epsilon(1e-6) * (1 + 1e-8)
    assert pld.delta(upper) <= 1e-6 * (1 + 1e-6)


def test_renyi_steps_compose_in_their_own_currency():
    orders, epsilons = (2.0, 4.0, 8.0), (0.1, 0.3, 0.9)
    step = plda.RenyiDP(orders=orders, epsilons=epsilons)
    pld = PLD.from_mechanism(step, 4)
    curve = pld.renyi(np.array([1.5, 2.0, 3.0, 8.0, 9.0]))
    assert curve == pytest.approx([0.4, 0.4, 1.2, 3.6, math.inf])  # the next stated order's
    with mpmath.workdps(DPS):
        for e, upper in zip(EPS, pld.delta(EPS), strict=True):
            best = min(cks_delta(a, 4 * r, e) for a, r in zip(orders, epsilons, strict=True))
            assert upper <= best * (1 + 1e-6)


def test_a_sampled_zcdp_step_takes_its_lower_bound_from_the_sampled_gaussian():
    """The converted pair is not rho-zCDP: sampled, its lower bound would not hold for a
    sampled rho-zCDP step; the sampled Gaussian with the same rho is one, and gives it."""
    step = plda.PoissonSampled(plda.ZCDP(rho=0.5), sample_rate=0.01)
    assert not step.tight
    gaussian = plda.PoissonSampled(plda.GaussianDP(mu=1.0), sample_rate=0.01)
    assert step.lower_bound_mechanisms() == (gaussian,)
    lower, upper = PLD.from_mechanism(step, 100).epsilon_bounds(1e-6)
    reference = PLD.from_mechanism(gaussian, 100).epsilon_bounds(1e-6)
    assert lower <= reference.upper and reference.lower <= upper
    assert plda.PoissonSampled(plda.PrivacyProfile(epsilons=[1.0], deltas=[0.0]), 0.1).tight


@pytest.mark.parametrize(("orders", "epsilons"), [
    ((2.0, 4.0, 8.0, 16.0, 32.0), (0.2, 0.4, 0.8, 1.6, 3.2)),  # rho = 0.1 at five orders
    ((1.5, 3.0, 10.0), (0.5, 0.6, 2.0)),  # not linear: each order on its own
])
def test_renyi_dp_between_its_gaussian_and_each_order(orders, epsilons):
    pld = PLD.from_mechanism(plda.RenyiDP(orders=orders, epsilons=epsilons), 3)
    bounds = pld.delta_bounds(EPS)
    mu = math.sqrt(3 * min(2 * e / a for a, e in zip(orders, epsilons, strict=True)))
    with mpmath.workdps(DPS):
        for e, lower, upper in zip(EPS, bounds.lower, bounds.upper, strict=True):
            assert lower <= gaussian_delta(mu, e) * (1 + 1e-12) <= upper * (1 + 1e-12)
    single = PLD.from_mechanism(plda.RenyiDP(orders=orders, epsilons=epsilons))
    with mpmath.workdps(DPS):
        for e, upper in zip(EPS, single.delta(EPS), strict=True):
            # never above the best order's conversion by more than one grid step in epsilon
            best = min(cks_delta(a, r, max(e - 0.01 * (1 + e), 0))
                       for a, r in zip(orders, epsilons, strict=True))
            assert upper <= best


def test_zero_rho_and_zero_renyi_reveal_nothing():
    assert PLD.from_mechanism(plda.ZCDP(rho=0), 5).epsilon(1e-9) == 0
    assert PLD.from_mechanism(plda.RenyiDP(orders=[2.0], epsilons=[0.0]), 5).epsilon(1e-9) == 0


# ------------------------------------------------------------------- composing currencies
def test_every_currency_composes_with_a_training_run():
    run = plda.PoissonSampled(plda.Gaussian(sigma=1.0), sample_rate=0.01)
    alpha = np.logspace(-8, 0, 60)[:-1]
    parts = [
        plda.PrivacyProfile(epsilons=[0.5, 1.0], deltas=[1e-5, 1e-7]),
        plda.TradeoffCurve(alpha=alpha, beta=_g(0.3, alpha)),
        plda.GaussianDP(mu=0.3),
        plda.ZCDP(rho=0.01),
        plda.RenyiDP(orders=[2.0, 8.0], epsilons=[0.05, 0.2]),
    ]
    base = PLD.from_mechanism(run, 200)
    before = base.epsilon_bounds(1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for part in parts:
            lower, upper = base.compose(PLD.from_mechanism(part)).epsilon_bounds(1e-6)
            assert before.lower <= lower <= upper and before.upper < upper < math.inf
            lower, upper = PLD(((run, 200), (part, 1)), "replace_one").epsilon_bounds(1e-6)
            assert lower <= upper


# ------------------------------------------------------------------- bad input
BAD = [
    (lambda: plda.PrivacyProfile(epsilons=[1.0, 0.5], deltas=[1e-3, 1e-4]), ValueError,
     "epsilons must be strictly increasing"),
    (lambda: plda.PrivacyProfile(epsilons=[0.5, 1.0], deltas=[1e-4, 1e-3]), ValueError,
     "deltas must be non-increasing"),
    (lambda: plda.PrivacyProfile(epsilons=[-1.0], deltas=[0.1]), ValueError, "epsilons must be"),
    (lambda: plda.PrivacyProfile(epsilons=[1.0], deltas=[1.5]), ValueError, r"deltas must be in"),
    (lambda: plda.PrivacyProfile(epsilons=[1.0], deltas=[-0.1]), ValueError, r"deltas must be"),
    (lambda: plda.PrivacyProfile(epsilons=[float("nan")], deltas=[0.1]), ValueError, "epsilons"),
    (lambda: plda.PrivacyProfile(epsilons=[math.inf], deltas=[0.1]), ValueError, "epsilons"),
    (lambda: plda.PrivacyProfile(epsilons=[1.0, 2.0], deltas=[0.1]), ValueError, "same length"),
    (lambda: plda.PrivacyProfile(epsilons=[], deltas=[]), ValueError, "epsilons must hold"),
    (lambda: plda.PrivacyProfile(epsilons=1.0, deltas=[0.1]), TypeError, "epsilons"),
    (lambda: plda.PrivacyProfile(epsilons=["1"], deltas=[0.1]), TypeError, "epsilons"),
    (lambda: plda.TradeoffCurve(alpha=[0.1, 0.2, 0.3], beta=[0.8, 0.75, 0.5]), ValueError,
     "beta must be convex"),
    (lambda: plda.TradeoffCurve(alpha=[0.1, 0.2], beta=[0.5, 0.6]), ValueError,
     "beta must be non-increasing"),
    (lambda: plda.TradeoffCurve(alpha=[0.5], beta=[0.6]), ValueError, r"1 - alpha"),
    (lambda: plda.TradeoffCurve(alpha=[0.1, 0.2], beta=[0.85, 0.5]), ValueError, "f\\(0\\) <= 1"),
    (lambda: plda.TradeoffCurve(alpha=[0.2, 0.1], beta=[0.5, 0.6]), ValueError,
     "alpha must be strictly increasing"),
    (lambda: plda.TradeoffCurve(alpha=[1.5], beta=[0.0]), ValueError, r"alpha must be in"),
    (lambda: plda.TradeoffCurve(alpha=[0.5], beta=[-0.1]), ValueError, "beta must be in"),
    (lambda: plda.TradeoffCurve(alpha=[0.5], beta=[0.1, 0.0]), ValueError, "same length"),
    (lambda: plda.TradeoffCurve(alpha=[0.5], beta=[float("nan")]), ValueError, "beta"),
    (lambda: plda.TradeoffCurve(alpha=[0.5], beta=[0.1], symmetric="yes"), TypeError,
     "symmetric must be a bool"),
    (lambda: plda.GaussianDP(mu=-1.0), ValueError, "mu must be"),
    (lambda: plda.GaussianDP(mu=float("nan")), ValueError, "mu must be"),
    (lambda: plda.GaussianDP(mu=1e-200), ValueError, "mu must be in"),
    (lambda: plda.GaussianDP(mu="1"), TypeError, "mu must be"),
    (lambda: plda.ZCDP(rho=-0.1), ValueError, "rho must be"),
    (lambda: plda.ZCDP(rho=math.inf), ValueError, "rho must be"),
    (lambda: plda.ZCDP(rho=None), TypeError, "rho must be"),
    (lambda: plda.RenyiDP(orders=[1.0], epsilons=[0.1]), ValueError, "orders must be above 1"),
    (lambda: plda.RenyiDP(orders=[2.0], epsilons=[-0.1]), ValueError,
     r"epsilons must be in \[0, 1e\+150\]"),
    (lambda: plda.RenyiDP(orders=[2.0, 3.0], epsilons=[0.1]), ValueError, "same length"),
    (lambda: plda.RenyiDP(orders=[math.inf], epsilons=[0.1]), ValueError, "orders"),
    (lambda: plda.RenyiDP(orders=2.0, epsilons=0.1), TypeError, "sequences"),
    (lambda: PLD.from_mechanism(plda.Gaussian(1e-15), relation="replace_one"), ValueError,
     r"sensitivity / sigma must be at most 5e\+14 under relation='replace_one'"),
]


@pytest.mark.parametrize(("build", "error", "match"), BAD)
def test_bad_input_is_named(build, error, match):
    with pytest.raises(error, match=match):
        build()


@pytest.mark.parametrize("rho", [1e-301, 5e-324])
def test_a_rho_below_the_gaussian_range_has_the_trivial_lower_bound(rho):
    """sqrt(2 rho) below 1e-150 made the lower-bound Gaussian refuse its "mu"; a larger mu
    would be more than rho-zCDP, so the certified lower bound is 0 there."""
    assert plda.ZCDP(rho).lower_bound_mechanism() == plda.GaussianDP(0.0)
    bounds = PLD.from_mechanism(plda.ZCDP(rho), 2).delta_bounds([0.0, 1e-3])
    assert np.all(bounds.lower == 0.0) and np.all(bounds.upper < 1e-6)


# ------------------------------------------------------------------- records and adapters
def test_imported_guarantees_round_trip_through_json_and_the_accountant():
    import json

    from plda.serialization import mechanism_from_dict, mechanism_to_dict

    steps = (
        plda.ZCDP(rho=0.1), plda.GaussianDP(mu=0.5),
        plda.PrivacyProfile(epsilons=[1.0, 2.0], deltas=[1e-6, 1e-9]),
        plda.RenyiDP(orders=[2.0, 4.0], epsilons=[0.3, 0.7]),
        plda.TradeoffCurve(alpha=[0.1, 0.5], beta=[0.6, 0.2], symmetric=False),
    )
    accountant = plda.PLDAccountant()
    for step in steps:
        assert mechanism_from_dict(json.loads(json.dumps(mechanism_to_dict(step)))) == step
        accountant.compose(step)
    restored = plda.PLDAccountant.from_state_dict(json.loads(json.dumps(accountant.state_dict())))
    assert restored.delta_bounds(3.0) == accountant.delta_bounds(3.0)


def test_zcdp_event_maps_to_zcdp():
    from plda.adapters.dp_accounting import XI_ORDERS, mechanisms_from_dp_event

    class ZCDpEvent:  # duck-typed: dp_accounting is optional
        def __init__(self, rho, xi=0.0):
            self.rho, self.xi = rho, xi

    assert mechanisms_from_dp_event(ZCDpEvent(0.2)) == ((plda.ZCDP(rho=0.2), 1),)
    (step, count), = mechanisms_from_dp_event(ZCDpEvent(0.2, 0.1))
    assert count == 1 and step == plda.RenyiDP(
        orders=XI_ORDERS, epsilons=tuple(0.1 + 0.2 * a for a in XI_ORDERS))
    with pytest.raises(ValueError, match="rho"):
        mechanisms_from_dp_event(ZCDpEvent(-0.2))
    with pytest.raises(ValueError, match="xi"):
        mechanisms_from_dp_event(ZCDpEvent(0.2, -1.0))


def test_zcdp_events_against_dp_accounting_rdp():
    dpa = pytest.importorskip("dp_accounting")
    from plda.adapters import PLDPrivacyAccountant
    from plda.adapters.dp_accounting import from_dp_event

    event = dpa.ComposedDpEvent([dpa.SelfComposedDpEvent(dpa.ZCDpEvent(0.05), 10),
                                 dpa.GaussianDpEvent(2.0)])
    rdp = dpa.rdp.RdpAccountant().compose(event).get_epsilon(1e-6)
    lower, upper = from_dp_event(event).epsilon_bounds(1e-6)
    assert lower <= upper <= rdp * (1 + 1e-9)  # summed rho converted, at finer orders
    assert PLDPrivacyAccountant().compose(event).get_epsilon(1e-6) == pytest.approx(upper, 1e-9)
    with_xi = dpa.ZCDpEvent(0.1, 0.2)
    rdp = dpa.rdp.RdpAccountant().compose(with_xi).get_epsilon(1e-6)
    assert from_dp_event(with_xi).epsilon(1e-6) <= rdp * (1 + 1e-9)


def test_stated_guarantees_at_the_ends_of_plda_range():
    """Each answered, or refused naming the user's argument (once 'mu', 'sensitivity / sigma'
    or a bare 'math domain error' surfaced from a mechanism plda built internally)."""
    pld = plda.PrivacyLossDistribution.from_mechanism
    # rho below 5e-301: the lower-bound Gaussian (mu = sqrt(2 rho)) is below MU_RANGE
    assert pld(plda.ZCDP(1e-310), 3).epsilon_bounds(1e-5).upper == 0.0
    # three GaussianDP(1e15) merge to mu = 1.7e15, beyond what one Gaussian holds: composed
    # step by step instead; k mu^2 / 2 is the leading term of epsilon
    bounds = pld(plda.GaussianDP(1e15), 3).epsilon_bounds(1e-5)
    assert bounds.lower <= 1.5e30 * (1 + 1e-9) and bounds.upper >= 1.5e30
    assert bounds.upper <= 1.5e30 * (1 + 1e-9)
    with pytest.raises(ValueError, match=r"epsilons must be in \[0, 1e\+150\]"):
        plda.RenyiDP((2.0,), (1e200,))
    # a Renyi bound far above plda's Gaussian range: its lower-bound Gaussian is capped
    bounds = pld(plda.RenyiDP((2.0,), (1e150,)), 2).epsilon_bounds(1e-5)
    assert 0 < bounds.lower <= bounds.upper


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_a_converted_delta_above_one_is_one_without_an_overflow():
    """The Renyi / zCDP conversions read delta as e^(log delta): past log delta = 709 (rho 1e9,
    or the zCDP cap of GaussianDP(1e8)) that overflowed with a RuntimeWarning before the cap
    at 1 took it."""
    delta = renyi_conversion.renyi_delta((2.0,), (1e6,), np.array([0.0, 1.0]))
    assert np.all(delta == 1.0)
    assert np.all(renyi_conversion.zcdp_delta(1e9, np.array([0.0, 1e4])) == 1.0)
    for step, count in ((plda.ZCDP(1e6), 1000), (plda.GaussianDP(1e8), 1)):
        bounds = PLD.from_mechanism(step, count).delta_bounds(np.array([0.0, 1.0, 1e4]))
        assert np.all(bounds.upper == 1.0) and np.all(bounds.lower <= 1.0)
