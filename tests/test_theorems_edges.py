"""Edge cases of plda.theorems against exact values in mpmath: the optimal composition next to
the mass at infinite loss, sums and slacks at the ends of the float range, and step lists checked
entry by entry whatever their length."""

from __future__ import annotations

import functools
import math
import sys
import warnings
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

import plda
from plda import theorems
from plda.theorems.common import sum_up


@pytest.fixture(autouse=True)
def _precision():
    """mpmath precision per test (a module-level assignment would leak into other modules)."""
    with mp.workdps(60):
        yield


# --------------------------------------------------------------------------- exact references


def kov_delta(epsilon0, delta0, k, eps):
    """The optimal delta(eps) of k (epsilon0, delta0)-DP steps (Kairouz, Oh & Viswanath 2015,
    Thm. 3.3; Murtagh & Vadhan 2016), in mpmath: the mass 1 - (1 - delta0)^k at +inf plus the
    rest times sum_{i: l_i > eps} a_i (1 - e^(eps - l_i)), l_i = (k - 2i) epsilon0 and a_i the
    binomial pmf of i with success probability p = 1 / (1 + e^epsilon0)."""
    e0, eps = mp.mpf(epsilon0), mp.mpf(eps)
    log_p, log_q = log_binomial_probabilities(epsilon0)
    total = mp.mpf(0)
    for i in range(k // 2 + 1):
        loss = (k - 2 * i) * e0
        if loss <= eps:  # losses decrease with i
            break
        log_a = mp.log(mp.binomial(k, i)) + (k - i) * log_q + i * log_p
        total += mp.exp(log_a) * -mp.expm1(eps - loss)
    keep = (1 - mp.mpf(delta0)) ** k
    return (1 - keep) + keep * total


@functools.lru_cache
def log_binomial_probabilities(epsilon0):
    """``(log p, log q)`` for p = 1 / (1 + e^epsilon0), q = 1 - p, without cancellation for
    epsilon0 up to the largest float (at the precision of the first call)."""
    e0 = mp.mpf(epsilon0)
    log_q = -mp.log1p(mp.exp(-e0))
    return log_q - e0, log_q


def kov_epsilon(epsilon0, delta0, k, delta_total):
    """The smallest eps >= 0 with kov_delta(eps) <= delta_total, by bisection (inf if none)."""
    target = mp.mpf(delta_total)
    lo, hi = mp.mpf(0), k * mp.mpf(epsilon0)
    if kov_delta(epsilon0, delta0, k, hi) > target:
        return mp.inf
    if kov_delta(epsilon0, delta0, k, lo) <= target:
        return lo
    for _ in range(90):  # 2^-90 of k epsilon0: far below the certified gaps tested
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if kov_delta(epsilon0, delta0, k, mid) <= target else (mid, hi)
    return hi


def ulps_from_mass(epsilon0, delta0, k, ulps):
    """The float ``ulps`` steps above (below, if negative) the float nearest 1 - (1 - delta0)^k."""
    value = float(1 - (1 - mp.mpf(delta0)) ** k)
    for _ in range(abs(ulps)):
        value = math.nextafter(value, 1.0 if ulps > 0 else 0.0)
    return value


# --------------------------------------------------------------------------- KOV near the mass


def test_kov_lower_bound_one_ulp_above_the_mass():
    # the auditor's case: it returned [1.9999999999999998, 2.0000000000000004] (nextafter(k
    # epsilon0, 0) as the lower bound) although the exact optimum is 1.0345
    delta_total = 0.8660203251420382
    exact = kov_epsilon(0.01, 0.01, 200, delta_total)
    assert exact == pytest.approx(1.034508446357172, rel=1e-13)
    for result in (
        theorems.kairouz_oh_viswanath(0.01, 0.01, 200, delta_total=delta_total),
        theorems.optimal([(0.01, 0.01)] * 200, delta_total),
    ):
        assert result.epsilon_lower <= exact <= result.epsilon
        assert result.epsilon - result.epsilon_lower <= 1e-12 * result.epsilon


@pytest.mark.slow
@pytest.mark.parametrize(
    "epsilon0, delta0, k",
    [
        (0.01, 0.01, 200),
        (0.01, 0.02, 100),
        (0.05, 0.02, 100),
        (0.05, 0.1, 60),
        (0.5, 0.1, 30),  # the lower bound was 6.9e-9 above the exact value 2 ulps above the mass
        (1.0, 0.1, 30),
        (0.5, 0.3, 10),
        (2.0, 0.1, 3),
        (0.7, 0.5, 1),
    ],
)
def test_kov_brackets_the_exact_optimum_next_to_the_mass(epsilon0, delta0, k):
    mass = 1 - (1 - mp.mpf(delta0)) ** k
    for ulps in (-2, -1, 0, 1, 2, 3, 5, 20, 60, 300):
        delta_total = ulps_from_mass(epsilon0, delta0, k, ulps)
        exact = kov_epsilon(epsilon0, delta0, k, delta_total)
        result = theorems.kairouz_oh_viswanath(epsilon0, delta0, k, delta_total=delta_total)
        assert result.epsilon_lower <= exact <= result.epsilon, (ulps, exact, result)
        if mp.mpf(delta_total) >= mass:  # a finite optimum, bracketed closely
            assert result.epsilon - result.epsilon_lower <= 1e-11 * max(1.0, result.epsilon)
        else:
            assert result.epsilon == math.inf


def test_kov_lower_bound_next_to_the_mass_beyond_exact_rational_steps():
    # above 4096 steps the budget left next to the mass is not computed rationally: the upper
    # bound may be inf there, but the lower bound must still lie below the exact optimum
    epsilon0, delta0, k = 0.001, 1e-5, 5000
    for ulps in (1, 4):
        delta_total = ulps_from_mass(epsilon0, delta0, k, ulps)
        result = theorems.kairouz_oh_viswanath(epsilon0, delta0, k, delta_total=delta_total)
        assert 0 < result.epsilon_lower < k * epsilon0
        assert kov_delta(epsilon0, delta0, k, result.epsilon_lower) > delta_total


# --------------------------------------------------------------------------- sums beyond floats


@pytest.mark.parametrize(
    "values",
    [
        [1e308, 1e308],
        [sys.float_info.max, 9.9e291],  # rounds to the largest float, but lies above it
        [1e308, 1e308, -1e308],  # a partial sum overflows, the total does not
        [1e308, 1e308, -1e308, 0.1],
        [sys.float_info.max, -sys.float_info.max, 1.0],
        [0.1, 0.2, 0.3],
    ],
)
def test_sum_up_is_the_smallest_float_at_or_above_the_exact_sum(values):
    exact = sum(map(Fraction, values))
    result = sum_up(values)
    assert result == math.inf or Fraction(result) >= exact
    below = math.nextafter(result, -math.inf)
    assert math.isinf(below) or Fraction(below) < exact


def test_basic_of_an_overflowing_sum_is_inf():
    # basic composition of two 1e308-DP steps is 2e308-DP: above every float, so inf is the
    # float bound (it raised OverflowError from math.fsum)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tuple(theorems.basic([(1e308, 0.0), (1e308, 0.0)])) == (math.inf, 0.0)
        assert theorems.basic([(1e308, 1e-3)] * 100).epsilon == math.inf
        assert theorems.basic([(1e308, 0.0), (8e307, 0.0)]).epsilon == math.inf  # 1.8e308
        assert theorems.basic([(1e308, 0.0), (7e307, 0.0)]).epsilon == pytest.approx(1.7e308)
        largest = theorems.basic([(sys.float_info.max, 0.0)])
        assert largest.epsilon == sys.float_info.max
        assert tuple(theorems.concurrent([(1e308, 1e-3)] * 2)) == (math.inf, 1.0)
        assert theorems.advanced_kov([(1e308, 0.0)] * 2, 1e-5).epsilon == math.inf
        assert theorems.advanced([(700.0, 0.0)] * 30, 1e-5).epsilon == math.inf  # 2.1e308


# --------------------------------------------------------------------------- step validation


@pytest.mark.parametrize("count", [3, 64, 100, 1000])
@pytest.mark.parametrize("bad", ["0.1", True, False, b"1", np.True_, None, 1j, np.array(0.1)])
@pytest.mark.parametrize("which", ["epsilon", "delta"])
def test_every_step_is_type_checked_whatever_the_list_length(count, bad, which):
    # numpy converted "0.1", True and b"1" in lists of 64 steps and more (only the first 64
    # were checked), while a 3-step list raised TypeError
    for position in sorted({count - 1, count // 2}):
        steps = [(0.1, 0.0)] * count
        steps[position] = (bad, 0.0) if which == "epsilon" else (0.1, bad)
        with pytest.raises(TypeError, match=rf"{which} of steps\[{position}\]"):
            theorems.basic(steps)


@pytest.mark.parametrize(
    "value", [np.float32(0.25), np.int64(0), Fraction(1, 3), np.longdouble(0.1), -0.0]
)
def test_long_and_short_step_lists_read_real_numbers_alike(value):
    short = theorems.basic([(0.1, 0.0), (value, value)])
    long = theorems.basic([(0.1, 0.0)] * 99 + [(value, value)])
    exact = 99 * Fraction(0.1) + Fraction(float(value))
    assert Fraction(long.epsilon) >= exact
    assert long.epsilon == pytest.approx(float(exact), rel=1e-15)
    assert short.delta == long.delta == float(value)


def test_step_values_beyond_the_float_range_are_value_errors():
    # float(10**400) raised OverflowError, which no theorem documents
    for count in (1, 100):
        with pytest.raises(ValueError, match=rf"epsilon of steps\[{count - 1}\]"):
            theorems.basic([(0.1, 0.0)] * (count - 1) + [(10**400, 0.0)])
        with pytest.raises(ValueError, match=rf"delta of steps\[{count - 1}\]"):
            theorems.basic([(0.1, 0.0)] * (count - 1) + [(0.1, Fraction(10**400))])
    with pytest.raises(ValueError, match="epsilon must be"):
        theorems.kairouz_oh_viswanath(10**400, 0.0, 2, delta_total=0.1)
    with pytest.raises(ValueError, match="delta_slack"):
        theorems.advanced([(0.1, 0.0)], -(10**400))
    with pytest.raises(ValueError, match="k must be"):
        theorems.kairouz_oh_viswanath(0.1, 0.0, Fraction(10**400), delta_total=0.1)


# --------------------------------------------------------------------------- subnormal slack


def test_advanced_at_a_subnormal_slack_is_its_closed_form():
    # 1/delta' overflowed for delta' < 5.6e-309, so DRV10 gave inf and the KOV bound fell back
    # to basic composition, although both closed forms are finite
    for slack in (5e-324, 1e-310, 1e-300):
        steps = [(0.01, 0.0)] * 10_000
        s, e = len(steps) * mp.mpf(0.01) ** 2, mp.mpf(0.01)
        log_inv = -mp.log(mp.mpf(slack))
        drv10 = mp.sqrt(2 * log_inv * s) + len(steps) * e * mp.expm1(e)
        result = theorems.advanced(steps, slack).epsilon
        assert drv10 <= result <= drv10 * (1 + 1e-13)
        mean = len(steps) * e * mp.tanh(e / 2)
        kov = min(
            len(steps) * e,
            mean + mp.sqrt(2 * s * mp.log(mp.e + mp.sqrt(s) / mp.mpf(slack))),
            mean + mp.sqrt(2 * s * log_inv),
        )
        result = theorems.advanced_kov(steps, slack).epsilon
        assert kov <= result <= kov * (1 + 1e-13)
        assert result < 40  # basic composition is 100
    # the auditor's case: 10 x (0.1, 0) at delta' = 5e-324 (closed form 12.307)
    result = theorems.advanced([(0.1, 0.0)] * 10, 5e-324).epsilon
    exact = mp.sqrt(2 * -mp.log(mp.mpf(5e-324)) * mp.mpf(0.1) ** 2 * 10) + 10 * mp.mpf(
        0.1
    ) * mp.expm1(mp.mpf(0.1))
    assert exact <= result <= exact * (1 + 1e-13)
    assert result == pytest.approx(12.307138562036856, rel=1e-13)


def test_advanced_kov_of_steps_with_zero_epsilon():
    # log(S) for S = 0 (the log-space form needs the case)
    assert theorems.advanced_kov([(0.0, 1e-3)] * 3, 1e-5).epsilon == 0.0


@pytest.mark.parametrize(
    "epsilon0, k, slack",
    [
        (1e-100, 1, 1e-100),  # log(S) / 2 and log(delta~) cancel
        (1e-150, 5, 1e-300),
        (0.5, 7, 1e-310),
        (1.0, 3, 0.3),
        (0.01, 10_000, 5e-324),
    ],
)
def test_advanced_bounds_are_at_or_above_their_closed_forms(epsilon0, k, slack):
    e, s, d = mp.mpf(epsilon0), k * mp.mpf(epsilon0) ** 2, mp.mpf(slack)
    drv10 = mp.sqrt(2 * -mp.log(d) * s) + k * e * mp.expm1(e)
    result = theorems.advanced([(epsilon0, 0.0)] * k, slack).epsilon
    assert drv10 <= result <= drv10 * (1 + 1e-13)
    mean = k * e * mp.tanh(e / 2)
    kov = min(
        k * e,
        mean + mp.sqrt(2 * s * mp.log(mp.e + mp.sqrt(s) / d)),
        mean + mp.sqrt(2 * s * -mp.log(d)),
    )
    result = theorems.advanced_kov([(epsilon0, 0.0)] * k, slack).epsilon
    assert kov <= result <= kov * (1 + 1e-13)


# --------------------------------------------------------------------------- huge step epsilons


@pytest.mark.parametrize(
    "epsilon0", [1e299, 1.5e300, 1e305, 1e307, 6e307, 1e308, sys.float_info.max]
)
@pytest.mark.parametrize("delta0", [0.0, 1e-3])
def test_kov_for_step_epsilons_near_the_float_limit(epsilon0, delta0):
    # from epsilon0 ~ 1.3e300 Veltkamp's split overflowed to NaN and every loss counted as
    # below eps: delta(1.0) came out as the mass 1 - (1 - delta0)^k (0 for pure DP) instead of
    # ~1, and delta_total queries hung at epsilon0 = 1e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in (1, 2, 3, 10):
            for eps in (1.0, 0.5 * epsilon0, epsilon0, 1e308, sys.float_info.max):
                exact = kov_delta(epsilon0, delta0, k, eps)
                result = theorems.kairouz_oh_viswanath(epsilon0, delta0, k, epsilon_total=eps)
                assert exact <= result.delta, (k, eps)
            for delta_total in (0.0, 1e-300, 0.5, 0.9):
                exact = kov_epsilon(epsilon0, delta0, k, delta_total)
                result = theorems.kairouz_oh_viswanath(epsilon0, delta0, k, delta_total=delta_total)
                assert result.epsilon_lower <= exact <= result.epsilon, (k, delta_total)


# --------------------------------------------------------------------------- warnings


def two_group_delta(groups, eps):
    """Optimal delta(eps) of n1 (e1, d0)-DP and n2 (e2, d0)-DP steps (Murtagh & Vadhan 2016:
    the composition of the randomized responses), in mpmath: loss (n1 - 2i) e1 + (n2 - 2j) e2
    with binomial probabilities, and +inf with the mass 1 - (1 - d0)^(n1 + n2)."""
    (n1, e1), (n2, e2), d0 = groups
    e1, e2, eps = mp.mpf(e1), mp.mpf(e2), mp.mpf(eps)
    keep = (1 - mp.mpf(d0)) ** (n1 + n2)
    p1, p2 = 1 / (1 + mp.e**e1), 1 / (1 + mp.e**e2)
    total = mp.mpf(0)
    for i in range(n1 + 1):
        a = mp.binomial(n1, i) * p1**i * (1 - p1) ** (n1 - i)
        for j in range(n2 + 1):
            loss = (n1 - 2 * i) * e1 + (n2 - 2 * j) * e2
            if loss > eps:
                b = mp.binomial(n2, j) * p2**j * (1 - p2) ** (n2 - j)
                total += a * b * -mp.expm1(eps - loss)
    return (1 - keep) + keep * total


def test_optimal_warns_only_about_the_interval_it_returns():
    # the engine's [3, 3.00671] missed the accuracy, but basic composition caps it to the
    # returned [2.99999999999517, 3.0]: the AccuracyWarning described an interval not returned
    for steps, exact in [
        ([(1.0, 0.0), (2.0, 0.0)], mp.mpf(1) + 2),
        ([(0.1, 0.0)] * 5 + [(0.3, 0.0)] * 2, 5 * mp.mpf(0.1) + 2 * mp.mpf(0.3)),
    ]:
        with warnings.catch_warnings():
            warnings.simplefilter("error", plda.AccuracyWarning)
            result = theorems.optimal(steps, 0.0)
        assert result.epsilon_lower <= exact <= result.epsilon
        assert result.epsilon - result.epsilon_lower <= 1e-3 * result.epsilon
    # a returned interval that does miss the accuracy is named in the warning (the engine's
    # own was [0.5578, inf] here: one ulp above the mass at +inf)
    groups = ((20, 0.01), (20, 0.02), 0.01)
    delta = ulps_from_mass(0.01, 0.01, 40, 1)
    with pytest.warns(plda.AccuracyWarning) as record:
        result = theorems.optimal([(0.01, 0.01)] * 20 + [(0.02, 0.01)] * 20, delta)
    interval = f"[{result.epsilon_lower:.6g}, {result.epsilon:.6g}]"
    assert [interval in str(w.message) for w in record] == [True]
    lo, hi = mp.mpf(0), mp.mpf(0.6)
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if two_group_delta(groups, mid) <= delta else (mid, hi)
    assert result.epsilon_lower <= hi <= result.epsilon


@pytest.mark.parametrize("k", [5000, 10**6])
def test_delta_mass_edge_beyond_4096_steps(k):
    # beyond 4096 steps a target within 64 ulps of the mass at infinity once counted as not
    # covered, and the optimal composition's upper bound was inf where k epsilon holds
    from plda.theorems.common import covers_delta_mass

    mp.mp.dps = 60
    mass = 1 - (1 - mp.mpf(1e-6)) ** k
    near = float(mass)
    for target in (math.nextafter(near, 0), near, math.nextafter(near, 1)):
        assert covers_delta_mass(target, [((1.0, 1e-6), k)]) == (mp.mpf(target) >= mass)
    above = math.nextafter(near, 1) if mp.mpf(near) < mass else near
    guarantee = plda.theorems.kairouz_oh_viswanath(1.0, 1e-6, k, delta_total=above)
    assert guarantee.epsilon <= k * (1 + 1e-12)
