"""plda.filters at extreme but valid budgets, against exact (mpmath) values.

Audit s48b REPRO_8 found valid budgets that crashed (ZeroDivisionError, OverflowError), errors
naming no argument ("math domain error", "Invalid literal for Fraction: 'inf'", "rho ... got
nan", "Optimization bounds must be finite scalars"), a silent NaN in ``gaussian_dp_delta`` that
made ``GaussianFilter(1e10, 1e-6).mu`` 1.47 instead of about 141417, and
``gaussian_dp_of_pure_dp(710) = inf``. Every counterexample is kept here. Each budget either
works, with its numbers checked against mpmath, or is refused up front with a ValueError that
names the argument and its range.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction

import mpmath as mp
import pytest

from plda import filters as F
from plda.filters import (
    AdvancedFilter,
    BasicFilter,
    GaussianFilter,
    ImprovedAdvancedFilter,
    Odometer,
    RenyiFilter,
)
from plda.filters.conversions import (
    gaussian_dp_delta,
    largest_gaussian_dp_mu,
    log_gaussian_dp_delta,
)

MAX = sys.float_info.max


# ====================================================== exact references (mpmath)


def digits_for(*values) -> int:
    """Working digits: enough that -ε/μ ± μ/2 keeps 60 digits after its cancellation."""
    top = max(abs(mp.mpf(v)) for v in values)
    return 60 + max(0, int(mp.log10(top))) if top > 1 else 60


def mp_log_tail(z):
    """log Φ(-z); from z = 1e4 on by the asymptotic series of the Mills ratio, which mpmath's
    erfc cannot reach (its float conversions overflow near z = 1e150):
    Φ(-z) = φ(z)/z (1 - 1/z² + 3/z⁴ - 15/z⁶ + ...), terms below 1e-60 after 15."""
    if z < 10**4:
        return mp.log(mp.ncdf(-z))
    series, term = mp.mpf(1), mp.mpf(1)
    for n in range(1, 16):
        term *= -(2 * n - 1) / (z * z)
        series += term
    return -z * z / 2 - mp.log(z) - mp.log(2 * mp.pi) / 2 + mp.log(series)


def mp_delta(mu, epsilon):
    """δ(ε) of μ-GDP for the two floats, Φ(-u) - e^ε Φ(-v), as Φ(-u) (1 - e^{ε + log Φ(-v) -
    log Φ(-u)}); the precision grows until the difference keeps 40 digits."""
    dps = digits_for(mu, epsilon, mp.mpf(epsilon) / mp.mpf(mu))
    while True:
        with mp.workdps(dps):
            m, e = mp.mpf(mu), mp.mpf(epsilon)
            log_first = mp_log_tail(e / m - m / 2)
            gap = e + mp_log_tail(e / m + m / 2) - log_first  # log of second / first, < 0
            value = mp.e**log_first * -mp.expm1(gap)
            if -mp.expm1(gap) > mp.mpf(10) ** (40 - dps) or dps > 3000:
                return +value
        dps *= 3


def mp_largest_mu(epsilon, delta):
    """Largest μ with δ_μ(ε) <= δ: bisection on log μ."""
    lo, hi = mp.log(mp.mpf(math.ulp(0.0))), mp.mpf(400)  # log μ, over the positive floats
    for _ in range(90):
        mid = (lo + hi) / 2
        if mp_delta(float(mp.e**mid), epsilon) <= delta:
            lo = mid
        else:
            hi = mid
    return mp.e**lo


def mp_zcdp_epsilon(rho, delta):
    """CKS20 conversion (min over α) by golden section on log(α - 1), plus Bun & Steinke."""
    rho, delta = mp.mpf(rho), mp.mpf(delta)

    def at(t):
        a = 1 + mp.e**t
        return a * rho + mp.log1p(-1 / a) - (mp.log(delta) + mp.log(a)) / (a - 1)

    centre = mp.log(mp.sqrt(mp.log(1 / delta) / rho))
    lo, hi = centre - 12, centre + 12
    ratio = (mp.sqrt(5) - 1) / 2
    for _ in range(200):
        x1, x2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        lo, hi = (lo, x2) if at(x1) < at(x2) else (x1, hi)
    return min(at((lo + hi) / 2), rho + 2 * mp.sqrt(rho * mp.log(1 / delta)))


def mp_pure_mu(epsilon):
    """2 Φ⁻¹(e^ε / (1 + e^ε)): the z with log Φ(-z) = -log(1 + e^ε), by bisection."""
    with mp.workdps(60 + max(0, int(math.log10(max(epsilon, 1))))):
        e = mp.mpf(epsilon)
        target = -(e + mp.log1p(mp.e ** (-e)))
        lo, hi = mp.mpf(0), mp.sqrt(2 * e) + 10
        for _ in range(600):
            mid = (lo + hi) / 2
            if mp.log(mp.ncdf(-mid)) > target:
                lo = mid
            else:
                hi = mid
        return 2 * hi


def mp_rruv_k(count, step, epsilon, delta):
    """K of RRUV16 after ``count`` steps of ``step`` (amounts read as their decimals)."""
    with mp.workdps(60):
        eg, dg, e = mp.mpf(epsilon), mp.mpf(delta), mp.mpf(repr(step))
        h = eg**2 / (mp.mpf("28.04") * mp.log(1 / dg))
        s2 = count * e**2
        drift = count * e * mp.expm1(e) / 2
        return drift + mp.sqrt((s2 + h) * (2 + mp.log(s2 / h + 1)) * mp.log(2 / dg))


# ====================================================== Gaussian DP


MU_GRID = [1e-300, 1e-100, 1e-20, 1e-12, 1e-8, 1e-4, 0.01, 0.3, 1.0, 3.0, 100.0, 1e4, 1e8, 1e150]
U_GRID = [-0.4, -0.01, 0.0, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 38.0]


@pytest.mark.parametrize("mu", MU_GRID)
def test_gaussian_dp_delta_matches_mpmath_everywhere(mu):
    # u = ε/μ - μ/2 spans both branches; negative u as a fraction of μ/2 (ε >= 0)
    for u in U_GRID:
        epsilon = mu * ((u * mu if u < 0 else u) + mu / 2)
        if not (epsilon >= 0 and math.isfinite(epsilon)):
            continue
        exact = mp_delta(mu, epsilon)
        got = log_gaussian_dp_delta(mu, epsilon)
        assert not math.isnan(got)
        if exact == 0:
            continue
        # relative error of δ: 1e-12 (it is about u² 2^-53 + 1e-14)
        assert abs(mp.mpf(got) - mp.log(exact)) <= 1e-12, (mu, u, epsilon)


def test_gaussian_dp_delta_is_never_nan_for_huge_epsilon():
    # REPRO_8: gaussian_dp_delta(2, 1e10) was NaN (0 * inf of the difference of two logs)
    assert gaussian_dp_delta(2.0, 1e10) == 0.0
    exact_log = mp.log(mp_delta(2.0, 1e10))  # about -1.25e19
    assert abs(mp.mpf(log_gaussian_dp_delta(2.0, 1e10)) - exact_log) <= abs(exact_log) * 1e-14
    extremes = [(1e-3, 1e300), (1e150, 1e300), (5e-324, 1.0), (1e-300, 0.0), (1e300, 1e300)]
    for mu, epsilon in extremes:
        value = gaussian_dp_delta(mu, epsilon)
        assert 0.0 <= value <= 1.0
        exact = mp_delta(mu, epsilon)
        assert value == pytest.approx(float(exact), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize(
    "epsilon,delta",
    [
        (1.0, 1e-6),
        (0.5, 1e-5),
        (4.0, 1e-3),
        (1e-3, 1e-10),
        (10.0, 1e-12),
        (1e4, 1e-6),  # REPRO_8: 136.8, right
        (1e6, 1e-6),
        (1e10, 1e-6),  # REPRO_8: was 1.47 through the NaN; about 141417
        (1e100, 1e-6),
        (1e300, 1e-6),
        (1e307, 1e-300),
        (1e-9, 1e-10),  # was 1.0668168e-09, above the largest valid mu (cancellation)
        (1e-300, 1e-300),  # was 2.8e-16: δ(ε) was computed 0 for every mu up to it
        (1e-300, 5e-324),
        (2.0, 0.9),
    ],
)
def test_gaussian_filter_mu_is_certified_and_tight(epsilon, delta):
    mu = largest_gaussian_dp_mu(epsilon, delta)
    assert mp_delta(mu, epsilon) <= delta  # never above the largest valid mu
    exact = mp_largest_mu(epsilon, delta)
    assert mu >= exact * (1 - 1e-8)  # and no more than the 1e-9 margin below it
    budget = GaussianFilter(epsilon, delta)
    # the filter's mu: the bisection's, shaded by SAFETY in mu², read back without underflow
    assert budget.mu == pytest.approx(mu * (1 - 5e-13), rel=1e-14)
    assert Fraction(budget.mu) ** 2 <= Fraction(mu) ** 2


def test_gaussian_filter_mu_grows_with_epsilon():
    # REPRO_8: a larger epsilon gave a *smaller* mu (1e10: 1.47 < 1e4: 136.8)
    mus = [GaussianFilter(e, 1e-6).mu for e in (1e2, 1e4, 1e6, 1e10, 1e100, 1e300, 1e307)]
    assert mus == sorted(mus)
    assert mus[3] == pytest.approx(float(mp_largest_mu(1e10, 1e-6)), rel=1e-8)
    assert F.epsilon_of_gaussian_dp(mus[3], 1e-6) <= 1e10


@pytest.mark.parametrize(
    "mu,delta",
    [(0.5, 1e-6), (1.0, 1e-5), (3.0, 1e-9), (1e-12, 1e-14), (1e100, 1e-6), (1e-300, 5e-324)],
)
def test_epsilon_of_gaussian_dp_is_certified_and_tight(mu, delta):
    epsilon = F.epsilon_of_gaussian_dp(mu, delta)
    assert mp_delta(mu, epsilon) <= delta
    # the smallest valid epsilon, up to the 1e-9 margin on delta
    assert mp_delta(mu, epsilon * (1 - 1e-6)) > delta * (1 - 1e-9)


def test_epsilon_of_gaussian_dp_is_zero_or_inf_at_the_ends():
    # δ(0) <= δ: 0 is exact (the bisection used to return 2^-200 or so)
    assert F.epsilon_of_gaussian_dp(1e-10, 0.5) == 0.0
    assert mp_delta(1e-10, 0.0) <= 0.5
    # ε beyond the largest float: inf, the only float above it
    assert F.epsilon_of_gaussian_dp(1e160, 1e-6) == math.inf
    assert mp_delta(1e160, MAX) > 1e-6


@pytest.mark.parametrize(
    "epsilon",
    [1e-320, 1e-200, 5e-101, 1.0, 5.0, 100.0, 700.0, 707.9, 708.0, 709.0, 709.8, 710.0, 744.0,
     745.0, 746.0, 1000.0, 1e5, 1e10, 1e100, 1e300, MAX],
)
def test_pure_to_gaussian_dp_is_finite_tight_and_above_the_exact_value(epsilon):
    # REPRO_8: inf from ε ≈ 709.8 (expit(-ε) subnormal, then ndtri(0)); exact 75.124 at 710
    mu = F.gaussian_dp_of_pure_dp(epsilon)
    if epsilon < 1e-100:
        exact = mp.sqrt(mp.pi / 2) * mp.mpf(epsilon)  # to a relative 1e-200
        assert mu >= exact
        assert mu <= exact * (1 + mp.mpf(1e-14)) + 2 * mp.mpf(math.ulp(0.0))  # subnormal steps
        return
    exact = mp_pure_mu(epsilon)
    assert math.isfinite(mu)
    assert exact <= mu <= exact * (1 + mp.mpf(2e-15))


def test_tiny_pure_steps_are_charged_to_a_gaussian_filter():
    # a pure step's μ² underflowed to 0: it was free ("a step that costs nothing")
    budget = GaussianFilter(1e-300, 1e-300)
    step = 1e-301
    count = budget.steps_left(epsilon=step)
    cost = (mp.sqrt(mp.pi / 2) * mp.mpf(step)) ** 2  # μ² of a pure step, from below
    assert count <= mp.mpf(budget.mu) ** 2 / cost
    assert 1 <= count < 10**4


# ====================================================== advanced filters


def count_rruv(epsilon, delta, step):
    """Largest n with n steps meeting RRUV16's condition (mpmath), by doubling and bisection."""

    def ok(n):
        return mp_rruv_k(n, step, epsilon, delta) <= epsilon

    lo, hi = 0, 1
    while ok(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


@pytest.mark.parametrize(
    "epsilon,delta,step",
    [
        (1e-170, 1e-6, 1e-180),  # REPRO_8: ZeroDivisionError (H underflowed to 0)
        (1e-170, 1e-6, 1e-172),
        (1.0, 5e-324, 0.01),  # REPRO_8: ZeroDivisionError (1/δ overflowed)
        (1e300, 1e-6, 650.0),  # ε² overflowed (OverflowError from 1e154 on)
        (1e307, 1e-6, 690.0),  # steps beyond ~700 cannot fit: their drift x e^x/2
        (1.0, 1e-6, 0.05),  # the ordinary case: unchanged
    ],
)
def test_advanced_filter_at_extreme_budgets_matches_mpmath(epsilon, delta, step):
    budget = AdvancedFilter(epsilon, delta)
    budget.spend(epsilon=step)
    k = mp_rruv_k(1, step, epsilon, delta)
    assert budget.spent.statistic == pytest.approx(float(k), rel=1e-12)
    # the count of further steps is the theorem's, less the 1e-12 margin's worth (the count
    # grows like K²: a relative 2e-12, visible when there are 1.5e18 steps)
    expected = count_rruv(epsilon, delta, step) - 1
    assert expected * (1 - 3e-12) - 1 <= budget.steps_left(epsilon=step) <= expected
    assert 0 < budget.remaining() <= epsilon


@pytest.mark.parametrize(
    "epsilon,delta",
    [(1e-170, 1e-6), (5e-324, 1e-6), (1.0, 5e-324), (1e307, 1e-6), (1.0, 1e-6)],
)
def test_improved_advanced_filter_budget_is_the_closed_form(epsilon, delta):
    budget = ImprovedAdvancedFilter(epsilon, delta)
    limit = budget._squares_limit
    with mp.workdps(60):
        log_term = mp.log(1 / (mp.mpf(delta) - mp.mpf(budget.step_delta)))
        e = mp.mpf(epsilon)
        # (sqrt(2L + 2ε) - sqrt(2L))², without its cancellation for tiny ε
        exact = (2 * e / (mp.sqrt(2 * log_term + 2 * e) + mp.sqrt(2 * log_term))) ** 2
        value = mp.mpf(limit.numerator) / limit.denominator
        assert exact * (1 - mp.mpf(1.1e-12)) <= value <= exact * (1 - mp.mpf(0.9e-12))


# ====================================================== Rényi filter and zCDP


@pytest.mark.parametrize(
    "epsilon,delta",
    [(1.0, 5e-324), (1e307, 1e-6), (1e-150, 1e-6), (1e-150, 5e-324), (1.0, 1e-6)],
)
def test_renyi_filter_budget_converts_back_to_its_epsilon(epsilon, delta):
    # REPRO_8: (1, 5e-324) gave "rho must be ... got nan" (1/δ overflowed)
    budget = RenyiFilter(epsilon, delta)
    rho = budget.rho
    assert rho > sys.float_info.min
    with mp.workdps(40 + max(0, int(math.log10(epsilon)))):
        assert mp_zcdp_epsilon(rho, delta) <= epsilon
        # tight: 1e-6 more rho converts to more than epsilon
        assert mp_zcdp_epsilon(rho * (1 + 1e-6), delta) > epsilon * (1 - 1e-12)


@pytest.mark.parametrize("rho,delta", [(1e300, 1e-6), (1e306, 1e-6), (5e-324, 5e-324), (1.0, 1e-6)])
def test_zcdp_conversion_at_extreme_rho_is_above_the_exact_value(rho, delta):
    # REPRO_8: RenyiFilter.from_rho(1e300, 1e-6) was "math domain error" (1 + e^t rounded to 1)
    epsilon = F.epsilon_of_zcdp(rho, delta)
    with mp.workdps(40 + max(0, int(math.log10(max(rho, 1))))):
        exact = mp_zcdp_epsilon(rho, delta)
        assert exact <= epsilon <= exact * (1 + mp.mpf(1e-9))
    assert RenyiFilter.from_rho(rho, delta).epsilon == max(epsilon, math.ulp(0.0))


@pytest.mark.parametrize(
    "rho,delta",
    [
        # the CKS terms cancel near a conversion of 0: rounding put these below the exact value
        (1.35914105014423e-12, 1e-6),
        (1.3591410501436143e-18, 1e-9),
        (0.003401707205957401, 0.05),
    ],
)
def test_zcdp_conversion_near_zero_is_not_rounded_below_the_exact_value(rho, delta):
    epsilon = F.epsilon_of_zcdp(rho, delta)
    exact = mp_zcdp_epsilon(rho, delta)
    # above by at most the rounding slack, 16 units of 2^-53 of the terms' magnitudes (< 1)
    assert exact <= epsilon <= exact * (1 + mp.mpf(1e-9)) + 16 * 2**-53


# ====================================================== ranges refused up front


@pytest.mark.parametrize(
    "make,name,text",
    [
        (lambda: AdvancedFilter(1e308, 1e-6), "epsilon", "1e+307"),  # was OverflowError
        (lambda: BasicFilter(1e308).remaining(), "epsilon", "1e+307"),  # was "Invalid literal"
        (lambda: ImprovedAdvancedFilter(1e308, 1e-6), "epsilon", "1e+307"),  # was NaN ratio
        (lambda: RenyiFilter(1e308, 1e-6), "epsilon", "1e+307"),  # was "math domain error"
        (lambda: GaussianFilter(1e308, 1e-6), "epsilon", "1e+307"),
        (lambda: GaussianFilter(MAX, 0.5), "epsilon", "1e+307"),
        (lambda: RenyiFilter(1e-151, 1e-6), "epsilon", "1e-150"),
        (lambda: RenyiFilter.from_rho(1e307, 1e-6), "rho", "1e+306"),
        (lambda: GaussianFilter.from_mu(1e154, 1e-6), "mu", "1e+153"),
        (lambda: Odometer(target_epsilon=1e308), "target_epsilon", "1e+100"),  # was "bounds"
        (lambda: Odometer(target_epsilon=1e-300), "target_epsilon", "1e-100"),  # was "domain"
        (lambda: Odometer().bound(1e308), "rho_total", "1e+307"),  # was "math domain error"
    ],
)
def test_out_of_range_budgets_are_refused_naming_the_argument(make, name, text):
    with pytest.raises(ValueError) as refusal:
        make()
    message = str(refusal.value)
    assert message.startswith(name + " must be in") and text in message


def test_budgets_at_the_ends_of_their_ranges_work():
    for make in (BasicFilter, AdvancedFilter, ImprovedAdvancedFilter, RenyiFilter, GaussianFilter):
        budget = make(1e307, 1e-6)
        assert 0 < budget.remaining() <= 2e307 and math.isfinite(budget.spent.limit)
    assert BasicFilter(1e307).remaining() == 1e307
    # REPRO_8: GaussianFilter(1e308).spend(mu=1.0) failed inside the refusal message
    gaussian = GaussianFilter(1e307, 1e-6)
    gaussian.spend(mu=1.0)
    assert gaussian.mu == pytest.approx(float(mp_largest_mu(1e307, 1e-6)), rel=1e-8)


@pytest.mark.parametrize("target", [1e-100, 1e-30, 1.0, 1e30, 1e100])
def test_odometer_at_extreme_targets_matches_its_formula(target):
    odometer = Odometer(1e-6, target_epsilon=target)
    assert sys.float_info.min < odometer.tuning < MAX
    for total in (0.0, target**2, target, 1e307):
        bound = odometer.bound(total)
        with mp.workdps(60):
            c, r = mp.mpf(odometer.tuning), mp.mpf(total)
            spread = 2 * r + c

            def excess(x, c=c, spread=spread):
                return (
                    mp.log(2) + mp.log(c / spread) / 2 + x * x / (2 * spread)
                    + mp.log(mp.ncdf(x / mp.sqrt(spread))) - mp.log(mp.mpf(10) ** 6)
                )

            lo, hi = mp.mpf(0), mp.sqrt(2 * spread * (mp.log(spread / c) / 2 + mp.log(1e6)))
            for _ in range(300):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if excess(mid) < 0 else (lo, mid)
            exact = r + hi
        assert exact <= bound <= exact * (1 + mp.mpf(1e-8))
