"""Tests for plda.filters: filters, odometer, guarded queries, comparison.

Each filter is checked against an independent high-precision (mpmath) evaluation of its theorem's
condition on adaptively chosen sequences; counts of allowed steps are checked in closed form.
"""

from __future__ import annotations

import functools
import math
import subprocess
import sys
import threading
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis_settings import examples

import plda
from plda import filters as F
from plda.filters import (
    AdvancedFilter,
    BasicFilter,
    BudgetExceededError,
    GaussianFilter,
    ImprovedAdvancedFilter,
    Odometer,
    PrivateQueries,
    RenyiFilter,
    samplers,
)

mp.mp.dps = 40
EPS, DELTA = 1.0, 1e-6


def dec(x) -> mp.mpf:
    """The decimal a float prints as (how the filters read amounts)."""
    return mp.mpf(repr(float(x)))


# ====================================================== independent conditions (mpmath)


def basic_ok(steps, epsilon, delta):
    return sum(Fraction(repr(e)) for e, _ in steps) <= Fraction(repr(epsilon)) and sum(
        Fraction(repr(d)) for _, d in steps
    ) <= Fraction(repr(delta))


def rruv_k(steps, epsilon, delta):
    eg, dg = mp.mpf(epsilon), mp.mpf(delta)
    h = eg**2 / (mp.mpf("28.04") * mp.log(1 / dg))
    s2 = mp.fsum(dec(e) ** 2 for e, _ in steps)
    drift = mp.fsum(dec(e) * mp.expm1(dec(e)) / 2 for e, _ in steps)
    return drift + mp.sqrt((s2 + h) * (2 + mp.log(s2 / h + 1)) * mp.log(2 / dg))


def rruv_ok(steps, epsilon, delta, slack=0):
    dsum = sum(Fraction(repr(d)) for _, d in steps)  # exact decimals, as the filter reads them
    if dsum > Fraction(repr(delta)) / 2:
        return False
    return rruv_k(steps, epsilon, delta) <= epsilon * (1 + slack)


def wrrw_value(steps, log_term):
    v = mp.fsum(dec(e) ** 2 for e, _ in steps)
    return mp.sqrt(2 * log_term * v) + v / 2


def wrrw_ok(steps, epsilon, delta, step_delta, slack=0):
    log_term = mp.log(1 / (mp.mpf(delta) - mp.mpf(step_delta)))
    dsum = sum(Fraction(repr(d)) for _, d in steps)
    if dsum > Fraction(repr(step_delta)):
        return False
    return wrrw_value(steps, log_term) <= epsilon * (1 + slack)


def zcdp_epsilon(rho, delta):
    """min over alpha of the CKS20 conversion: a grid, then golden-section refinement."""
    rho, delta = mp.mpf(rho), mp.mpf(delta)
    if rho == 0:
        return mp.mpf(0)
    centre = mp.sqrt(mp.log(1 / delta) / rho)

    def at(t):
        a = 1 + centre * mp.e**t
        return a * rho + mp.log(1 - 1 / a) - (mp.log(delta) + mp.log(a)) / (a - 1)

    grid = [mp.mpf(t) for t in np.linspace(-4, 4, 161)]
    best = min(grid, key=at)
    lo, hi = best - mp.mpf("0.05"), best + mp.mpf("0.05")
    ratio = (mp.sqrt(5) - 1) / 2
    for _ in range(150):
        x1, x2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        lo, hi = (lo, x2) if at(x1) < at(x2) else (x1, hi)
    return min(at((lo + hi) / 2), rho + 2 * mp.sqrt(rho * mp.log(1 / delta)))


def gdp_delta(mu, epsilon):
    mu, epsilon = mp.mpf(mu), mp.mpf(epsilon)
    return mp.ncdf(-epsilon / mu + mu / 2) - mp.e**epsilon * mp.ncdf(-epsilon / mu - mu / 2)


def rho_of(step):
    epsilon, delta, rho, mu = step
    options = []
    if rho is not None:
        options.append(dec(rho))
    if mu is not None:
        options.append(dec(mu) ** 2 / 2)
    if epsilon is not None and delta == 0:
        options.append(dec(epsilon) ** 2 / 2)
    return min(options)


def mu2_of(step):
    epsilon, delta, rho, mu = step
    options = []
    if mu is not None:
        options.append(dec(mu) ** 2)
    if epsilon is not None and delta == 0:
        e = mp.mpf(epsilon)
        options.append((2 * mp.sqrt(2) * mp.erfinv(mp.tanh(e / 2))) ** 2)
    return min(options)


# ====================================================== adaptive property tests

FILTER_KINDS = ["basic", "rruv", "wrrw", "renyi", "gaussian"]


