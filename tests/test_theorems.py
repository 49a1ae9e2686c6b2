"""Tests of plda.theorems: closed forms by hand, exact enumerations in mpmath, property tests."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
import warnings
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis_settings import examples

from plda import theorems


@pytest.fixture(autouse=True)
def _precision():
    """This module's mpmath precision, set per test: a module-level assignment would leak into
    (and be overwritten by) the modules collected after it."""
    with mp.workdps(50):
        yield


# --------------------------------------------------------------------------- exact references


def rr_composition_delta_by_outcomes(epsilon0, delta0, k, eps):
    """delta(eps) of k-fold RR_(eps0, delta0) straight from the definition of RR (Vadhan & Wang,
    Def. 3): sum over all 4^k outputs y of (P(y) - e^eps Q(y))_+ ."""
    e0, d0 = mp.mpf(epsilon0), mp.mpf(delta0)
    hi, lo = (1 - d0) * mp.e**e0 / (1 + mp.e**e0), (1 - d0) / (1 + mp.e**e0)
    p_single = (d0, hi, lo, mp.mpf(0))  # outputs 'Iam0', 0, 1, 'Iam1' under b = 0
    q_single = (mp.mpf(0), lo, hi, d0)  # ... and under b = 1
    total = mp.mpf(0)
    factor = mp.e ** mp.mpf(eps)
    for y in itertools.product(range(4), repeat=k):
        p = mp.fprod(p_single[j] for j in y)
        q = mp.fprod(q_single[j] for j in y)
        total += max(mp.mpf(0), p - factor * q)
    return total


def kov_binomial_delta(epsilon0, delta0, k, eps):
    """KOV's closed form (their Thm 3.3) in mpmath."""
    e0, d0, eps = mp.mpf(epsilon0), mp.mpf(delta0), mp.mpf(eps)
    rr = mp.mpf(0)
    for i in range(k + 1):
        if (k - 2 * i) * e0 > eps:
            rr += mp.binomial(k, i) * (mp.e ** ((k - i) * e0) - mp.e ** (eps + i * e0))
    rr /= (1 + mp.e**e0) ** k
    return 1 - (1 - d0) ** k * (1 - rr)


