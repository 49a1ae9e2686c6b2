"""Tests of plda.testing: exact references (against independent mpmath computations), float64
vs precise agreement, outward rounding of epsilon, assertions and the audit."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis_settings import examples

import plda
from plda import testing
from plda.testing import (
    AuditCase,
    approximate_dp_composition_delta,
    approximate_dp_composition_epsilon,
    approximate_dp_tradeoff,
    discrete_gaussian_composition_delta,
    discrete_gaussian_composition_epsilon,
    discrete_laplace_composition_delta,
    discrete_laplace_composition_epsilon,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_renyi,
    gaussian_tradeoff,
    laplace_delta,
    laplace_epsilon,
    laplace_renyi,
    poisson_gaussian_delta,
    poisson_gaussian_epsilon,
    poisson_gaussian_renyi,
)

FEW = examples(25)
mp = mpmath.mp


def close(a, b, rtol, atol=0.0):
    return abs(mpmath.mpf(a) - mpmath.mpf(b)) <= rtol * abs(mpmath.mpf(b)) + atol


# ------------------------------------------------------------------ import cost
def test_import_does_not_load_mpmath_or_matplotlib():
    code = "import sys, plda.testing; print('mpmath' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# -------------------------------------- independent mpmath computations (quadrature / brute)
def hockey_quad(p, q, eps, cut, side):
    """``int (p - e^eps q)_+`` where the positive part is the half-line beyond ``cut``."""
    f = lambda x: p(x) - mp.exp(eps) * q(x)  # noqa: E731
    # the integrand decays on a scale 1/|cut|: split finely near the cut, and integrate with
    # 30 extra digits (tanh-sinh nodes crowd the cut, where p and e^eps q nearly cancel)
    with mp.workdps(mp.dps + 30):
        offsets = [mpmath.mpf(o) / (1 + abs(cut)) for o in (0, 0.05, 0.2, 0.5, 1, 2, 4, 8, 16)]
        if side == "right":
            value = mp.quad(f, [cut + o for o in offsets] + [mp.inf])
        else:
            value = mp.quad(f, [-mp.inf] + [cut - o for o in offsets[::-1]])
    return +value


def npdf(x, mean=0):
    return mp.npdf(x, mean, 1)


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("eps", [0.0, 0.7, 4.0])
def test_gaussian_delta_matches_quadrature(mu, eps):
    with mp.workdps(30):
        m, e = mpmath.mpf(mu), mpmath.mpf(eps)
        exact = hockey_quad(lambda x: npdf(x, m), npdf, e, e / m + m / 2, "right")
        assert close(gaussian_delta(eps, mu, precise=True, dps=30), exact, 1e-24)
    assert close(gaussian_delta(eps, mu), exact, 1e-13)


@pytest.mark.parametrize("direction", ["remove", "add"])
@pytest.mark.parametrize(("sigma", "q", "eps"), [(1.0, 0.1, 0.05), (0.8, 0.3, 0.2),
                                                 (2.0, 0.01, 0.005), (1.1, 0.5, 1.5)])
def test_poisson_gaussian_delta_matches_quadrature(direction, sigma, q, eps):
    with mp.workdps(30):
        s, qq, e = mpmath.mpf(1) / sigma, mpmath.mpf(q), mpmath.mpf(eps)
        mix = lambda x: (1 - qq) * npdf(x) + qq * npdf(x, s)  # noqa: E731
        if direction == "remove":  # P = mix, Q = N(0): P/Q increasing, crosses e^eps once
            cut = mp.findroot(lambda x: mp.log(mix(x) / npdf(x)) - e, (-20, 40), solver="bisect")
            exact = hockey_quad(mix, npdf, e, cut, "right")
        else:  # P = N(0), Q = mix: P/Q decreasing, bounded by 1/(1-q)
            if e >= -mp.log1p(-qq):
                exact = mpmath.mpf(0)
            else:
                cut = mp.findroot(lambda x: mp.log(npdf(x) / mix(x)) - e, (-40, 20),
                                  solver="bisect")
                exact = hockey_quad(npdf, mix, e, cut, "left")
        got = poisson_gaussian_delta(eps, sigma, q, direction=direction, precise=True, dps=30)
        assert close(got, exact, 1e-20, 1e-40)
    assert close(poisson_gaussian_delta(eps, sigma, q, direction=direction), exact, 1e-12, 1e-300)


def test_poisson_gaussian_max_is_the_worse_direction_and_q1_is_gaussian():
    for eps in (0.0, 0.01, 0.3, 2.0):
        both = [poisson_gaussian_delta(eps, 1.0, 0.2, direction=d) for d in ("remove", "add")]
        assert poisson_gaussian_delta(eps, 1.0, 0.2) == max(both)
        assert close(poisson_gaussian_delta(eps, 2.0, 1.0), gaussian_delta(eps, 0.5), 1e-13)
    # the add direction is zero beyond -log(1 - q)
    assert poisson_gaussian_delta(-math.log1p(-0.2) * 1.001, 1.0, 0.2, direction="add") == 0.0


@pytest.mark.parametrize("scale", [0.5, 2.0])
@pytest.mark.parametrize("eps", [0.0, 0.1, 0.45, 1.9, 3.0])
def test_laplace_delta_matches_quadrature(scale, eps):
    with mp.workdps(30):
        b, e = mpmath.mpf(scale), mpmath.mpf(eps)
        p = lambda x: mp.exp(-abs(x) / b) / (2 * b)  # noqa: E731
        q = lambda x: mp.exp(-abs(x - 1) / b) / (2 * b)  # noqa: E731
        f = lambda x: max(p(x) - mp.exp(e) * q(x), 0)  # noqa: E731
        cut = min(max((1 - b * e) / 2, 0), 1)  # p = e^eps q on (0, 1)
        exact = mp.quad(f, [-mp.inf, -10, 0, cut, 1, mp.inf])
        assert close(laplace_delta(eps, scale, precise=True, dps=30), exact, 1e-20, 1e-30)
    assert close(laplace_delta(eps, scale), exact, 1e-13, 1e-300)


def kov_formula(e0, d0, k, eps):
    """Kairouz-Oh-Viswanath Thm. 3.3 written out term by term (max(0, .) instead of a cut)."""
    e0, d0, eps = mpmath.mpf(e0), mpmath.mpf(d0), mpmath.mpf(eps)
    total = mp.fsum(
        mp.binomial(k, i) * max(0, mp.exp((k - i) * e0) - mp.exp(eps + i * e0))
        for i in range(k + 1)
    ) / (1 + mp.exp(e0)) ** k
    return 1 - (1 - d0) ** k + (1 - d0) ** k * total


def rr_brute_force(e0, d0, k, eps):
    """Enumerate all 4^k outputs of k runs of RR_(e0, d0): outputs 0 (P only), 1, 2, 3 (Q only)."""
    e0, d0, eps = mpmath.mpf(e0), mpmath.mpf(d0), mpmath.mpf(eps)
    a, c = mp.exp(e0) / (1 + mp.exp(e0)), 1 / (1 + mp.exp(e0))
    p = [d0, (1 - d0) * a, (1 - d0) * c, 0]
    q = [0, (1 - d0) * c, (1 - d0) * a, d0]
    total = mpmath.mpf(0)
    for outcome in itertools.product(range(4), repeat=k):
        pp = mp.fprod(p[o] for o in outcome)
        qq = mp.fprod(q[o] for o in outcome)
        total += max(0, pp - mp.exp(eps) * qq)
    return total


@pytest.mark.parametrize(("e0", "d0", "k"), [(0.3, 0.0, 4), (1.0, 0.01, 3), (0.1, 1e-3, 5)])
@pytest.mark.parametrize("eps", [0.0, 0.2, 0.9, 2.5])
def test_kov_composition_matches_brute_force(e0, d0, k, eps):
    with mp.workdps(30):
        exact = rr_brute_force(e0, d0, k, eps)
        assert close(exact, kov_formula(e0, d0, k, eps), 1e-25)
        assert close(approximate_dp_composition_delta(eps, step_epsilon=e0, step_delta=d0, count=k,
                                                      precise=True, dps=30),
                     exact, 1e-25, 1e-40)
    assert close(approximate_dp_composition_delta(eps, step_epsilon=e0, step_delta=d0, count=k),
                 exact, 1e-13, 1e-300)


@pytest.mark.parametrize(("e0", "d0", "k"), [(0.05, 1e-6, 400), (0.5, 0.0, 200), (2.0, 0.0, 30)])
def test_kov_composition_matches_formula_for_larger_k(e0, d0, k):
    for eps in (0.0, 1.0, 5.0, 0.5 * k * e0):
        with mp.workdps(40):
            exact = kov_formula(e0, d0, k, eps)
        assert close(approximate_dp_composition_delta(eps, step_epsilon=e0, step_delta=d0, count=k),
                     exact, 1e-12, 1e-300)


def test_kov_composition_is_stable_at_a_million_steps():
    k, e0 = 10**6, 0.01
    values = approximate_dp_composition_delta(np.array([10.0, 60.0, 90.0]), step_epsilon=e0,
                                              step_delta=0.0, count=k)
    assert np.all(np.isfinite(values)) and np.all(np.diff(values) < 0) and values[-1] > 0
    precise = approximate_dp_composition_delta(60.0, step_epsilon=e0, step_delta=0.0, count=k,
                                               precise=True, dps=25)
    assert close(values[1], precise, 1e-12)
    eps = approximate_dp_composition_epsilon(1e-5, step_epsilon=e0, step_delta=0.0, count=k)
    assert approximate_dp_composition_delta(eps, step_epsilon=e0, step_delta=0.0, count=k,
                                            precise=True, dps=25) <= 1e-5
    assert approximate_dp_composition_delta(eps * (1 - 1e-12), step_epsilon=e0, step_delta=0.0,
                                            count=k) > 1e-5


def discrete_brute_force(log_weight, reach, k, shift, epsilons):
    """``sum over outputs y in box^k of (P(y) - e^eps Q(y))_+`` for noise weights ``w(x)``
    (normalized on a box wide enough that the remainder is negligible at 30 digits)."""
    xs = range(-reach, reach + shift + 1)
    norm = mp.fsum(mp.exp(log_weight(x)) for x in range(-4 * reach, 4 * reach + 1))
    p1 = {y: mp.exp(log_weight(y)) / norm for y in xs}
    q1 = {y: mp.exp(log_weight(y - shift)) / norm for y in xs}
    pairs = [(mp.fprod(p1[y] for y in ys), mp.fprod(q1[y] for y in ys))
             for ys in itertools.product(xs, repeat=k)]
    return [mp.fsum(max(0, pp - mp.exp(eps) * qq) for pp, qq in pairs) for eps in epsilons]


BRUTE_EPSILONS = (0.0, 0.5, 1.4)


@pytest.mark.parametrize(("t", "k", "sens"), [(1.0, 2, 1), (1.3, 2, 2), (6.0, 3, 1)])
def test_discrete_laplace_matches_brute_force(t, k, sens):
    with mp.workdps(30):
        exact = discrete_brute_force(lambda x: -mpmath.mpf(t) * abs(x), int(75 / t), k, sens,
                                     BRUTE_EPSILONS)
        for eps, value in zip(BRUTE_EPSILONS, exact, strict=True):
            got = discrete_laplace_composition_delta(eps, parameter=t, count=k, sensitivity=sens,
                                                     precise=True, dps=30)
            assert close(got, value, 1e-18, 1e-28)
            # 1e-28: the brute force itself carries 30 digits
            assert close(discrete_laplace_composition_delta(eps, parameter=t, count=k,
                                                            sensitivity=sens), value, 1e-13, 1e-28)


@pytest.mark.parametrize(("sigma", "k", "sens"), [(0.8, 2, 1), (1.5, 2, 2), (0.6, 3, 1)])
def test_discrete_gaussian_matches_brute_force(sigma, k, sens):
    with mp.workdps(30):
        reach = int(12 * sigma) + 2
        exact = discrete_brute_force(lambda x: -x * x / (2 * mpmath.mpf(sigma) ** 2), reach, k,
                                     sens, BRUTE_EPSILONS)
        for eps, value in zip(BRUTE_EPSILONS, exact, strict=True):
            got = discrete_gaussian_composition_delta(eps, sigma=sigma, count=k, sensitivity=sens,
                                                      precise=True, dps=30)
            assert close(got, value, 1e-18, 1e-28)
            assert close(discrete_gaussian_composition_delta(eps, sigma=sigma, count=k,
                                                             sensitivity=sens), value, 1e-12,
                         1e-28)


def test_discrete_laplace_with_unit_sensitivity_is_randomized_response():
    # P(X <= 0) = 1/(1+r), P(X >= 1) = r/(1+r): exactly RR with epsilon0 = t
    for eps in (0.0, 0.3, 2.0, 7.0):
        a = discrete_laplace_composition_delta(eps, parameter=0.4, count=25)
        b = approximate_dp_composition_delta(eps, step_epsilon=0.4, step_delta=0.0, count=25)
        assert close(a, b, 1e-13, 1e-300)


# ------------------------------------------------------------------------- Rényi
@pytest.mark.parametrize("alpha", [1.5, 2.0, 7.0])
def test_renyi_closed_forms_match_quadrature(alpha):
    with mp.workdps(30):
        a = mpmath.mpf(alpha)

        def renyi(p, q, points):
            return mp.log(mp.quad(lambda x: p(x) ** a * q(x) ** (1 - a), points)) / (a - 1)

        mu = mpmath.mpf(0.8)  # the float 0.8, exactly
        gauss = renyi(lambda x: mp.npdf(x, mu, 1), lambda x: mp.npdf(x, 0, 1),
                      [-mp.inf, 0, mu, mp.inf])
        assert close(gaussian_renyi(alpha, mu=0.8, precise=True, dps=30), gauss, 1e-20)
        b = mpmath.mpf(0.8)
        lap = renyi(lambda x: mp.exp(-abs(x) / b) / (2 * b),
                    lambda x: mp.exp(-abs(x - 1) / b) / (2 * b), [-mp.inf, 0, 1, mp.inf])
        assert close(laplace_renyi(alpha, 0.8, precise=True, dps=30), lap, 1e-20)
        assert close(laplace_renyi(alpha, 0.8), lap, 1e-13)
        if float(alpha).is_integer():
            q = mpmath.mpf(0.05)
            mix = lambda x: (1 - q) * mp.npdf(x) + q * mp.npdf(x, 1)  # noqa: E731
            sampled = renyi(mix, mp.npdf, [-mp.inf, 0, 1, mp.inf])
            assert close(poisson_gaussian_renyi(int(alpha), 1.0, 0.05, precise=True, dps=30),
                         sampled, 1e-20)
            assert close(poisson_gaussian_renyi(int(alpha), 1.0, 0.05), sampled, 1e-12)


def test_renyi_limits():
    t = 0.7
    assert close(laplace_renyi(1, 1 / t), t + math.expm1(-t), 1e-15)
    assert close(laplace_renyi(1 + 1e-7, 1 / t), laplace_renyi(1, 1 / t), 1e-6)
    assert poisson_gaussian_renyi(4, 2.0, 1.0) == gaussian_renyi(4, mu=0.5)
    # small results keep their relative accuracy (no log of 1 + tiny)
    assert close(poisson_gaussian_renyi(2, 1.0, 1e-5),
                 poisson_gaussian_renyi(2, 1.0, 1e-5, precise=True), 1e-13)


# issue 25, item 6: one order range, one message; gaussian_renyi takes mu like the others
@pytest.mark.parametrize("alpha", [0.01, 0.3, 0.5, 0.5 + 1e-6, 0.9])
def test_laplace_renyi_below_order_one_matches_quadrature(alpha):
    # the same integral as above 1 (Mironov 2017 states it for alpha > 1 only)
    with mp.workdps(30):
        a, b = mpmath.mpf(alpha), mpmath.mpf(0.8)
        lap = mp.log(mp.quad(lambda x: (mp.exp(-abs(x) / b) / (2 * b)) ** a
                             * (mp.exp(-abs(x - 1) / b) / (2 * b)) ** (1 - a),
                             [-mp.inf, 0, 1, mp.inf])) / (a - 1)
        assert close(laplace_renyi(alpha, 0.8, precise=True, dps=30), lap, 1e-20)
        assert close(laplace_renyi(alpha, 0.8), lap, 1e-12)


def test_laplace_renyi_is_continuous_at_one_half_and_one():
    for t in (0.02, 0.7, 30.0):
        half = laplace_renyi(0.5, 1 / t)
        assert close(half, -2 * (-t / 2 + math.log1p(t / 2)), 1e-14)  # e^{-t/2} (1 + t/2)
        assert close(laplace_renyi(0.5 - 1e-9, 1 / t), half, 1e-7)
        assert close(laplace_renyi(0.5 + 1e-9, 1 / t), half, 1e-7)
        assert close(laplace_renyi(1 - 1e-7, 1 / t), laplace_renyi(1, 1 / t), 1e-5)


@pytest.mark.parametrize("order", [0.0, -1.0, math.inf, math.nan])
def test_gaussian_and_laplace_orders_share_one_range_and_message(order):
    messages = set()
    for call in (lambda: gaussian_renyi(order, mu=1.0), lambda: laplace_renyi(order, 1.0)):
        with pytest.raises(ValueError, match=r"^order must be a finite number in \(0, inf\)") as e:
            call()
        messages.add(str(e.value))
    assert len(messages) == 1
    with pytest.raises(ValueError, match=r"^order must be an integer in \[2, inf\)"):
        poisson_gaussian_renyi(order, 1.0, 0.1)  # the binomial expansion: integers only


def test_gaussian_renyi_takes_mu_and_the_old_sigma_form_warns():
    assert gaussian_renyi(3.0, mu=0.5) == 3.0 * 0.25 / 2
    with pytest.warns(DeprecationWarning, match=r"0\.2\.0.*mu=sensitivity / sigma"):
        old = gaussian_renyi(3.0, 2.0)  # sigma 2, sensitivity 1: the former positional form
    assert old == 3.0 / 8 == gaussian_renyi(3.0, mu=0.5)
    with pytest.warns(DeprecationWarning):
        assert gaussian_renyi(3.0, sigma=4.0, sensitivity=2.0) == 3.0 * 4.0 / 32
    with pytest.raises(TypeError, match="needs mu"):
        gaussian_renyi(3.0)
    with pytest.raises(TypeError, match="not both"):
        gaussian_renyi(3.0, 2.0, mu=0.5)


# ------------------------------------------------------------------------ tradeoff
def test_tradeoff_references_are_dual_to_delta():
    # delta(eps) = max_alpha 1 - e^eps alpha - beta(alpha) (Dong, Roth & Su 2019, Prop. 2.12)
    alphas = np.concatenate([np.geomspace(1e-12, 1e-3, 2000), np.linspace(1e-3, 1, 200001)])
    for eps in (0.0, 0.5, 2.0):
        dual = np.max(1 - np.exp(eps) * alphas - gaussian_tradeoff(alphas, 1.2))
        assert close(dual, gaussian_delta(eps, 1.2), 1e-4)
        dual = np.max(1 - np.exp(eps) * alphas - approximate_dp_tradeoff(alphas, 1.0, 1e-3))
        assert close(dual, approximate_dp_composition_delta(eps, step_epsilon=1.0, step_delta=1e-3,
                                                            count=1), 1e-4)
    with mp.workdps(40):
        assert close(gaussian_tradeoff(0.05, 1.0, precise=True, dps=40),
                     mp.ncdf(-mp.sqrt(2) * mp.erfinv(2 * mpmath.mpf(0.05) - 1) - 1), 1e-35)
    assert close(gaussian_tradeoff(1e-10, 2.0), gaussian_tradeoff(1e-10, 2.0, precise=True), 1e-13)


# ----------------------------------------------------------- float64 vs precise
@FEW
@given(st.floats(0.01, 20.0), st.floats(0.0, 60.0))
def test_gaussian_float_matches_precise(mu, eps):
    exact = gaussian_delta(eps, mu, precise=True, dps=30)
    assert close(gaussian_delta(eps, mu), exact, 1e-11, 1e-300)


@FEW
@given(st.floats(0.3, 8.0), st.floats(1e-4, 1.0), st.floats(0.0, 8.0),
       st.sampled_from(["remove", "add", "max"]))
def test_poisson_gaussian_float_matches_precise(sigma, q, eps, direction):
    exact = poisson_gaussian_delta(eps, sigma, q, direction=direction, precise=True, dps=30)
    got = poisson_gaussian_delta(eps, sigma, q, direction=direction)
    # near eps = -log(1 - q) the add direction is ill-conditioned in q: allow its bound
    assert close(got, exact, 1e-8, 1e-300)


@FEW
@given(st.floats(0.01, 3.0), st.floats(0.0, 0.1), st.integers(1, 300), st.floats(0.0, 10.0))
def test_kov_float_matches_precise(e0, d0, k, eps):
    exact = approximate_dp_composition_delta(eps, step_epsilon=e0, step_delta=d0, count=k,
                                             precise=True, dps=30)
    assert close(approximate_dp_composition_delta(eps, step_epsilon=e0, step_delta=d0, count=k),
                 exact, 1e-11, 1e-300)


@FEW
@given(st.floats(0.1, 2.0), st.integers(1, 12), st.integers(1, 3), st.floats(0.0, 6.0))
def test_discrete_laplace_float_matches_precise(t, k, sens, eps):
    exact = discrete_laplace_composition_delta(eps, parameter=t, count=k, sensitivity=sens,
                                               precise=True, dps=30)
    assert close(discrete_laplace_composition_delta(eps, parameter=t, count=k, sensitivity=sens),
                 exact, 1e-11, 1e-300)


@pytest.mark.parametrize(("sigma", "k", "sens"), [(0.5, 3, 1), (2.0, 2, 2), (1.0, 5, 1)])
def test_discrete_gaussian_float_matches_precise(sigma, k, sens):
    for eps in (0.0, 0.8, 3.0, 9.0):
        exact = discrete_gaussian_composition_delta(eps, sigma=sigma, count=k, sensitivity=sens,
                                                    precise=True, dps=25)
        assert close(discrete_gaussian_composition_delta(eps, sigma=sigma, count=k,
                                                         sensitivity=sens), exact, 1e-11,
                     1e-60)


def test_precise_returns_mpf_at_requested_digits():
    value = gaussian_delta(1.0, 1.0, precise=True, dps=60)
    assert isinstance(value, mpmath.mpf)
    with mp.workdps(80):
        finer = gaussian_delta(1.0, 1.0, precise=True, dps=75)
        assert abs(value - finer) < mpmath.mpf(10) ** -58
    arr = gaussian_delta(np.array([0.5, 1.0]), 1.0, precise=True, dps=20)
    assert arr.dtype == object and isinstance(arr[0], mpmath.mpf)


def test_vectorized_float_input_keeps_shape():
    eps = np.array([[0.0, 1.0], [2.0, 3.0]])
    out = gaussian_delta(eps, 1.0)
    assert out.shape == (2, 2) and out[0, 1] == gaussian_delta(1.0, 1.0)


# ----------------------------------------------------- epsilon: outward rounding
EPSILON_CASES = [
    ("gaussian", lambda d, **kw: gaussian_epsilon(d, 1.3, **kw),
     lambda e, **kw: gaussian_delta(e, 1.3, **kw)),
    ("poisson", lambda d, **kw: poisson_gaussian_epsilon(d, 0.9, 0.05, **kw),
     lambda e, **kw: poisson_gaussian_delta(e, 0.9, 0.05, **kw)),
    ("laplace", lambda d, **kw: laplace_epsilon(d, 0.7, **kw),
     lambda e, **kw: laplace_delta(e, 0.7, **kw)),
    ("kov", lambda d, **kw: approximate_dp_composition_epsilon(d, step_epsilon=0.2,
                                                               step_delta=1e-12, count=60, **kw),
     lambda e, **kw: approximate_dp_composition_delta(e, step_epsilon=0.2, step_delta=1e-12,
                                                      count=60, **kw)),
    ("discrete-laplace", lambda d, **kw: discrete_laplace_composition_epsilon(d, parameter=0.5,
            count=8, sensitivity=2, **kw),
     lambda e, **kw: discrete_laplace_composition_delta(e, parameter=0.5, count=8, sensitivity=2,
                                                        **kw)),
    ("discrete-gaussian", lambda d, **kw: discrete_gaussian_composition_epsilon(d, sigma=1.0,
            count=3, **kw),
     lambda e, **kw: discrete_gaussian_composition_delta(e, sigma=1.0, count=3, **kw)),
]


@pytest.mark.parametrize(("name", "epsilon_of", "delta_of"), EPSILON_CASES,
                         ids=[c[0] for c in EPSILON_CASES])
@pytest.mark.parametrize("target", [0.3, 1e-3, 1e-6, 1e-10])
def test_epsilon_is_a_tight_upper_bound(name, epsilon_of, delta_of, target):
    eps = epsilon_of(target)
    if eps == 0:
        assert delta_of(0.0, precise=True, dps=30) <= target
        return
    # certified: the exact delta there is within the target; tight: just below, it is not
    assert delta_of(eps, precise=True, dps=30) <= target
    assert delta_of(eps * (1 - 1e-11), precise=True, dps=30) > target
    precise = epsilon_of(target, precise=True, dps=30)
    assert isinstance(precise, mpmath.mpf)
    assert precise <= eps and close(precise, eps, 1e-11)
    with mp.workdps(30):
        assert delta_of(precise, precise=True, dps=30) <= target


@FEW
@given(st.floats(0.05, 10.0), st.floats(1e-14, 0.5))
def test_gaussian_epsilon_is_certified_and_tight(mu, target):
    eps = gaussian_epsilon(target, mu)
    assert gaussian_delta(eps, mu, precise=True, dps=30) <= target
    if eps > 0:
        assert gaussian_delta(eps * (1 - 1e-10), mu, precise=True, dps=30) > target


@FEW
@given(st.floats(0.5, 5.0), st.floats(1e-3, 1.0), st.floats(1e-12, 0.1))
def test_poisson_gaussian_epsilon_is_certified(sigma, q, target):
    eps = poisson_gaussian_epsilon(target, sigma, q)
    assert poisson_gaussian_delta(eps, sigma, q, precise=True, dps=30) <= target


def test_binomial_masses_are_accurate_for_a_million_trials():
    from plda.testing._internal.binomial import log_binomial_pmf

    n, p = 10**6, 0.3
    i = np.array([0, 1, 17, 299_000, 300_000, 301_234, 310_000, 999_999, 10**6])
    got, err = log_binomial_pmf(i, n, math.log(p), math.log1p(-p))
    with mp.workdps(40):
        pp = mpmath.mpf(p)
        for j, g, e in zip(i, got, err, strict=True):
            exact = mp.log(mp.binomial(n, int(j))) + int(j) * mp.log(pp) + (n - int(j)) * mp.log(
                1 - pp)
            assert abs(g - exact) <= e
            assert abs(g - exact) <= 1e-12 * max(1.0, abs(float(exact)))


def test_epsilon_edge_cases():
    assert gaussian_epsilon(0.0, 1.0) == math.inf
    assert gaussian_epsilon(1.0, 1.0) == 0.0
    assert laplace_epsilon(0.0, 2.0) == pytest.approx(0.5, rel=1e-14)
    assert laplace_epsilon(0.0, 2.0) >= 0.5
    # pure DP: delta reaches 0 at k * epsilon0
    assert approximate_dp_composition_epsilon(0.0, step_epsilon=0.3, step_delta=0.0,
                                              count=10) == 3.0
    # ten runs of 0.1 lie 5.5e-17 above the float 1.0: the largest loss is rounded up (taken
    # as the float 1.0, the tiniest deltas read no finite epsilon)
    tiny = approximate_dp_composition_epsilon(1e-20, step_epsilon=0.1, step_delta=0.0, count=10)
    assert 1.0 <= tiny <= 1.0 + 1e-14
    assert approximate_dp_composition_delta(tiny, step_epsilon=0.1, step_delta=0.0, count=10,
                                            precise=True) <= 1e-20
    # delta below the mass at +inf: no finite epsilon
    assert approximate_dp_composition_epsilon(5e-3, step_epsilon=0.3, step_delta=1e-3,
                                              count=10) == math.inf
    assert approximate_dp_composition_delta(0.2, step_epsilon=0.5, step_delta=1.0, count=3) == 1.0
    assert mpmath.isinf(approximate_dp_composition_epsilon(5e-3, step_epsilon=0.3, step_delta=1e-3,
                                                           count=10, precise=True))
    # the add direction of a sampled Gaussian has losses below -log(1 - q) only
    edge = poisson_gaussian_epsilon(0.0, 1.0, 0.1, direction="add")
    exact = poisson_gaussian_epsilon(0.0, 1.0, 0.1, direction="add", precise=True, dps=30)
    with mp.workdps(30):
        assert close(exact, -mp.log1p(-mpmath.mpf(0.1)), 1e-28)
    assert edge >= exact and close(edge, exact, 1e-14)


# ---------------------------------------------------------------------- validation
@pytest.mark.parametrize(("call", "match"), [
    (lambda: gaussian_delta(-0.1, 1.0), "epsilon"),
    (lambda: gaussian_delta(0.1, 0.0), "mu"),
    (lambda: gaussian_epsilon(1.5, 1.0), "delta"),
    (lambda: gaussian_delta(0.1, 1.0, precise=True, dps=5), "dps"),
    (lambda: poisson_gaussian_delta(0.1, 1.0, 0.0), "sample_rate"),
    (lambda: poisson_gaussian_delta(0.1, 1.0, 0.1, direction="both"), "direction"),
    (lambda: approximate_dp_composition_delta(1.0, step_epsilon=0.1, step_delta=1e-5, count=0),
     "count"),
    (lambda: approximate_dp_composition_delta(1.0, step_epsilon=-0.1, step_delta=1e-5, count=3),
     "step_epsilon"),
    (lambda: approximate_dp_composition_delta(1.0, step_epsilon=0.1, step_delta=2.0, count=3),
     "step_delta"),
    (lambda: discrete_laplace_composition_delta(1.0, parameter=0.5, count=3, sensitivity=1.5),
     "sensitivity"),
    (lambda: discrete_gaussian_composition_delta(1.0, sigma=-1.0, count=3), "sigma"),
    (lambda: laplace_renyi(0.0, 1.0), "order"),
    (lambda: gaussian_renyi(-1.0, mu=1.0), "order"),
    (lambda: gaussian_renyi(1.0, mu=0.0), "mu"),
    (lambda: poisson_gaussian_renyi(2.5, 1.0, 0.1), "order"),
    (lambda: gaussian_tradeoff(1.5, 1.0), "alpha"),
])
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---------------------------------------------------------- agreement with plda
@pytest.mark.parametrize(("mechanism", "count", "reference"), [
    (plda.Gaussian(2.0), 10, lambda d: gaussian_epsilon(d, math.sqrt(10) / 2)),
    (plda.ApproximateDP(0.1, 1e-7), 100,
     lambda d: approximate_dp_composition_epsilon(d, step_epsilon=0.1, step_delta=1e-7, count=100)),
    (plda.DiscreteLaplace(0.3, 2), 20,
     lambda d: discrete_laplace_composition_epsilon(d, parameter=0.3, count=20, sensitivity=2)),
    (plda.PoissonSampled(plda.Gaussian(1.0), 0.1), 1,
     lambda d: poisson_gaussian_epsilon(d, 1.0, 0.1)),
])
def test_references_fall_inside_plda_bounds(mechanism, count, reference):
    deltas = np.array([1e-3, 1e-6])
    testing.assert_epsilon_within(reference(deltas), mechanism, deltas, count=count, rtol=0.0)


# ---------------------------------------------------------------------- assertions
GAUSS = plda.Gaussian(1.0)
EXACT = gaussian_epsilon(1e-5, 1.0)


def test_assert_epsilon_within_passes_and_fails_with_a_full_message():
    testing.assert_epsilon_within(EXACT, GAUSS, 1e-5)
    with pytest.raises(AssertionError, match=r"under-reports privacy loss, below the lower bound "
                       r"by 0\.377\d* absolute \(8\.6\d*% relative\)") as info:
        testing.assert_epsilon_within(4.0, GAUSS, 1e-5)
    message = str(info.value)
    assert "expected [4.377" in message and "observed 4" in message and "delta=1e-05" in message
    with pytest.raises(AssertionError, match=r"over-reports privacy loss, above the upper bound"):
        testing.assert_epsilon_within(4.5, GAUSS, 1e-5)
    with pytest.raises(AssertionError, match="NaN"):
        testing.assert_epsilon_within(float("nan"), GAUSS, 1e-5)


def test_assert_epsilon_within_tolerances_and_one_sided_mode():
    testing.assert_epsilon_within(EXACT * 1.009, GAUSS, 1e-5, rtol=1e-2)
    testing.assert_epsilon_within(EXACT + 0.05, GAUSS, 1e-5, rtol=0.0, atol=0.1)
    testing.assert_epsilon_within(EXACT * 2, GAUSS, 1e-5, allow_over_report=True)
    with pytest.raises(AssertionError, match="over-reporting allowed"):
        testing.assert_epsilon_within(EXACT * 0.9, GAUSS, 1e-5, allow_over_report=True)
    with pytest.raises(ValueError, match="rtol"):
        testing.assert_epsilon_within(EXACT, GAUSS, 1e-5, rtol=-1.0)


def test_assert_epsilon_within_accepts_every_kind_of_reference():
    deltas = np.array([1e-3, 1e-5, 1e-7])
    exact = gaussian_epsilon(deltas, 1.0)
    pld = plda.PrivacyLossDistribution.from_mechanism(GAUSS)
    testing.assert_epsilon_within(exact, pld, deltas)
    testing.assert_epsilon_within(exact, lambda d: gaussian_epsilon(d, 1.0), deltas, rtol=1e-12)
    testing.assert_epsilon_within(exact, (exact * 0.999, exact * 1.001), deltas, rtol=0)
    testing.assert_epsilon_within(exact, exact, deltas, rtol=0)
    with pytest.raises(AssertionError, match=r"at 1 of 2"):  # a list holds values, not a pair
        testing.assert_epsilon_within([exact[0], exact[0]], list(exact[:2]), deltas[:2], rtol=0)
    testing.assert_epsilon_within(gaussian_epsilon(1e-5, math.sqrt(3)), GAUSS, 1e-5, count=3)
    bad = exact.copy()
    bad[1] *= 0.5
    with pytest.raises(AssertionError, match=r"at 1 of 3 point\(s\)"):
        testing.assert_epsilon_within(bad, GAUSS, deltas)
    with pytest.raises(TypeError, match="reference must be"):
        testing.assert_epsilon_within(1.0, object(), 1e-5)
    with pytest.raises(ValueError, match="count"):
        testing.assert_epsilon_within(1.0, pld, 1e-5, count=2)


@pytest.mark.parametrize("reference", [
    lambda d: float("nan"), float("nan"), (math.nan, math.nan), (math.nan, 2.0), (1.0, math.nan),
    np.array([1.0, math.nan]),
])
@pytest.mark.parametrize("observed", [1e9, -5.0, 1e-12, 1.0])
def test_a_nan_reference_raises_instead_of_accepting_anything(reference, observed):
    # a NaN end left the band open (every comparison with NaN is false): the assertion passed
    # for any observed value, silently checking nothing
    with pytest.raises(ValueError, match=r"reference \(.*\) is NaN at [12] of 2 point"):
        testing.assert_epsilon_within(observed, reference, np.array([1e-5, 1e-6]))
    with pytest.raises(ValueError, match=r"reference .* is NaN .*\(epsilon="):
        testing.assert_delta_within(observed, reference, np.array([0.5, 1.0]))
    with pytest.raises(ValueError, match=r"reference .* is NaN .*\(alpha="):
        testing.assert_tradeoff_within(observed, reference, np.array([0.1, 0.2]))
    with pytest.raises(ValueError, match=r"reference .* is NaN"):
        testing.assert_privacy_curve_within(np.array([observed] * 2), reference,
                                            np.array([0.5, 1.0]))


def test_infinite_references_are_still_accepted():
    testing.assert_epsilon_within(np.inf, np.inf, 1e-5)
    testing.assert_epsilon_within(3.0, (2.0, np.inf), 1e-5)
    with pytest.raises(AssertionError, match="under-reports"):
        testing.assert_epsilon_within(1.0, (2.0, np.inf), 1e-5)


def test_assert_delta_within():
    eps = np.array([0.5, 2.0, 4.0])
    exact = gaussian_delta(eps, 1.0)
    testing.assert_delta_within(exact, GAUSS, eps)
    with pytest.raises(AssertionError, match=r"delta\(epsilon=2\): .* under-reports"):
        testing.assert_delta_within(exact * np.array([1, 0.8, 1]), GAUSS, eps)


def test_assert_privacy_curve_within_reads_steep_points_horizontally():
    eps = np.linspace(0.0, 8.0, 33)
    deltas = gaussian_delta(eps, 1.0)
    testing.assert_privacy_curve_within(deltas, GAUSS, eps)
    # at eps = 8, delta ~ 1e-14 falls steeply: shifting epsilon by 0.05% moves delta by ~1%,
    # which fails vertically but passes horizontally
    shifted = gaussian_delta(eps * (1 + 5e-4), 1.0)
    with pytest.raises(AssertionError):
        testing.assert_delta_within(shifted, GAUSS, eps)
    testing.assert_privacy_curve_within(shifted, GAUSS, eps)
    broken = deltas.copy()
    broken[10] *= 0.5
    outside = r"(?s)also outside the epsilon.*delta\(epsilon=2\.5\)"
    with pytest.raises(AssertionError, match=outside):
        testing.assert_privacy_curve_within(broken, GAUSS, eps)
    with pytest.raises(AssertionError, match="under-reports"):  # exact reference: vertical only
        testing.assert_privacy_curve_within(broken, lambda e: gaussian_delta(e, 1.0), eps)
    with pytest.raises(ValueError, match="same shape"):
        testing.assert_privacy_curve_within(deltas[:-1], GAUSS, eps)


def test_the_curve_assertion_takes_its_arguments_in_the_order_of_the_others():
    # observed, reference, then where (assert_delta_curve_within put the epsilons first): the
    # old name and order still work until plda 0.2.0, with a DeprecationWarning
    eps = np.linspace(0.0, 8.0, 9)
    deltas, broken = gaussian_delta(eps, 1.0), gaussian_delta(eps, 1.0) * 0.5
    with pytest.warns(DeprecationWarning, match=r"0\.2\.0.*assert_privacy_curve_within"):
        testing.assert_delta_curve_within(eps, deltas, GAUSS)
    with pytest.warns(DeprecationWarning), pytest.raises(AssertionError, match="under-reports"):
        testing.assert_delta_curve_within(eps, broken, GAUSS, rtol=1e-6)
    with pytest.raises(AssertionError, match="under-reports"):
        testing.assert_privacy_curve_within(broken, GAUSS, eps, rtol=1e-6)


def test_assert_tradeoff_within():
    alpha = np.array([1e-4, 0.05, 0.5])
    beta = gaussian_tradeoff(alpha, 1.0)
    testing.assert_tradeoff_within(beta, lambda a: gaussian_tradeoff(a, 1.0), alpha, rtol=1e-12)
    # a larger beta claims tests are weaker than they are: under-reporting
    with pytest.raises(AssertionError, match=r"beta\(alpha=0.05\).*under-reports privacy loss"):
        testing.assert_tradeoff_within(beta * np.array([1, 1.1, 1]),
                                       lambda a: gaussian_tradeoff(a, 1.0), alpha)
    testing.assert_tradeoff_within(beta * 0.5, lambda a: gaussian_tradeoff(a, 1.0), alpha,
                                   allow_over_report=True)
    if hasattr(plda.PrivacyLossDistribution, "tradeoff_bounds"):
        testing.assert_tradeoff_within(beta, GAUSS, alpha)
    else:
        with pytest.raises(NotImplementedError, match="tradeoff_bounds"):
            testing.assert_tradeoff_within(beta, GAUSS, alpha)


# --------------------------------------------------------------------------- audit
ORDERS = (1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 128, 256)


def rdp_accountant(case):
    """The classic RDP accountant of docs/testing.md (Mironov 2017, Prop. 3 conversion)."""
    m = case.mechanism
    if isinstance(m, plda.Gaussian):
        curve = [(a, gaussian_renyi(a, mu=m.mu)) for a in ORDERS]
    elif isinstance(m, plda.Laplace):
        curve = [(a, laplace_renyi(a, m.scale, m.sensitivity)) for a in ORDERS]
    elif isinstance(m, plda.PoissonSampled) and isinstance(m.mechanism, plda.Gaussian):
        g = m.mechanism
        curve = [(a, poisson_gaussian_renyi(a, g.sigma, m.sample_rate, g.sensitivity))
                 for a in ORDERS if float(a).is_integer()]
    elif isinstance(m, plda.ApproximateDP) and m.delta == 0:
        curve = [(a, min(m.epsilon, a * m.epsilon**2 / 2)) for a in ORDERS]
    else:
        raise NotImplementedError(f"no RDP for {type(m).__name__}")
    return min(case.count * r + math.log(1 / case.delta) / (a - 1) for a, r in curve)


def gdp_accountant(case):
    """The CLT / Gaussian-DP approximation of docs/testing.md."""
    m, k = case.mechanism, case.count
    if isinstance(m, plda.Gaussian):
        mu = math.sqrt(k) * m.sensitivity / m.sigma
    elif isinstance(m, plda.PoissonSampled) and isinstance(m.mechanism, plda.Gaussian):
        s = m.mechanism.sigma / m.mechanism.sensitivity
        mu = m.sample_rate * math.sqrt(k * math.expm1(1 / s**2))
    elif isinstance(m, plda.Laplace):
        t = m.sensitivity / m.scale
        mu = math.sqrt(2 * k * (t + math.expm1(-t)))
    elif isinstance(m, plda.ApproximateDP) and m.delta == 0:
        mu = math.sqrt(2 * k * m.epsilon * math.tanh(m.epsilon / 2))
    else:
        raise NotImplementedError(f"no CLT for {type(m).__name__}")
    return gaussian_epsilon(case.delta, mu)


QUICK = (
    AuditCase("gaussian", plda.Gaussian(1.0), 1, 1e-5),
    AuditCase("laplace-composed", plda.Laplace(20.0), 100, 1e-6),
    AuditCase("dpsgd-small", plda.PoissonSampled(plda.Gaussian(1.0), 0.1), 50, 1e-5),
    AuditCase("pure-dp", plda.ApproximateDP(0.5), 20, 1e-6),
    AuditCase("discrete-gaussian", plda.DiscreteGaussian(3.0), 20, 1e-6),
)


def test_audit_rdp_over_reports_everywhere_it_applies():
    report = testing.audit(rdp_accountant, QUICK)
    verdicts = {r.case: r.verdict for r in report.rows}
    assert verdicts["discrete-gaussian"].startswith("skipped (no RDP")
    for row in report.rows[:4]:
        assert row.verdict.startswith("over-reports by") and row.deviation > 1e-3
        assert row.lower <= row.upper < row.observed
    assert report.passed and not report.under_reports


def test_audit_gdp_is_exact_for_gaussians_and_under_reports_dpsgd():
    report = testing.audit(gdp_accountant, QUICK)
    verdicts = {r.case: r.verdict for r in report.rows}
    assert verdicts["gaussian"] == "inside"
    assert verdicts["dpsgd-small"].startswith("under-reports by")
    assert [r.case for r in report.under_reports] == ["dpsgd-small"]
    assert not report.passed
    row = report.under_reports[0]
    assert row.observed < row.lower and row.deviation < 0
    assert verdicts["dpsgd-small"] == f"under-reports by {100 * -row.deviation:.3g}%"


def test_audit_report_table_and_records():
    report = testing.audit(gdp_accountant, QUICK[:2])
    lines = str(report).splitlines()
    assert lines[0].split()[:3] == ["case", "count", "delta"] and set(lines[1]) <= {"-", " "}
    assert lines[2].startswith("gaussian ") and "inside" in lines[2]
    # the columns line up: every verdict starts under the header's "verdict"
    start = lines[0].index("verdict")
    assert [line[start:] for line in lines[2:]] == [r.verdict for r in report.rows]
    assert lines[2][start - 1] == " " and lines[2][start - 2] == " "
    records = report.to_records()
    assert [r["case"] for r in records] == ["gaussian", "laplace-composed"]
    assert set(records[0]) == {"case", "mechanism", "count", "delta", "lower", "upper",
                               "observed", "verdict", "deviation"}


def test_audit_flags_invalid_answers_and_reports_errors():
    case = QUICK[:1]
    assert testing.audit(lambda c: float("nan"), case).rows[0].verdict.startswith("invalid")
    assert testing.audit(lambda c: -1.0, case).rows[0].verdict.startswith("invalid")
    assert testing.audit(lambda c: "3", case).rows[0].verdict == "invalid (returned str)"
    assert not testing.audit(lambda c: -1.0, case).passed

    def broken(c):
        raise ZeroDivisionError("oops")

    with pytest.raises(ZeroDivisionError) as info:
        testing.audit(broken, case)
    if hasattr(info.value, "__notes__"):
        assert "gaussian" in info.value.__notes__[0]


def test_audit_standard_suite_is_documented_and_validated():
    names = [c.name for c in testing.STANDARD_CASES]
    assert len(names) == len(set(names)) >= 10
    seen = []
    report = testing.audit(lambda c: seen.append(c) or (_ for _ in ()).throw(
        NotImplementedError()), "standard")
    assert [c.name for c in seen] == names and all(r.verdict == "skipped" for r in report.rows)
    with pytest.raises(ValueError, match="cases"):
        testing.audit(rdp_accountant, "nonstandard")
    with pytest.raises(TypeError, match="AuditCase"):
        testing.audit(rdp_accountant, [("gaussian", plda.Gaussian(1.0), 1, 1e-5)])
    with pytest.raises(ValueError, match="delta"):
        AuditCase("x", plda.Gaussian(1.0), 1, 0.0)
    with pytest.raises(ValueError, match="count"):
        AuditCase("x", plda.Gaussian(1.0), 0, 1e-5)


# ------------------------------------------------ one argument order (issue 25, item 6)
def test_every_reference_takes_the_query_value_first():
    import inspect

    first = {"epsilon", "delta", "alpha", "order"}
    for name in testing.__all__:
        function = getattr(testing, name)
        if not inspect.isfunction(function) or name.startswith(("assert", "audit")):
            continue
        parameters = list(inspect.signature(function).parameters.values())
        assert parameters[0].name in first, name
        if "composition" in name:  # what 0.1.0 took first is keyword-only now
            later = [p for p in parameters[1:] if p.default is inspect.Parameter.empty]
            assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in later), name


@pytest.mark.parametrize("call", [
    lambda: approximate_dp_composition_delta(0.1, 1e-5, 3, 1.0),
    lambda: approximate_dp_composition_epsilon(0.1, 1e-5, 3, 1e-3),
    lambda: discrete_laplace_composition_delta(0.5, 3, 1.0),
    lambda: discrete_gaussian_composition_epsilon(1.0, 3, 1e-3),
])
def test_a_call_in_the_old_order_fails_loudly(call):
    with pytest.raises(TypeError, match="positional"):
        call()