def make_filter(kind):
    return {
        "basic": lambda: BasicFilter(EPS, DELTA),
        "rruv": lambda: AdvancedFilter(EPS, DELTA),
        "wrrw": lambda: ImprovedAdvancedFilter(EPS, DELTA, step_delta=4e-7),
        "renyi": lambda: RenyiFilter(EPS, DELTA),
        "gaussian": lambda: GaussianFilter(EPS, DELTA),
    }[kind]()


def independent_ok(kind, f, steps, slack=0):
    """Whether the theorem's condition holds for ``steps`` (4-tuples epsilon, delta, rho, mu)."""
    if kind == "basic":
        return basic_ok([(e, d) for e, d, _, _ in steps], EPS, DELTA)
    if kind == "rruv":
        return rruv_ok([(e, d) for e, d, _, _ in steps], EPS, DELTA, slack)
    if kind == "wrrw":
        return wrrw_ok([(e, d) for e, d, _, _ in steps], EPS, DELTA, 4e-7, slack)
    if kind == "renyi":
        # the total keeps the guarantee iff its conversion is at most the budget
        return mp.fsum(rho_of(s) for s in steps) <= largest_rho() * (1 + slack)
    return mp.fsum(mu2_of(s) for s in steps) <= largest_mu() ** 2 * (1 + slack)


@functools.cache
def largest_rho():
    """Largest zCDP total whose (mpmath) conversion is at most EPS at DELTA."""
    lo, hi = mp.mpf(0), mp.mpf(EPS)
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if zcdp_epsilon(mid, DELTA) <= EPS else (lo, mid)
    return lo


@functools.cache
def largest_mu():
    """Largest mu with mu-GDP implying (EPS, DELTA)-DP (mpmath)."""
    lo, hi = mp.mpf(0), mp.mpf(5)
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gdp_delta(mid, EPS) <= DELTA else (lo, mid)
    return lo


@pytest.mark.parametrize("kind", FILTER_KINDS)
@examples(25)
@given(data=st.data())
def test_adaptive_sequences_never_exceed_the_theorem(kind, data):
    f = make_filter(kind)
    accepted = []
    for _ in range(data.draw(st.integers(1, 25), label="rounds")):
        # the analyst looks at what is left and the answers so far, then picks the next step
        left = f.remaining()
        factor = data.draw(st.floats(0.05, 1.6), label="factor")
        shape = data.draw(st.sampled_from(["pure", "approx", "gaussian"]), label="shape")
        epsilon = max(left * factor, 1e-4)
        delta, rho, mu = 0.0, None, None
        if shape == "approx" and kind in ("basic", "rruv", "wrrw"):
            delta = data.draw(st.sampled_from([1e-8, 5e-8, 2e-7]), label="delta")
        if shape == "gaussian" and kind in ("renyi", "gaussian"):
            mu = data.draw(st.floats(0.005, 0.3), label="mu")
            rho, epsilon = mu * mu / 2, None
        step = (epsilon, delta, rho, mu)
        history_before, spent_before = f.history, f.spent
        try:
            f.spend(epsilon=epsilon, delta=delta, rho=rho, mu=mu)
        except BudgetExceededError as refused:
            assert f.history == history_before and f.spent == spent_before
            assert refused.spent == spent_before
            # refused only when the exact condition fails (or sits within the safety margin)
            assert not independent_ok(kind, f, [*accepted, step], slack=-1e-8)
        else:
            accepted.append(step)
        assert independent_ok(kind, f, accepted)
        assert len(f.history) == len(accepted)


# ====================================================== exact counts


def spend_until_refused(f, **step):
    n = 0
    while True:
        try:
            f.spend(**step)
        except BudgetExceededError:
            return n
        n += 1


def test_basic_counts_are_exact_decimals():
    assert spend_until_refused(BasicFilter(1.0), epsilon=0.1) == 10
    assert spend_until_refused(BasicFilter(1.0), epsilon=0.3) == 3
    assert spend_until_refused(BasicFilter(0.3), epsilon=0.1) == 3
    # the step deltas run out first: 3 x 3e-6 <= 1e-5 < 4 x 3e-6
    assert spend_until_refused(BasicFilter(1.0, 1e-5), epsilon=0.1, delta=3e-6) == 3
    f = BasicFilter(1.0)
    assert f.steps_left(epsilon=0.1) == 10
    for _ in range(10):
        f.spend(epsilon=0.1)
    assert f.spent.epsilon_sum == 1.0 and f.remaining() == 0.0


def test_rruv_count_matches_independent_evaluation():
    for step in (0.01, 0.03, 0.1):
        k = 0
        while rruv_ok([(step, 0.0)] * (k + 1), EPS, DELTA):
            k += 1
        assert spend_until_refused(AdvancedFilter(EPS, DELTA), epsilon=step) == k
        assert AdvancedFilter(EPS, DELTA).steps_left(epsilon=step) == k
    assert k == 1  # at eps0 = 0.1 the RRUV filter allows one step only