def kov_binomial_delta_window(epsilon0, delta0, k, eps):
    """The same sum for huge k: walk down from the largest contributing i until terms are
    1e-40 of the largest (the terms are unimodal); a_{i-1} = a_i i e^eps0 / (k - i + 1)."""
    e0, d0, epsm = mp.mpf(epsilon0), mp.mpf(delta0), mp.mpf(eps)
    top = max(
        i
        for i in range(max(0, int((k - eps / epsilon0) / 2) - 3), k // 2 + 2)
        if (k - 2 * i) * e0 > epsm
    )
    log_a = mp.log(mp.binomial(k, top)) + (k - top) * e0 - k * mp.log(1 + mp.e**e0)
    a, ratio = mp.e**log_a, mp.e**e0
    total, largest = mp.mpf(0), mp.mpf(0)
    for i in range(top, -1, -1):
        term = a * (-mp.expm1(epsm - (k - 2 * i) * e0))
        total += term
        largest = max(largest, term)
        if term < largest * mp.mpf(10) ** -40:
            break
        a *= i * ratio / (k - i + 1)
    return 1 - (1 - d0) ** k * (1 - total)


class HeterogeneousOptimum:
    """Optimal delta(eps) for heterogeneous steps: the composition of RR_(eps_i, delta_i)
    (Murtagh & Vadhan 2016), enumerated over the 2^n finite-loss sign patterns in mpmath."""

    def __init__(self, steps):
        keep = mp.fprod(1 - mp.mpf(d) for _, d in steps)
        self.infinity_mass = 1 - keep
        self.atoms = []
        for signs in itertools.product((1, -1), repeat=len(steps)):
            loss, prob = mp.mpf(0), keep
            for s, (e, _) in zip(signs, steps, strict=True):
                e = mp.mpf(e)
                loss += s * e
                prob *= (mp.e**e if s > 0 else 1) / (1 + mp.e**e)
            self.atoms.append((loss, prob))

    def __call__(self, eps):
        eps = mp.mpf(eps)
        total = self.infinity_mass
        for loss, prob in self.atoms:
            if loss > eps:
                total += prob * (1 - mp.e ** (eps - loss))
        return total


def solve_epsilon(delta_of, delta, hi):
    """Smallest eps in [0, hi] with delta_of(eps) <= delta, by bisection in mpmath."""
    if delta_of(0) <= delta:
        return mp.mpf(0)
    lo, hi = mp.mpf(0), mp.mpf(hi)
    for _ in range(70):  # 2^-70 relative: far below the certified gaps tested against
        mid = (lo + hi) / 2
        if delta_of(mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def engine_available() -> bool:
    try:
        import plda

        return hasattr(plda, "PrivacyLossDistribution") and hasattr(plda, "ApproximateDP")
    except ImportError:  # pragma: no cover
        return False


needs_engine = pytest.mark.skipif(not engine_available(), reason="PLD engine not available")

# --------------------------------------------------------------------------- basic, parallel


def test_basic_hand_values():
    result = theorems.basic([(0.5, 0.0), (0.25, 1e-6), (1.0, 2e-6)])
    assert result.epsilon == pytest.approx(1.75, rel=1e-15)
    assert result.delta == pytest.approx(3e-6, rel=1e-12)
    epsilon, delta = result  # unpacks like a tuple
    assert (epsilon, delta) == (result.epsilon, result.delta)
    assert result[0] == result.epsilon and len(result) == 2


def test_basic_sum_is_rounded_up():
    # 0.1 + 0.1 + 0.1 rounds below the exact sum of the three floats in naive summation
    result = theorems.basic([(0.1, 0.0)] * 3)
    assert Fraction(result.epsilon) >= 3 * Fraction(0.1)
    assert result.epsilon == pytest.approx(0.3, rel=1e-15)


def test_parallel_is_the_max():
    assert tuple(theorems.parallel([(0.5, 1e-6), (2.0, 0.0), (1.0, 1e-5)])) == (2.0, 1e-5)


# --------------------------------------------------------------------------- advanced


def test_advanced_drv10_hand_value():
    k, eps, slack = 30, 0.1, 0.02
    expected = math.sqrt(2 * k * math.log(1 / slack)) * eps + k * eps * (math.exp(eps) - 1)
    result = theorems.advanced([(eps, 0.001)] * k, slack)
    assert result.epsilon == pytest.approx(expected, rel=1e-14)
    assert result.epsilon >= expected
    assert result.delta == pytest.approx(k * 0.001 + slack, rel=1e-14)
    assert result.epsilon == pytest.approx(1.8475746992072686, rel=1e-12)


def test_advanced_heterogeneous_form():
    steps = [(0.1, 0.0), (0.2, 1e-6), (0.05, 0.0)]
    slack = 1e-5
    sum_sq = sum(e * e for e, _ in steps)
    drift = sum(e * math.expm1(e) for e, _ in steps)
    expected = math.sqrt(2 * math.log(1 / slack) * sum_sq) + drift
    result = theorems.advanced(steps, slack)
    assert result.epsilon == pytest.approx(expected, rel=1e-14)
    assert result.delta == pytest.approx(1e-6 + slack, rel=1e-14)


def test_privacy_filters_tutorial_numbers():
    """The Sherpa.ai tutorial (privacy-filters-tutorial.txt) prints 4.690004094900031 (k=3) and
    153.67357054267973 (k=350) for epsilon=0.5, delta'=0.1 and says advanced composition only
    catches up with basic composition near k=150. Those numbers come from a formula missing the
    factor epsilon in the square-root term; with DRV10 as stated the crossover is k=38."""

    def tutorial_formula(k):
        return math.sqrt(2 * k * math.log(1 / 0.1)) + k * 0.5 * (math.exp(0.5) - 1)

    assert tutorial_formula(3) == pytest.approx(4.690004094900031, rel=1e-15)
    assert tutorial_formula(350) == pytest.approx(153.67357054267973, rel=1e-15)
    assert min(k for k in range(1, 400) if tutorial_formula(k) < 0.5 * k) == 150

    def drv10(k):
        return theorems.advanced([(0.5, 0.0)] * k, 0.1).epsilon

    assert drv10(3) == pytest.approx(2.8315430004751163, rel=1e-12)
    assert drv10(350) == pytest.approx(133.59989645760132, rel=1e-12)
    crossover = min(k for k in range(1, 400) if drv10(k) < 0.5 * k)
    assert crossover == 38
    assert drv10(37) > 0.5 * 37 and drv10(38) < 0.5 * 38


def test_advanced_kov_hand_value():
    k, eps, slack = 30, 0.1, 0.02
    mean = k * eps * (math.exp(eps) - 1) / (math.exp(eps) + 1)
    second = mean + eps * math.sqrt(2 * k * math.log(math.e + math.sqrt(k * eps**2) / slack))
    third = mean + eps * math.sqrt(2 * k * math.log(1 / slack))
    result = theorems.advanced_kov([(eps, 0.001)] * k, slack)
    assert result.epsilon == pytest.approx(min(k * eps, second, third), rel=1e-14)
    assert result.delta == pytest.approx(1 - (1 - slack) * (1 - 0.001) ** k, rel=1e-12)


def test_kov_slides_theorem_one_as_transcribed_under_reports():
    """The slides' text gives min{k eps, k eps^2 + sqrt(k eps^2 log(e + 1/delta~))}; it falls below
    the exact optimum, so plda implements the paper's Theorem 3.4 instead (test below)."""
    k, eps, slack = 100, 0.05, 1.3737953997875098e-10
    transcribed = min(k * eps, k * eps**2 + math.sqrt(k * eps**2 * math.log(math.e + 1 / slack)))
    exact = theorems.kairouz_oh_viswanath(eps, 0.0, k, delta_total=slack)
    assert transcribed < exact.epsilon_lower - 0.3
    assert theorems.advanced_kov([(eps, 0.0)] * k, slack).epsilon >= exact.epsilon


@examples(60)
@given(
    k=st.integers(1, 300),
    eps=st.sampled_from([0.01, 0.05, 0.1, 0.3, 0.5, 1.0, 2.0, 4.0]),
    log_slack=st.floats(-14, -0.5),
)
def test_advanced_bounds_dominate_the_exact_optimum(k, eps, log_slack):
    slack = 10.0**log_slack
    exact = theorems.kairouz_oh_viswanath(eps, 0.0, k, delta_total=slack).epsilon
    kov = theorems.advanced_kov([(eps, 0.0)] * k, slack)
    drv = theorems.advanced([(eps, 0.0)] * k, slack)
    assert exact <= kov.epsilon
    assert exact <= drv.epsilon
    assert kov.epsilon <= drv.epsilon
    assert kov.delta <= drv.delta * (1 + 1e-14)


# --------------------------------------------------------------------------- KOV exact


@pytest.mark.parametrize(
    "epsilon0, delta0, k",
    [(0.4, 0.1, 1), (0.4, 0.1, 3), (0.1, 0.001, 4), (1.3, 0.0, 5), (0.7, 0.02, 5)],
)
def test_kov_formula_matches_enumeration_of_rr_outputs(epsilon0, delta0, k):
    for eps in [0.0, 0.05, 0.33, 0.8, 1.2, 2.5, k * epsilon0]:
        reference = rr_composition_delta_by_outcomes(epsilon0, delta0, k, eps)
        assert kov_binomial_delta(epsilon0, delta0, k, eps) == pytest.approx(
            reference, rel=1e-40, abs=1e-45
        )
        result = theorems.kairouz_oh_viswanath(epsilon0, delta0, k, epsilon_total=eps)
        assert float(reference) <= result.delta <= float(reference) * (1 + 1e-13) + 1e-300


@pytest.mark.parametrize(
    "epsilon0, delta0, k, delta_total",
    [
        (0.1, 0.001, 30, 0.031),
        (0.1, 0.001, 30, 0.05),
        (0.4, 0.1, 10, 0.7),
        (0.3, 0.0, 3, 7.944065501630349e-08),  # solution within 4e-7 of the largest loss
        (0.05, 1e-6, 200, 3e-4),
        (1.0, 0.0, 50, 1e-12),
        (2.0, 0.0, 7, 0.5),
    ],
)
def test_kov_epsilon_brackets_the_exact_solution(epsilon0, delta0, k, delta_total):
    result = theorems.kairouz_oh_viswanath(epsilon0, delta0, k, delta_total=delta_total)
    assert 0 <= result.epsilon_lower <= result.epsilon < math.inf
    assert result.epsilon - result.epsilon_lower <= 1e-12 * max(1.0, result.epsilon)
    assert kov_binomial_delta(epsilon0, delta0, k, result.epsilon) <= delta_total
    if result.epsilon_lower > 0:
        assert kov_binomial_delta(epsilon0, delta0, k, result.epsilon_lower) > delta_total
    back = theorems.kairouz_oh_viswanath(epsilon0, delta0, k, epsilon_total=result.epsilon)
    assert back.delta <= delta_total * (1 + 1e-12)


def test_kov_30_fold_reference_numbers():
    # the 30-fold (0.1, 0.001) example of the KOV slides, at delta_total = 30 * 0.001 + 0.001
    result = theorems.kairouz_oh_viswanath(0.1, 0.001, 30, delta_total=0.031)
    assert result.epsilon == pytest.approx(1.3933328993, rel=1e-9)
    result = theorems.kairouz_oh_viswanath(0.1, 0.001, 30, delta_total=0.05)
    assert result.epsilon == pytest.approx(0.8463026345, rel=1e-9)


def test_kov_edge_cases():
    # below the mass at +inf no epsilon works
    assert theorems.kairouz_oh_viswanath(0.1, 0.01, 10, delta_total=0.05).epsilon == math.inf
    # pure DP at delta 0: exactly k eps (an upper bound on the float product)
    result = theorems.kairouz_oh_viswanath(0.1, 0.0, 30, delta_total=0.0)
    assert Fraction(result.epsilon) >= 30 * Fraction(0.1)
    assert result.epsilon == pytest.approx(3.0, rel=1e-15)
    # epsilon0 = 0: loss is 0 whenever finite
    assert theorems.kairouz_oh_viswanath(0.0, 0.0, 10, delta_total=0.0).epsilon == 0.0
    assert theorems.kairouz_oh_viswanath(0.0, 1e-3, 10, delta_total=0.01).epsilon == 0.0
    # beyond the largest loss only the mass at +inf is left
    assert theorems.kairouz_oh_viswanath(0.1, 1e-3, 10, epsilon_total=5.0).delta == pytest.approx(
        1 - (1 - 1e-3) ** 10, rel=1e-14
    )
    # delta_total large enough: epsilon 0
    assert theorems.kairouz_oh_viswanath(0.1, 0.0, 10, delta_total=0.9).epsilon == 0.0


def test_kov_is_monotone():
    eps_by_delta = [
        theorems.kairouz_oh_viswanath(0.2, 1e-4, 100, delta_total=d).epsilon
        for d in [0.011, 0.02, 0.05, 0.1, 0.3]
    ]
    assert eps_by_delta == sorted(eps_by_delta, reverse=True)
    eps_by_k = [
        theorems.kairouz_oh_viswanath(0.2, 0.0, k, delta_total=1e-6).epsilon
        for k in [1, 2, 5, 10, 100, 1000]
    ]
    assert eps_by_k == sorted(eps_by_k)


@pytest.mark.slow
@pytest.mark.parametrize(
    "epsilon0, delta0, k, delta_total",
    [(0.001, 0.0, 10**6, 1e-6), (0.01, 1e-12, 10**6, 1e-5), (1e-4, 0.0, 10**6, 0.01)],
)
def test_kov_stable_for_a_million_steps(epsilon0, delta0, k, delta_total):
    result = theorems.kairouz_oh_viswanath(epsilon0, delta0, k, delta_total=delta_total)
    assert 0 < result.epsilon_lower <= result.epsilon < math.inf
    assert result.epsilon - result.epsilon_lower <= 1e-10 * result.epsilon
    assert kov_binomial_delta_window(epsilon0, delta0, k, result.epsilon) <= delta_total
    assert kov_binomial_delta_window(epsilon0, delta0, k, result.epsilon_lower) > delta_total
    exact = kov_binomial_delta_window(epsilon0, delta0, k, 1.0)
    upper = theorems.kairouz_oh_viswanath(epsilon0, delta0, k, epsilon_total=1.0).delta
    assert exact <= upper <= exact * (1 + 1e-10)


# --------------------------------------------------------------------------- optimal (engine)


@needs_engine
@pytest.mark.parametrize(
    "steps, delta",
    [
        ([(0.1, 0.0), (0.3, 1e-4), (0.5, 0.0), (0.2, 1e-3)], 0.01),
        ([(1.0, 0.0), (0.25, 0.0), (0.25, 0.0), (0.6, 1e-5), (0.05, 0.0)], 1e-3),
        ([(0.4, 0.1), (0.1, 0.0), (0.9, 0.01)], 0.2),
        ([(0.01, 0.0)] * 3 + [(0.7, 1e-6)] * 2 + [(0.3, 0.0)] * 2, 1e-4),
    ],
)
def test_optimal_brackets_exact_enumeration(steps, delta):
    result = theorems.optimal(steps, delta)
    exact = solve_epsilon(HeterogeneousOptimum(steps), delta, sum(e for e, _ in steps))
    assert result.epsilon_lower <= exact <= result.epsilon
    assert result.epsilon - result.epsilon_lower <= 1e-2 * result.epsilon


@needs_engine
@examples(8)
@given(
    k=st.integers(1, 200),
    eps=st.sampled_from([0.02, 0.1, 0.5, 1.0]),
    delta0=st.sampled_from([0.0, 1e-6, 1e-4]),
    log_slack=st.floats(-8, -1),
)
def test_pld_optimum_matches_kov_closed_form(k, eps, delta0, log_slack):
    delta_total = 1 - (1 - delta0) ** k + 10.0**log_slack
    exact = theorems.kairouz_oh_viswanath(eps, delta0, k, delta_total=delta_total)
    pld = theorems.optimal([(eps, delta0)] * k, delta_total, method="pld")
    assert pld.epsilon_lower <= exact.epsilon_lower + 1e-12
    assert exact.epsilon <= pld.epsilon + 1e-12


@needs_engine
@examples(8)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from([0.01, 0.1, 0.3, 1.0]), st.sampled_from([0.0, 1e-6, 1e-4])),
        min_size=1,
        max_size=4,
    ).map(lambda s: s * 5),
    log_slack=st.floats(-7, -1),
)
def test_optimal_is_below_basic_and_advanced(steps, log_slack):
    slack = 10.0**log_slack
    delta = math.fsum(d for _, d in steps) + slack
    result = theorems.optimal(steps, delta)
    assert result.epsilon <= theorems.basic(steps).epsilon * (1 + 1e-12)
    assert result.epsilon <= theorems.advanced(steps, slack).epsilon
    kov = theorems.advanced_kov(steps, slack)
    assert theorems.optimal(steps, kov.delta).epsilon <= kov.epsilon


@needs_engine
def test_optimal_pure_dp_at_delta_zero_is_basic():
    steps = [(0.1, 0.0)] * 5 + [(0.3, 0.0)] * 2
    result = theorems.optimal(steps, 0.0)
    assert result.epsilon == pytest.approx(1.1, rel=1e-12)
    assert result.epsilon_lower <= 1.1 + 1e-12


def test_optimal_exact_method_for_identical_steps():
    result = theorems.optimal([(0.1, 0.001)] * 30, 0.05)
    assert result.name == "optimal composition (KOV15, exact)"
    with pytest.raises(ValueError, match="identical steps"):
        theorems.optimal([(0.1, 0.0), (0.2, 0.0)], 0.05, method="exact")
    with pytest.raises(ValueError, match="method"):
        theorems.optimal([(0.1, 0.0)], 0.05, method="fast")


# --------------------------------------------------------------------------- concurrent


def test_concurrent_homogeneous_closed_form():
    k, eps, delta = 10, 0.2, 1e-6
    result = theorems.concurrent([(eps, delta)] * k)
    assert result.epsilon == pytest.approx(k * eps, rel=1e-14)
    expected = math.expm1(k * eps) / math.expm1(eps) * delta
    assert result.delta == pytest.approx(expected, rel=1e-12)
    assert result.delta >= expected * (1 - 1e-15)