@pytest.mark.parametrize("step_delta", [0.0, 5e-7])
def test_wrrw_count_is_the_closed_form(step_delta):
    log_term = mp.log(1 / (mp.mpf(DELTA) - mp.mpf(step_delta)))
    v_max = (mp.sqrt(2 * log_term + 2) - mp.sqrt(2 * log_term)) ** 2
    f = ImprovedAdvancedFilter(EPS, DELTA, step_delta=step_delta)
    for step in (0.001, 0.01, 0.05):
        assert f.steps_left(epsilon=step) == int(mp.floor(v_max / dec(step) ** 2))
    assert spend_until_refused(f, epsilon=0.05) == int(mp.floor(v_max / mp.mpf("0.0025")))


def test_renyi_counts_from_rho():
    f = RenyiFilter.from_rho(0.5, DELTA)
    assert f.rho == 0.5
    assert spend_until_refused(f, rho=0.1) == 5
    assert RenyiFilter.from_rho(0.5, DELTA).steps_left(epsilon=0.5) == 4  # rho = 0.125 each
    assert RenyiFilter.from_rho(0.5, DELTA).steps_left(mu=0.5) == 4
    assert math.isclose(f.epsilon, float(zcdp_epsilon(0.5, DELTA)), rel_tol=1e-6)


def test_gaussian_counts_from_mu():
    assert spend_until_refused(GaussianFilter.from_mu(1.0, DELTA), mu=0.5) == 4
    assert GaussianFilter.from_mu(1.0, DELTA).steps_left(mu=0.3) == 11
    f = GaussianFilter.from_mu(1.0, DELTA)
    assert gdp_delta(1.0, f.epsilon) <= DELTA
    assert gdp_delta(1.0, f.epsilon * (1 - 1e-6)) > DELTA  # and it is the smallest


def test_budgets_of_renyi_and_gaussian_filters_are_tight():
    r = RenyiFilter(EPS, DELTA)
    assert zcdp_epsilon(r.rho, DELTA) <= EPS
    assert zcdp_epsilon(r.rho * (1 + 1e-6), DELTA) > EPS * (1 - 1e-6)
    g = GaussianFilter(EPS, DELTA)
    assert gdp_delta(g.mu, EPS) <= DELTA
    assert gdp_delta(g.mu * (1 + 1e-6), EPS) > DELTA


@pytest.mark.parametrize("kind", FILTER_KINDS)
def test_steps_left_agrees_with_spending(kind):
    for step in (0.02, 0.07):
        f = make_filter(kind)
        f.spend(epsilon=0.013)
        expected = f.steps_left(epsilon=step)
        assert spend_until_refused(f, epsilon=step) == expected


@pytest.mark.parametrize("kind", FILTER_KINDS)
def test_remaining_is_the_largest_pure_step(kind):
    f = make_filter(kind)
    f.spend(epsilon=0.02)
    left = f.remaining()
    assert left > 0
    assert f.can_spend(epsilon=left)
    assert not f.can_spend(epsilon=math.nextafter(left, math.inf) * (1 + 1e-9))
    f.spend(epsilon=left)
    assert f.remaining() < 1e-6 * EPS


# ====================================================== validity against the optimum


@pytest.mark.slow
def test_no_filter_allows_more_than_the_optimal_composition():
    # any valid filter must stop k RR(eps0) steps run non-adaptively at k with epsilon <= EPS;
    # the engine's certified *lower* bound makes a violation provable
    for step in (0.02, 0.1):
        for make in F.FILTER_COLUMNS.values():
            k = make(EPS, DELTA).steps_left(epsilon=step)
            if k == 0:
                continue
            pld = plda.PrivacyLossDistribution.from_mechanism(plda.ApproximateDP(step))
            lower, _ = pld.self_compose(k).epsilon_bounds(DELTA)
            assert lower <= EPS


# ====================================================== bad input


BAD_STEPS = [
    (dict(epsilon=-0.1), ValueError),
    (dict(epsilon=float("nan")), ValueError),
    (dict(epsilon=float("inf")), ValueError),
    (dict(epsilon=True), TypeError),
    (dict(epsilon="0.1"), TypeError),
    (dict(epsilon=0.1, delta=-1e-9), ValueError),
    (dict(epsilon=0.1, delta=float("nan")), ValueError),
    (dict(epsilon=0.1, delta=DELTA), ValueError),  # delta >= the filter's delta
    (dict(epsilon=0.1, delta=0.5), ValueError),
    (dict(), ValueError),
    (dict(delta=1e-8, rho=0.01), ValueError),  # delta without epsilon
    (dict(rho=-1.0), ValueError),
    (dict(mu=float("nan")), ValueError),
    (dict(epsilon=0.1, label=3), TypeError),
]