@examples(60)
@given(
    st.lists(
        st.tuples(st.floats(0.0, 2.0), st.sampled_from([0.0, 1e-6, 1e-4, 1e-3, 0.01])),
        min_size=1,
        max_size=6,
    )
)
def test_concurrent_order_is_optimal(steps):
    def delta_g(order):
        prefix, total = 0.0, 0.0
        for e, d in order:
            total += math.exp(prefix) * d
            prefix += e
        return total

    best = min(1.0, min(delta_g(p) for p in itertools.permutations(steps)))
    result = theorems.concurrent(steps)
    assert result.delta == pytest.approx(best, rel=1e-9, abs=1e-300)
    assert result.delta >= best * (1 - 1e-12)


@needs_engine
def test_concurrent_pure_dp_uses_optimal_composition():
    steps = [(0.1, 0.0)] * 20
    result = theorems.concurrent(steps, 1e-5)
    assert "Cor 3" in result.name
    exact = theorems.kairouz_oh_viswanath(0.1, 0.0, 20, delta_total=1e-5)
    assert result.epsilon == exact.epsilon


def test_concurrent_approximate_dp_theorem_one():
    steps = [(0.1, 1e-4)] * 10
    delta_g = math.expm1(1.0) / math.expm1(0.1) * 1e-4
    assert theorems.concurrent(steps, delta_g * 1.01).epsilon == pytest.approx(1.0, rel=1e-14)
    assert theorems.concurrent(steps, delta_g * 0.99).epsilon == math.inf


# --------------------------------------------------------------------------- group privacy


def test_group_privacy_hand_values():
    result = theorems.group_privacy(0.5, 1e-6, 3)
    assert result.epsilon == pytest.approx(1.5, rel=1e-14)
    assert result.delta == pytest.approx((1 + math.exp(0.5) + math.exp(1.0)) * 1e-6, rel=1e-13)
    assert result.delta <= 3 * math.exp(2 * 0.5) * 1e-6  # the textbook k e^{(k-1) eps} delta
    assert tuple(theorems.group_privacy(0.5, 1e-6, 1)) == pytest.approx((0.5, 1e-6))
    assert theorems.group_privacy(0.0, 1e-6, 4).delta == pytest.approx(4e-6)
    assert theorems.group_privacy(1.0, 0.0, 4).delta == 0.0
    assert theorems.group_privacy(5.0, 0.1, 200).delta == 1.0  # capped: vacuous


@needs_engine
def test_group_privacy_of_gaussian_matches_closed_form():
    import plda

    sigma, group, delta = 4.0, 3, 1e-5
    mu = group / sigma

    def gaussian_delta(eps):
        eps = mp.mpf(eps)
        return mp.ncdf(-eps / mu + mu / 2) - mp.e**eps * mp.ncdf(-eps / mu - mu / 2)

    exact = solve_epsilon(gaussian_delta, delta, 50)
    result = theorems.group_privacy_mechanism(plda.Gaussian(sigma), delta, group)
    assert result.epsilon_lower <= exact <= result.epsilon
    # far tighter than group privacy applied to a single-record (eps, delta / 100)
    single = theorems.group_privacy_mechanism(plda.Gaussian(sigma), delta / 100, 1).epsilon
    generic = theorems.group_privacy(single, delta / 100, group)
    assert generic.delta <= delta
    assert result.epsilon < generic.epsilon