@pytest.mark.parametrize("kind", FILTER_KINDS)
@pytest.mark.parametrize("step,error", BAD_STEPS)
def test_bad_steps_raise_and_record_nothing(kind, step, error):
    f = make_filter(kind)
    f.spend(epsilon=0.01)
    before = (f.history, f.spent)
    with pytest.raises(error):
        f.spend(**step)
    if "label" not in step:
        with pytest.raises(error):
            f.can_spend(**step)
    assert (f.history, f.spent) == before


@pytest.mark.parametrize(
    "make,error",
    [
        (lambda: BasicFilter(0.0), ValueError),
        (lambda: BasicFilter(-1.0), ValueError),
        (lambda: BasicFilter(float("nan")), ValueError),
        (lambda: BasicFilter("1"), TypeError),
        (lambda: BasicFilter(1.0, 1.0), ValueError),
        (lambda: AdvancedFilter(1.0, 0.0), ValueError),
        (lambda: AdvancedFilter(1.0, 0.4), ValueError),  # RRUV16 needs delta < 1/e
        (lambda: ImprovedAdvancedFilter(1.0, 1e-6, step_delta=1e-6), ValueError),
        (lambda: RenyiFilter(1.0, None), TypeError),
        (lambda: RenyiFilter.from_rho(0.0, 1e-6), ValueError),
        (lambda: GaussianFilter(1.0, float("nan")), ValueError),
        (lambda: GaussianFilter.from_mu(-1.0, 1e-6), ValueError),
        (lambda: Odometer(0.0), ValueError),
        (lambda: Odometer(1e-6, target_epsilon=0), ValueError),
    ],
)
def test_bad_budgets(make, error):
    with pytest.raises(error):
        make()


def test_filters_refuse_steps_they_cannot_price():
    for f in (BasicFilter(1.0, 1e-6), AdvancedFilter(1.0, 1e-6), ImprovedAdvancedFilter(1, 1e-6)):
        with pytest.raises(ValueError, match="rho or mu"):
            f.spend(rho=0.01)
    with pytest.raises(ValueError, match="zCDP"):
        RenyiFilter(1.0, 1e-6).spend(epsilon=0.1, delta=1e-8)
    with pytest.raises(ValueError, match="GDP"):
        GaussianFilter(1.0, 1e-6).spend(rho=0.01)
    with pytest.raises(ValueError, match="pure"):
        BasicFilter(1.0).spend(epsilon=0.1, delta=1e-9)


def test_refusal_message_says_spent_asked_remaining():
    f = BasicFilter(1.0, 1e-6)
    f.spend(epsilon=0.7, delta=1e-7, label="first")
    with pytest.raises(BudgetExceededError) as info:
        f.spend(epsilon=0.5)
    message = str(info.value)
    for word in ("spent", "asked", "remaining", "0.7", "0.5", "nothing recorded"):
        assert word in message
    assert math.isclose(info.value.remaining, 0.3)
    assert info.value.requested.epsilon == 0.5
    assert f.history[0].label == "first" and len(f.history) == 1


# ====================================================== conversions


@pytest.mark.parametrize("rho", [1e-4, 0.01, 0.5, 3.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-5, 0.01])
def test_zcdp_conversion_is_valid_and_better_than_bun_steinke(rho, delta):
    value = F.epsilon_of_zcdp(rho, delta)
    assert value <= rho + 2 * math.sqrt(rho * math.log(1 / delta)) * (1 + 1e-12)
    # a Gaussian mechanism with this rho is exactly sqrt(2 rho)-GDP: the conversion must cover it
    assert gdp_delta(math.sqrt(2 * rho), value) <= delta * (1 + 1e-9)
    assert value >= max(zcdp_epsilon(rho, delta), 0) - 1e-9 * abs(value)
    assert value >= 0


@pytest.mark.parametrize("epsilon", [1e-8, 1e-3, 0.1, 0.999, 1.0, 5.0, 30.0])
def test_pure_to_gaussian_dp_is_the_tight_conversion(epsilon):
    mu = mp.mpf(F.gaussian_dp_of_pure_dp(epsilon))
    e = mp.mpf(epsilon)
    kink = 1 / (1 + mp.e**e)

    def g(alpha):  # the trade-off function of mu-GDP
        return mp.ncdf(mp.sqrt(2) * mp.erfinv(1 - 2 * alpha) - mu)

    def f(alpha):  # the trade-off function of eps-DP
        return max(0, 1 - mp.e**e * alpha, mp.e ** (-e) * (1 - alpha))

    assert g(kink) <= kink
    assert g(kink) >= kink * (1 - mp.mpf(1e-9))  # tight: equality at the kink
    for alpha in np.linspace(0.001, 0.999, 97):
        assert g(mp.mpf(alpha)) <= f(mp.mpf(alpha)) + mp.mpf(1e-15)