@needs_engine
def test_group_privacy_of_a_sampled_laplace_is_its_group_mixture():
    """Issue 26: the theorem no longer refuses a sampled Laplace; the exact group law is far
    below the post-hoc theorem applied to the one-record guarantee."""
    import plda

    step = plda.PoissonSampled(plda.Laplace(1.0), 0.1)
    result = theorems.group_privacy_mechanism(step, 1e-6, 3, count=10)
    exact = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Laplace(1.0), 0.1, group_size=3), 10).epsilon_bounds(1e-6)
    assert result.epsilon == exact.upper
    single = theorems.group_privacy_mechanism(step, 1e-6 / 100, 1, count=10).epsilon
    assert result.epsilon < theorems.group_privacy(single, 1e-6 / 100, 3).epsilon


@needs_engine
@pytest.mark.filterwarnings("ignore::plda.AccuracyWarning")  # epsilon at delta 0 is inf
def test_group_privacy_mechanism_takes_delta_then_group_size_and_the_old_order_warns():
    """Issue 25: group_privacy(epsilon, delta, group_size) and group_privacy_mechanism(mechanism,
    group_size, delta) ordered the two differently; the mechanism's now follows the theorem's.
    A call in the former order is told apart by its values and still answers, with a warning."""
    import plda

    step = plda.Gaussian(4.0)
    new = theorems.group_privacy_mechanism(step, 1e-5, 3)
    assert new == theorems.group_privacy_mechanism(step, delta=1e-5, group_size=3)
    assert new.delta == 1e-5 and new.epsilon == plda.PrivacyLossDistribution.from_mechanism(
        plda.Gaussian(4.0, sensitivity=3.0)).epsilon_bounds(1e-5).upper
    with pytest.warns(DeprecationWarning, match=r"0\.2\.0.*\(mechanism, delta, group_size\)"):
        old = theorems.group_privacy_mechanism(step, 3, 1e-5)
    assert old == new
    with pytest.warns(DeprecationWarning):
        assert theorems.group_privacy_mechanism(step, 3, 0.0) == (
            theorems.group_privacy_mechanism(step, 0.0, 3))
    # no valid call in the new order looks like the old one: no warning, the usual errors
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        theorems.group_privacy_mechanism(step, 0.5, 1)
        with pytest.raises(ValueError, match="delta"):
            theorems.group_privacy_mechanism(step, 1.0, 1)


@needs_engine
def test_group_privacy_mechanism_refuses_unsupported_mechanisms():
    import plda

    with pytest.raises(TypeError, match="sensitivity"):
        theorems.group_privacy_mechanism(plda.ApproximateDP(1.0, 1e-6), 1e-5, 2)
    with pytest.raises(TypeError, match="Gaussian or Laplace base only"):
        theorems.group_privacy_mechanism(plda.PoissonSampled(plda.DiscreteLaplace(1.0), 0.1),
                                         1e-5, 2)
    with pytest.raises(TypeError, match="mechanism"):
        theorems.group_privacy_mechanism((1.0, 1e-6), 1e-5, 2)
    with pytest.raises(ValueError, match="group_size"):
        theorems.group_privacy_mechanism(plda.Gaussian(1.0), 1e-5, 0)


# --------------------------------------------------------------------------- compare


@needs_engine
def test_compare_30_fold_example():
    table = theorems.compare([(0.1, 0.001)] * 30, 0.031)
    rows = {r.theorem: r for r in table.rows}
    assert rows["basic"].epsilon == pytest.approx(3.0)
    assert rows["advanced (DRV10)"].epsilon == pytest.approx(
        theorems.advanced([(0.1, 0.001)] * 30, 0.001).epsilon, rel=1e-12
    )
    exact = rows["optimal, exact (KOV)"]
    pld = rows["optimal, PLD"]
    assert pld.epsilon_lower <= exact.epsilon_lower <= exact.epsilon <= pld.epsilon
    assert exact.epsilon == pytest.approx(1.3933328993, rel=1e-9)
    assert not rows["concurrent (VW21)"].applicable
    for row in table.rows:
        if row.applicable:
            assert row.epsilon >= exact.epsilon_lower
    text = str(table)
    for name in rows:
        assert name in text
    assert "delta' = delta - sum delta_i" in text
    records = table.to_records()
    assert [r["theorem"] for r in records] == [r.theorem for r in table.rows]
    as_dict = table.to_dict()
    assert as_dict["delta"] == 0.031
    assert as_dict["steps"] == [{"epsilon": 0.1, "delta": 0.001, "count": 30}]


@needs_engine
def test_compare_marks_inapplicable_theorems():
    table = theorems.compare([(0.1, 0.001)] * 30, 0.02)  # delta < sum delta_i = 0.03
    rows = {r.theorem: r for r in table.rows}
    for name in ["basic", "advanced (DRV10)", "advanced (KOV)", "concurrent (VW21)"]:
        assert rows[name].epsilon == math.inf
        assert not rows[name].applicable
        assert "not applicable" in rows[name].note
    assert rows["optimal, PLD"].epsilon == math.inf  # below 1 - (1 - 0.001)^30


@needs_engine
def test_compare_pure_dp_heterogeneous():
    steps = [(0.1, 0.0)] * 5 + [(0.3, 0.0)] * 2
    table = theorems.compare(steps, 1e-3)
    rows = {r.theorem: r for r in table.rows}
    assert "optimal, exact (KOV)" not in rows
    assert rows["concurrent (VW21)"].epsilon == rows["optimal, PLD"].epsilon
    assert table.optimum.theorem == "optimal, PLD"
    assert theorems.compare([(0.1, 0.0)] * 10, 1e-3).optimum.theorem == "optimal, exact (KOV)"


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: theorems.basic([]), "steps"),
        (lambda: theorems.basic([(-0.1, 0.0)]), r"epsilon of steps\[0\]"),
        (lambda: theorems.basic([(0.1, 0.0), (math.nan, 0.0)]), r"epsilon of steps\[1\]"),
        (lambda: theorems.basic([(math.inf, 0.0)]), "epsilon"),
        (lambda: theorems.basic([(0.1, 1.0)]), r"delta of steps\[0\] must be in \[0, 1\)"),
        (lambda: theorems.basic([(0.1, -1e-9)]), "delta"),
        (lambda: theorems.basic([(0.1, math.nan)]), "delta"),
        (lambda: theorems.advanced([(0.1, 0.0)], 0.0), r"delta_slack must be in \(0, 1\)"),
        (lambda: theorems.advanced([(0.1, 0.0)], 1.0), "delta_slack"),
        (lambda: theorems.advanced_kov([(0.1, 0.0)], -0.1), "delta_slack"),
        (lambda: theorems.kairouz_oh_viswanath(0.1, 0.0, 0, delta_total=0.1), "k must be"),
        (lambda: theorems.kairouz_oh_viswanath(0.1, 0.0, 2.5, delta_total=0.1), "k must be"),
        (lambda: theorems.kairouz_oh_viswanath(-1, 0.0, 2, delta_total=0.1), "epsilon"),
        (lambda: theorems.kairouz_oh_viswanath(0.1, 1.5, 2, delta_total=0.1), "delta"),
        (lambda: theorems.kairouz_oh_viswanath(0.1, 0.0, 2, delta_total=1.0), "delta_total"),
        (lambda: theorems.kairouz_oh_viswanath(0.1, 0.0, 2), "exactly one"),
        (
            lambda: theorems.kairouz_oh_viswanath(0.1, 0.0, 2, delta_total=0.1, epsilon_total=1),
            "exactly one",
        ),
        (lambda: theorems.kairouz_oh_viswanath(0.1, 0.0, 2, epsilon_total=-1.0), "epsilon_total"),
        (lambda: theorems.optimal([(0.1, 0.0)], 1.0), "delta"),
        (lambda: theorems.concurrent([(0.1, 0.0)], -0.5), "delta"),
        (lambda: theorems.group_privacy(0.1, 0.0, 0), "group_size"),
        (lambda: theorems.group_privacy(0.1, 0.0, 1.5), "group_size"),
        (lambda: theorems.group_privacy(math.nan, 0.0, 2), "epsilon"),
        (lambda: theorems.compare([(0.1, 0.0)], 1.0), "delta"),
    ],
)
def test_bad_input_raises_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize(
    "call",
    [
        lambda: theorems.basic("0.1"),
        lambda: theorems.basic([0.1, 0.2]),
        lambda: theorems.basic([("a", 0.0)]),
        lambda: theorems.kairouz_oh_viswanath(0.1, 0.0, True, delta_total=0.1),
        lambda: theorems.group_privacy(0.1, None, 2),
    ],
)
def test_wrong_types_raise_type_error(call):
    with pytest.raises(TypeError):
        call()