@pytest.mark.parametrize("kind", FILTER_KINDS)
def test_huge_steps_are_refused_without_overflow(kind):
    f = make_filter(kind)
    for epsilon in (1e300, 800.0, 5.0):
        with pytest.raises(BudgetExceededError):
            f.spend(epsilon=epsilon)
    assert f.history == () and f.remaining() > 0


# ====================================================== odometer


def test_odometer_bound_formula_and_monotonicity():
    odo = Odometer(1e-6, target_epsilon=1.0)
    assert odo.epsilon() == 0.0
    steps = [0.05, 0.1, 0.02, 0.2]
    for e in steps:
        odo.spend(epsilon=e)
    odo.spend(mu=0.1)
    odo.spend(rho=0.003)
    total = mp.fsum(dec(e) ** 2 / 2 for e in steps) + mp.mpf("0.01") / 2 + mp.mpf("0.003")
    c = mp.mpf(odo.tuning)
    spread = 2 * total + c

    def log_mixture(x):  # the exact half-normal mixture, see Odometer.bound
        return (
            mp.log(2) + mp.log(c / spread) / 2 + x * x / (2 * spread)
            + mp.log(mp.ncdf(x / mp.sqrt(spread)))
        )

    closed_form = mp.sqrt(2 * spread * mp.log(mp.sqrt(spread / c) * 1e6))  # Phi >= 1/2
    root = mp.findroot(lambda x: log_mixture(x) - mp.log(1e6), closed_form)
    expected = total + root
    assert odo.rho == pytest.approx(float(total), rel=1e-15)
    assert float(expected) <= odo.epsilon() <= float(expected) * (1 + 1e-8)
    assert odo.epsilon() < float(total + closed_form)  # tighter than bounding Phi by 1/2
    assert list(odo.bounds) == sorted(odo.bounds) and len(odo.history) == 6


def test_odometer_costs_little_over_the_filter_at_its_target():
    odo = Odometer(DELTA, target_epsilon=1.0)
    # the fixed-horizon (filter) total at which the budget is exactly 1
    rho_star = (math.sqrt(math.log(1 / DELTA) + 1) - math.sqrt(math.log(1 / DELTA))) ** 2
    assert 1.0 < odo.bound(rho_star) < 1.25  # validity at all times costs < 25% here
    assert odo.bound(4 * rho_star) > odo.bound(rho_star)


def test_odometer_refuses_approximate_steps_and_bad_input():
    odo = Odometer(1e-6)
    with pytest.raises(ValueError, match="zCDP"):
        odo.spend(epsilon=0.1, delta=1e-9)
    with pytest.raises(ValueError):
        odo.spend(epsilon=-1)
    with pytest.raises(TypeError):
        odo.spend(epsilon="1")
    with pytest.raises(ValueError):
        odo.spend()
    assert odo.history == () and odo.epsilon() == 0.0
    odo.spend(epsilon=1e10)
    with pytest.raises(ValueError, match="overflow"):
        odo.spend(epsilon=1e300)
    assert len(odo.history) == 1 and math.isfinite(odo.epsilon())


def test_odometer_holds_on_simulated_worst_case_losses():
    """Randomized response is the worst eps-DP step: its privacy loss is +eps w.p.
    e^eps/(1+e^eps), else -eps. With adaptively chosen eps, the realized loss must stay under
    the odometer at every step on all but a delta fraction of paths."""
    rng = np.random.default_rng(20240611)
    delta = 0.05
    odo = Odometer(delta, target_epsilon=3.0)
    paths, steps = 4000, 300
    loss = np.zeros(paths)
    rho = np.zeros(paths)
    crossed = np.zeros(paths, dtype=bool)
    for _ in range(steps):
        # adaptive: paths that leaked more get smaller steps, the others bigger
        eps = np.where(loss > rho, 0.05, 0.25)
        up = rng.random(paths) < np.exp(eps) / (1 + np.exp(eps))
        loss += np.where(up, eps, -eps)
        rho += eps**2 / 2
        values, index = np.unique(rho, return_inverse=True)  # few distinct totals per step
        bound = np.array([odo.bound(float(r)) for r in values])[index]
        crossed |= loss > bound
    assert crossed.mean() <= delta
    # the simulation is not trivial: about half the paths leak more than their mean
    assert np.mean(loss > rho) > 0.25
    for r in (0.0, 0.3, 2.0):  # tighter than the closed form that bounds Phi by 1/2
        c = odo.tuning
        spread = 2 * r + c
        closed = r + math.sqrt(2 * spread * (0.5 * math.log(spread / c) - math.log(delta)))
        assert odo.bound(r) < closed


# ====================================================== guarded queries


def test_laplace_answers_are_seeded_and_charged():
    data = np.arange(100.0)
    a = PrivateQueries(data, BasicFilter(1.0), rng=7)
    b = PrivateQueries(data, BasicFilter(1.0), rng=np.random.default_rng(7))
    c = PrivateQueries(data, BasicFilter(1.0), rng=8)
    answers_a = [a.laplace(np.sum, 1.0, 0.1), a.laplace(lambda d: d[:3], 1.0, 0.2)]
    answers_b = [b.laplace(np.sum, 1.0, 0.1), b.laplace(lambda d: d[:3], 1.0, 0.2)]
    assert answers_a[0] == answers_b[0] and np.array_equal(answers_a[1], answers_b[1])
    assert c.laplace(np.sum, 1.0, 0.1) != answers_a[0]
    assert isinstance(answers_a[0], float) and answers_a[1].shape == (3,)
    assert [h.epsilon for h in a.budget.history] == [0.1, 0.2]


def test_refused_query_draws_no_noise_and_never_reads_the_data():
    reads = []

    def query(d):
        reads.append(1)
        return float(np.sum(d))

    data = np.ones(10)
    guarded = PrivateQueries(data, BasicFilter(0.5), rng=3)
    first = guarded.laplace(query, 1.0, 0.4)
    with pytest.raises(BudgetExceededError):
        guarded.laplace(query, 1.0, 0.4)
    second = guarded.laplace(query, 1.0, 0.1)
    reference = PrivateQueries(data, BasicFilter(0.5), rng=3)
    assert reference.laplace(query, 1.0, 0.4) == first
    assert reference.laplace(query, 1.0, 0.1) == second  # the refusal consumed no randomness
    assert len(reads) == 4  # two per object: the refused call never ran the query


def test_laplace_noise_has_the_calibrated_scale():
    guarded = PrivateQueries(np.zeros(20000), Odometer(1e-6), rng=11)
    noise = guarded.laplace(lambda d: d, 2.0, 0.5)  # scale 4 per coordinate
    # mean |X| of Lap(b) is b; 20000 draws: standard error 4/sqrt(20000) = 0.028
    assert abs(np.mean(np.abs(noise)) - 4.0) < 0.15


@pytest.mark.parametrize("epsilon,delta", [(1.0, 1e-5), (0.2, 1e-8), (4.0, 1e-3)])
def test_gaussian_query_is_calibrated_by_the_analytic_gaussian(epsilon, delta):
    budget = Odometer(1e-6)
    guarded = PrivateQueries(np.zeros(30000), budget, rng=5)
    noise = guarded.gaussian(lambda d: d, 1.0, epsilon=epsilon, delta=delta)
    charge = budget.history[-1]
    sigma = 1.0 / charge.mu
    assert gdp_delta(charge.mu, epsilon) <= delta  # (epsilon, delta)-DP
    assert gdp_delta(charge.mu, epsilon) >= delta * 0.999  # and no more noise than needed
    assert charge.rho == pytest.approx(charge.mu**2 / 2)
    assert abs(np.std(noise) / sigma - 1) < 0.03


def test_gaussian_query_charges_every_filter():
    for f in (BasicFilter(1.0, 1e-5), ImprovedAdvancedFilter(1.0, 1e-5), RenyiFilter(1, 1e-5)):
        PrivateQueries([1.0], f, rng=0).gaussian(sum, 1.0, epsilon=0.1, delta=1e-7)
        assert len(f.history) == 1
    g = GaussianFilter(1.0, 1e-5)
    PrivateQueries([1.0], g, rng=0).gaussian(sum, 1.0, mu=0.1)
    assert g.spent.statistic == pytest.approx(0.01, rel=1e-12)
    r = RenyiFilter.from_rho(1.0, 1e-5)
    PrivateQueries([1.0], r, rng=0).gaussian(sum, 2.0, rho=0.25)
    assert r.spent.statistic == pytest.approx(0.25, rel=1e-12)
    with pytest.raises(ValueError):
        PrivateQueries([1.0], r, rng=0).gaussian(sum, 1.0, epsilon=0.1)
    with pytest.raises(ValueError):
        PrivateQueries([1.0], r, rng=0).gaussian(sum, 1.0, rho=0.1, mu=0.1)