def test_long_step_lists_name_the_bad_entry():
    steps = [(0.1, 1e-9)] * 100 + [(-1.0, 0.0)]
    with pytest.raises(ValueError, match=r"epsilon of steps\[100\]"):
        theorems.basic(steps)
    assert theorems.basic([(0.1, 1e-9)] * 1000).epsilon == pytest.approx(100.0, rel=1e-14)


def test_steps_accept_approximate_dp_objects():
    class Step:
        epsilon, delta = 0.2, 1e-6

    assert tuple(theorems.basic([Step(), Step()])) == pytest.approx((0.4, 2e-6))


# --------------------------------------------------------------------------- plot


def test_composition_comparison_plot():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from plda.plot.composition import composition_comparison

    fig, ax = plt.subplots()
    out = composition_comparison(0.1, 0.001, 12, 0.001, ax=ax)
    assert out is ax
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[:4] == [
        "basic composition",
        "advanced composition (DRV10)",
        "KOV bound (Thm 3.4)",
        "optimal (KOV exact)",
    ]
    optimal_line = ax.get_lines()[3].get_ydata()
    basic_line = ax.get_lines()[0].get_ydata()
    assert np.all(optimal_line <= basic_line)
    with pytest.raises(ValueError, match="delta_slack"):
        composition_comparison(0.1, 0.01, 100, 0.5, ax=ax)
    plt.close(fig)


def test_importing_theorems_does_not_import_matplotlib():
    code = (
        "import sys, plda.theorems, plda.plot.composition; "
        "sys.exit(1 if 'matplotlib' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# ------------------------------------------------- issue 12, item 8: the exact edges
def test_optimal_at_a_delta_equal_to_the_delta_mass():
    # delta = 1 - prod(1 - delta_i) exactly: only the +inf mass is left at sum(eps_i), so
    # basic composition holds there (it returned inf because the mass was rounded up)
    one = theorems.optimal([(0.5, 1e-3)], 1e-3)
    assert one.epsilon == 0.5
    two = theorems.optimal([(0.5, 0.25)] * 2, 1 - 0.75**2)
    assert two.epsilon == 1.0 and two.epsilon_lower <= 1.0
    assert theorems.optimal([(0.5, 1e-3)], 1e-3, method="pld").epsilon == 0.5
    # just below the mass no finite epsilon holds
    assert theorems.optimal([(0.5, 1e-3)], 0.999e-3).epsilon == math.inf
    assert theorems.kairouz_oh_viswanath(0.5, 0.25, 2, delta_total=1 - 0.75**2).epsilon == 1.0


def test_optimal_by_pld_is_capped_by_basic_composition():
    steps = [(0.5, 1e-3), (0.2, 1e-4)]
    mass = 1 - (1 - 1e-3) * (1 - 1e-4)
    result = theorems.optimal(steps, mass * (1 + 1e-12), method="pld")
    assert result.epsilon <= 0.7 * (1 + 1e-15)


def test_adaptivity_is_stated_for_the_fixed_parameter_theorems():
    fixed = (theorems.advanced, theorems.advanced_kov, theorems.kairouz_oh_viswanath)
    for theorem in (*fixed, theorems.optimal):
        assert "fixed before the" in " ".join(theorem.__doc__.split())