def test_discrete_laplace_sampler_matches_its_law():
    rng = np.random.default_rng(1)
    rate = Fraction(1, 2)  # P(x) ∝ exp(-|x|/2)
    draws = np.array([samplers.discrete_laplace(rng, 1, 2) for _ in range(20000)])
    q = math.exp(-0.5)
    pmf = lambda x: (1 - q) / (1 + q) * q ** abs(x)  # noqa: E731
    for x in range(-4, 5):
        p = pmf(x)
        assert abs(np.mean(draws == x) - p) < 5 * math.sqrt(p * (1 - p) / draws.size)
    assert abs(np.var(draws) - 2 * q / (1 - q) ** 2) < 0.25
    assert rate == Fraction(1, 2)


def test_discrete_gaussian_sampler_matches_its_law():
    rng = np.random.default_rng(2)
    sigma_squared = Fraction(9, 4)
    draws = np.array([samplers.discrete_gaussian(rng, sigma_squared) for _ in range(20000)])
    support = np.arange(-40, 41)
    weights = np.exp(-(support**2) / (2 * 2.25))
    pmf = weights / weights.sum()
    for x in range(-4, 5):
        p = pmf[x + 40]
        assert abs(np.mean(draws == x) - p) < 5 * math.sqrt(p * (1 - p) / draws.size)


def test_discrete_queries_exact_and_charged():
    records = list(range(50))
    budget = RenyiFilter.from_rho(1.0, 1e-6)
    guarded = PrivateQueries(records, budget, rng=4)
    count = guarded.count(lambda r: r % 2 == 0, 0.5)
    assert isinstance(count, int) and abs(count - 25) < 40
    vector = guarded.discrete_gaussian(lambda d: np.array([len(d), 3]), 1, rho=0.005)
    assert vector.shape == (2,) and all(isinstance(v, int) for v in vector)
    assert budget.history[-1].rho == pytest.approx(0.005)
    assert budget.history[0].epsilon == 0.5
    with pytest.raises(ValueError, match="integer"):
        guarded.discrete_laplace(lambda d: 0.5, 1, 0.1)
    with pytest.raises(ValueError):
        guarded.discrete_laplace(lambda d: 1, 0, 0.1)
    again = PrivateQueries(records, RenyiFilter.from_rho(1.0, 1e-6), rng=4)
    assert again.count(lambda r: r % 2 == 0, 0.5) == count
    # a discrete Gaussian step known only by rho cannot be charged to a basic filter
    with pytest.raises(ValueError, match="rho or mu"):
        PrivateQueries(records, BasicFilter(1.0, 1e-6)).discrete_gaussian(len, 1, sigma=3.0)


def test_clipped_sum_and_input_checks():
    guarded = PrivateQueries([{"x": 5.0}, {"x": -20.0}, {"x": 1.0}], BasicFilter(10.0), rng=0)
    value = guarded.clipped_sum(lambda r: r["x"], -2.0, 2.0, 5.0)  # true clipped sum: 1
    assert abs(value - 1.0) < 10
    assert guarded.budget.history[-1].epsilon == 5.0
    with pytest.raises(ValueError):
        guarded.clipped_sum(lambda r: r["x"], 2.0, -2.0, 1.0)
    with pytest.raises(TypeError):
        guarded.laplace("sum", 1.0, 0.1)
    with pytest.raises(ValueError):
        guarded.laplace(sum, -1.0, 0.1)
    with pytest.raises(TypeError):
        PrivateQueries([1.0], budget="all")
    assert "hidden" in repr(guarded) and "-20" not in repr(guarded)


@pytest.mark.parametrize("kind", ["basic", "renyi", "gaussian"])
def test_concurrent_queries_never_overspend(kind):
    make = {
        "basic": lambda: BasicFilter(1.0),
        "renyi": lambda: RenyiFilter(1.0, 1e-6),
        "gaussian": lambda: GaussianFilter(1.0, 1e-6),
    }[kind]
    budget = make()
    allowed = budget.steps_left(epsilon=0.01)
    assert allowed == {"basic": 100, "renyi": 487, "gaussian": 356}[kind]
    guarded = PrivateQueries(np.arange(10.0), budget, rng=0)
    threads, attempts = 16, 60
    answers, refusals = [], []
    start = threading.Barrier(threads)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # force frequent thread switches

    def worker():
        start.wait()
        for _ in range(attempts):
            try:
                answers.append(guarded.laplace(np.sum, 1.0, 0.01))
            except BudgetExceededError:
                refusals.append(1)

    try:
        pool = [threading.Thread(target=worker) for _ in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert len(answers) == allowed and len(budget.history) == allowed
    assert len(refusals) == threads * attempts - allowed
    assert len(set(answers)) == allowed  # no two threads shared a random draw
    assert not budget.can_spend(epsilon=0.01)


def test_concurrent_spends_on_an_advanced_filter():
    budget = ImprovedAdvancedFilter(1.0, 1e-6, step_delta=0.0)
    allowed = budget.steps_left(epsilon=0.02)
    results = []

    def worker():
        for _ in range(100):
            try:
                budget.spend(epsilon=0.02)
                results.append(True)
            except BudgetExceededError:
                results.append(False)

    pool = [threading.Thread(target=worker) for _ in range(8)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert sum(results) == allowed == len(budget.history)


# ====================================================== comparison and plot


@pytest.mark.slow
def test_comparison_table():
    table = F.compare_filters(1.0, 1e-6, (0.02, 0.1))
    text = str(table)
    assert "advanced WRRW23" in text and "optimal, any eps0-DP" in text
    assert table.column("basic") == (50, 10)
    assert table.column("advanced RRUV16")[1] == 1
    optimal = table.column(F.OPTIMAL_COLUMN)
    for name in F.FILTER_COLUMNS:
        assert all(c <= o for c, o in zip(table.column(name), optimal, strict=True))
    assert optimal[1] == 10  # at eps0 = 0.1 nothing beats basic composition by a full step
    assert table.column(F.LAPLACE_COLUMN)[0] >= optimal[0]
    with pytest.raises(ValueError):
        table.column("nope")


def test_plot_draws_every_column():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from plda.plot.filters import filter_comparison

    table = F.compare_filters(1.0, 1e-6, (0.01, 0.05, 0.5), optimal=False, laplace=False)
    ax = filter_comparison(table)
    assert len(ax.get_lines()) == len(table.columns) == 5
    fig, ax2 = plt.subplots()
    assert filter_comparison(table, ax=ax2) is ax2
    with pytest.raises(TypeError):
        filter_comparison(table, epsilon=2.0)
    plt.close("all")


def test_importing_filters_does_not_import_matplotlib():
    code = "import sys, plda.filters; assert 'matplotlib' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_private_count_noise_has_the_discrete_laplace_law():
    # 2000 counts at epsilon 0.5: discrete Laplace noise of parameter q = e^-0.5 (variance
    # 2q/(1-q)^2 = 7.83); zero noise (variance 0) or a doubled scale (variance ~30) fail
    guarded = PrivateQueries(list(range(50)), BasicFilter(2000.0), rng=11)
    draws = np.array([guarded.count(lambda r: r % 2 == 0, 0.5) for _ in range(2000)]) - 25
    q = math.exp(-0.5)
    variance = 2 * q / (1 - q) ** 2
    assert abs(draws.mean()) < 5 * math.sqrt(variance / draws.size)
    assert abs(draws.var() - variance) < 0.15 * variance
    assert np.all(draws == np.round(draws))


def test_clipped_sum_noise_has_the_laplace_law():
    # clip to [-2, 2]: one record moves the sum by at most 2 (add/remove), so at epsilon 5 the
    # noise is Laplace of scale 2/5 (variance 2 b^2 = 0.32); zero noise or scale 4/5 fail
    data = [{"x": 5.0}, {"x": -20.0}, {"x": 1.0}]  # clipped sum: 2 - 2 + 1 = 1
    guarded = PrivateQueries(data, BasicFilter(10000.0), rng=12)
    draws = np.array([guarded.clipped_sum(lambda r: r["x"], -2.0, 2.0, 5.0) for _ in range(1500)])
    variance = 2 * 0.4**2
    assert abs(draws.mean() - 1.0) < 5 * math.sqrt(variance / draws.size)
    assert abs(draws.var() - variance) < 0.2 * variance


def test_renyi_filter_budget_may_exceed_epsilon():
    # rho-zCDP implies (eps, delta)-DP with eps from epsilon_of_zcdp; at delta = 0.5 the largest
    # rho converting to eps = 1 is about 1.0164 (it was capped at 1.0)
    f = RenyiFilter(1.0, 0.5)
    assert f.rho > 1.016
    assert F.epsilon_of_zcdp(f.rho, 0.5) <= 1.0
    assert F.epsilon_of_zcdp(f.rho * (1 + 1e-6), 0.5) > 1.0 * (1 - 1e-9)


def test_rho_priced_steps_are_not_refused_for_their_delta():
    # the Renyi filter charges rho only: the step's delta does not enter its condition
    budget = RenyiFilter(1.0, 1e-6)
    budget.spend(epsilon=0.5, delta=1e-5, rho=0.01)
    assert budget.history[-1].rho == 0.01
    gaussian = F.GaussianFilter(1.0, 1e-6)
    gaussian.spend(epsilon=0.5, delta=1e-5, mu=0.1)
    with pytest.raises(ValueError, match="below the filter's"):
        BasicFilter(1.0, 1e-6).spend(epsilon=0.5, delta=1e-5)  # which does price delta
