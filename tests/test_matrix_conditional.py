"""PoissonMatrixMechanism: conditional composition (MMCC) against exact two-step values."""

from __future__ import annotations

import itertools
import threading

import mpmath as mp
import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import logsumexp, ndtr

import plda
import plda.matrix as pm
from plda.matrix import PoissonMatrixMechanism
from plda.matrix.row_mixtures import realized_row_mixture

# the bound's own gap exceeds the default accuracy and is said (tested below, once)
pytestmark = pytest.mark.filterwarnings("ignore::plda.AccuracyWarning")


def exact_two_step_delta(strategy, sigma, q, epsilon, direction):
    """delta(eps) of a 2-step matrix mechanism, Poisson rate q, one record moving by 1.

    The pair is sum_x w(x) N(C x, sigma^2 I_2) against N(0, sigma^2 I_2), x in {0, 1}^2,
    w(x) = q^|x| (1 - q)^(2 - |x|). Given the first output u1 (in units of sigma) the
    likelihood ratio L is increasing in u2 (C >= 0), so the hockey-stick's region is a
    half-line past the root of L = e^eps (remove) or below the root of L = e^-eps (add), and
    its inner integral is a sum of normal tails; the outer one is mpmath's quadrature.
    """
    with mp.workdps(20):
        c = [[mp.mpf(float(v)) / sigma for v in row] for row in strategy]
        q = mp.mpf(q)
        patterns = [(a, b) for a in (0, 1) for b in (0, 1)]
        weight = {x: q ** sum(x) * (1 - q) ** (2 - sum(x)) for x in patterns}
        shift = {x: (c[0][0] * x[0], c[1][0] * x[0] + c[1][1] * x[1]) for x in patterns}
        e = mp.e ** mp.mpf(epsilon)

        def inner(u1):
            a = {x: weight[x] * mp.e ** (shift[x][0] * u1 - (shift[x][0] ** 2) / 2)
                 for x in patterns}

            target = float(epsilon) if direction == "remove" else -float(epsilon)
            floats = [(float(mp.log(a[x])), float(shift[x][1])) for x in patterns if a[x] > 0]

            def log_ratio(u2):  # in floats: only the root's position is needed from it
                return np.logaddexp.reduce([la + m * u2 - m * m / 2 for la, m in floats])

            flat = [la for la, m in floats if m == 0]
            if flat and np.logaddexp.reduce(flat) >= target:
                root = -mp.inf  # the ratio never goes below the target
            else:
                lo, hi = -1.0, 1.0
                while log_ratio(lo) > target:
                    lo *= 2
                while log_ratio(hi) < target:
                    hi *= 2
                # the integrand vanishes at the root, so a double-precision root is enough
                root = mp.mpf(brentq(lambda u2: log_ratio(u2) - target, lo, hi, xtol=1e-15))
            if direction == "remove":
                upper_tail = sum(a[x] * mp.ncdf(shift[x][1] - root) for x in patterns)
                return mp.npdf(u1) * (upper_tail - e * mp.ncdf(-root))
            lower_tail = sum(a[x] * mp.ncdf(root - shift[x][1]) for x in patterns)
            return mp.npdf(u1) * (mp.ncdf(root) - e * lower_tail)

        # phi(14) < 1e-42: the outer tails beyond are below every delta compared
        return float(mp.quad(inner, [-14, -4, 0, 4, 14 + 2 * max(map(abs, c[0]))]))


def exact_three_step_delta(strategy, sigma, q, epsilon, direction, nodes=24, pieces=8):
    """delta(eps) of a 3-step matrix mechanism, Poisson rate q, one record moving by 1.

    As the two-step reference, one dimension deeper: given the first two outputs the ratio is
    increasing in the third, so the inner integral is a sum of normal tails past its root
    (vectorized bisection); the outer one is a tensor Gauss-Legendre rule on
    [-10, 10 + 3 max shift]^2, which the Gaussian weight makes smooth. It agrees with scipy's
    adaptive dblquad (epsrel 1e-10) to 1e-14 on the cases below (0.0884279062317, 0.00501429499051,
    0.178366360645, 0.161900913804).
    """
    C = np.asarray(strategy, float) / sigma
    pats = np.array(list(itertools.product((0, 1), repeat=3)))
    logw = np.log(q) * pats.sum(1) + np.log1p(-q) * (3 - pats.sum(1))
    M = pats @ C.T
    x, w = np.polynomial.legendre.leggauss(nodes)
    top = 10 + 3 * float(np.max(M))
    edges = np.linspace(-10, top, pieces + 1)
    pairs = list(zip(edges[:-1], edges[1:], strict=True))
    u = np.concatenate([(b - a) / 2 * x + (a + b) / 2 for a, b in pairs])
    wu = np.concatenate([(b - a) / 2 * w for a, b in pairs])
    u1, u2 = (g.ravel() for g in np.meshgrid(u, u, indexing="ij"))
    weight = np.outer(wu, wu).ravel() * np.exp(-(u1**2 + u2**2) / 2) / (2 * np.pi)
    la = logw[None, :] + M[None, :, 0] * u1[:, None] - M[None, :, 0] ** 2 / 2 \
        + M[None, :, 1] * u2[:, None] - M[None, :, 1] ** 2 / 2
    m3 = M[:, 2]
    target = epsilon if direction == "remove" else -epsilon

    def f(r):
        return logsumexp(la + m3 * r[:, None] - m3**2 / 2, axis=1) - target

    flat = m3 == 0
    never = logsumexp(la[:, flat], axis=1) >= target if flat.any() else np.zeros(u1.size, bool)
    lo, hi = np.full(u1.size, -60.0), np.full(u1.size, 60.0)
    for _ in range(64):  # bisection, vectorized: f is increasing in the third output
        mid = (lo + hi) / 2
        up = f(mid) > 0
        hi, lo = np.where(up, mid, hi), np.where(up, lo, mid)
    root = np.where(never, -np.inf, (lo + hi) / 2)
    a = np.exp(la)
    if direction == "remove":
        val = (a * ndtr(m3 - root[:, None])).sum(1) - np.exp(epsilon) * ndtr(-root)
    else:
        val = ndtr(root) - np.exp(epsilon) * (a * ndtr(root[:, None] - m3)).sum(1)
    return float(np.sum(weight * val))


@pytest.mark.parametrize("sigma, q, epsilon", [(1.0, 0.2, 0.5), (2.0, 0.5, 0.2)])
def test_the_exact_three_step_delta_lies_in_the_bracket(sigma, q, epsilon):
    strategy = [[1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.25, 0.5, 1.0]]  # memory in every column
    bounds = PoissonMatrixMechanism(np.array(strategy), sigma, q).delta_bounds(epsilon)
    exact = [exact_three_step_delta(strategy, sigma, q, epsilon, d) for d in ("remove", "add")]
    assert max(exact) <= bounds.upper and bounds.lower <= max(exact) * (1 + 1e-9)


TWO_STEP = [
    # (C, sigma, q)
    ([[1.0, 0.0], [0.6, 0.8]], 1.0, 0.2),
    ([[1.0, 0.0], [1.0, 1.0]], 2.0, 0.5),
    ([[0.8, 0.0], [0.5, 1.0]], 0.7, 0.05),
    ([[1.0, 0.0], [1.0, 1.0]], 1.0, 0.1),  # where reading the rows apart under-reports
]


@pytest.mark.parametrize("strategy, sigma, q", TWO_STEP)
@pytest.mark.parametrize("epsilon", [0.0, 0.5, 2.0])
def test_the_exact_two_step_delta_lies_in_the_bracket(strategy, sigma, q, epsilon):
    run = PoissonMatrixMechanism(np.array(strategy), sigma, q)
    bounds = run.delta_bounds(epsilon)
    exact = {d: exact_two_step_delta(strategy, sigma, q, epsilon, d) for d in ("remove", "add")}
    assert max(exact.values()) <= bounds.upper  # each direction below the upper bound
    assert bounds.lower <= max(exact.values()) * (1 + 1e-9)  # the worse one above the lower


def test_the_exact_reference_is_the_dp_sgd_value_for_the_identity():
    # the reference itself: with C = I two steps are DP-SGD twice (mpmath against plda)
    step = plda.PoissonSampled(plda.Gaussian(1.3), 0.3)
    pld = plda.PrivacyLossDistribution.from_mechanism(step, 2, accuracy=1e-5)
    for epsilon in (0.2, 1.0):
        lower, upper = pld.delta_bounds(epsilon)
        worst = max(exact_two_step_delta([[1, 0], [0, 1]], 1.3, 0.3, epsilon, d)
                    for d in ("remove", "add"))
        assert lower <= worst * (1 + 1e-9) and worst <= upper * (1 + 1e-9)


def test_the_thinned_rows_lower_bound_meets_the_exact_value_of_a_diagonal_strategy():
    # a diagonal strategy is 1-banded: every row is kept and the thinned pair is the run itself
    strategy, sigma, q = [[1.0, 0.0], [0.0, 0.8]], 1.0, 0.3
    run = PoissonMatrixMechanism(np.array(strategy), sigma, q)
    for epsilon in (0.1, 0.5):
        exact = max(exact_two_step_delta(strategy, sigma, q, epsilon, d) for d in ("remove", "add"))
        lower, upper = run.delta_bounds(epsilon)
        assert exact * (1 - 2e-3) <= lower <= exact * (1 + 1e-9) and exact <= upper


def test_the_thinned_rows_are_every_band_th_row_from_the_last():
    c, q, sigma = (0.9, 0.4), 0.05, 2.0
    run = PoissonMatrixMechanism(pm.toeplitz_strategy(c, 5), sigma, q)
    thinned = run.lower_plds()[-1]  # rows 4, 2, 0: windows {3, 4}, {1, 2}, {0}
    pair = plda.GaussianMixture(sigma, (0.0, 0.4, 0.9, 1.3),
                                ((1 - q) ** 2, q * (1 - q), q * (1 - q), q * q))
    single = plda.GaussianMixture(sigma, (0.0, 0.9), (1 - q, q))
    by_hand = plda.PrivacyLossDistribution(((pair, 2), (single, 1)))
    np.testing.assert_allclose(tuple(thinned.epsilon_bounds(1e-6)),
                               tuple(by_hand.epsilon_bounds(1e-6)), rtol=1e-9)


def test_the_realized_row_mixture_rounds_toward_a_weaker_pair():
    shifts, weights = realized_row_mixture(np.array([0.3, 0.7]), 0.2)
    assert all(a <= b for a, b in zip(shifts, (0.0, 0.3, 0.7, 1.0), strict=True))
    assert abs(sum(weights) - 1) < 1e-15 and weights[-1] <= 0.04
    assert realized_row_mixture(np.array([0.3, -0.7]), 0.2) is None  # mixed signs
    assert realized_row_mixture(-np.array([0.3, 0.7]), 0.2) == (shifts, weights)  # mirrored
    assert realized_row_mixture(np.ones(13), 0.2) is None  # beyond exact enumeration


def test_the_posterior_bound_is_needed():
    # the test can fail: rows read as independent mixtures at the prior rate (no posterior
    # bound) under-report the exact two-step delta
    strategy, sigma, q = [[1.0, 0.0], [1.0, 1.0]], 1.0, 0.1
    naive = plda.PrivacyLossDistribution(
        ((plda.GaussianMixture(sigma, (0.0, 1.0), (1 - q, q)), 1),
         (plda.GaussianMixture(sigma, (0.0, 1.0, 2.0), ((1 - q) ** 2, 2 * q * (1 - q), q * q)),
          1)))
    exact = max(exact_two_step_delta(strategy, sigma, q, 1.0, d) for d in ("remove", "add"))
    assert naive.delta(1.0) < 0.6 * exact  # 0.00444 against 0.00844
    assert exact <= PoissonMatrixMechanism(np.array(strategy), sigma, q).delta(1.0)


def test_the_identity_is_dp_sgd_with_no_tail_charged():
    run = PoissonMatrixMechanism(pm.toeplitz_strategy([1.0], 50), 1.2, 0.05)
    assert run.charged_tail == 0.0
    np.testing.assert_array_equal(run.posterior_rates, np.full(50, 0.05))
    dp_sgd = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Gaussian(1.2), 0.05), 50)
    lower, upper = run.epsilon_bounds(1e-6)
    reference = dp_sgd.epsilon_bounds(1e-6)
    assert lower <= reference.upper and reference.lower <= upper
    assert (upper - lower) / upper < 2e-3


def test_toeplitz_coefficients_and_the_dense_matrix_agree():
    coefficients = np.array([0.9, 0.4, 0.2])
    toeplitz = PoissonMatrixMechanism(pm.toeplitz_strategy(coefficients, 40), 3.0, 0.02)
    dense = PoissonMatrixMechanism(pm.toeplitz_strategy(coefficients, 40).dense(), 3.0, 0.02)
    assert toeplitz.epsilon_bounds(1e-6) == dense.epsilon_bounds(1e-6)


def test_a_banded_run_sits_between_its_lower_bound_and_the_unamplified_gaussian():
    strategy = pm.toeplitz_strategy(np.array([1.0, 0.5, 0.25]) / np.sqrt(1.3125), 200)
    run = PoissonMatrixMechanism(strategy, 6.0, 0.01)
    lower, upper = run.epsilon_bounds(1e-6)
    unamplified = plda.PrivacyLossDistribution.from_mechanism(run.unamplified).epsilon(1e-6)
    assert 0 < lower < upper < unamplified / 10  # amplification is worth more than 10x here
    dp_sgd = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Gaussian(run.lower_noise_multiplier), 0.01), 200)
    assert lower == max(pld.epsilon_bounds(1e-6).lower for pld in run.lower_plds())
    assert lower >= dp_sgd.epsilon_bounds(1e-6).lower


def test_every_record_in_every_step_is_the_unamplified_gaussian():
    strategy = np.array([[1.0, 0, 0], [0.5, 1.0, 0], [0.2, 0.5, 1.0]])
    run = PoissonMatrixMechanism(strategy, 2.0, 1.0)  # q = 1: nothing to amplify
    unamplified = plda.PrivacyLossDistribution.from_mechanism(run.unamplified).epsilon(1e-6)
    assert run.epsilon(1e-6) == unamplified
    # signs do not matter to the bound (|C| enters it), nor to the realized lower bound
    assert (PoissonMatrixMechanism(-strategy, 2.0, 0.1).epsilon_bounds(1e-6)
            == PoissonMatrixMechanism(strategy, 2.0, 0.1).epsilon_bounds(1e-6))


def test_a_singular_strategy_keeps_its_upper_bound_and_a_zero_lower_bound():
    run = PoissonMatrixMechanism(np.array([[1.0, 0, 0], [0.5, 0.0, 0], [0.2, 0.5, 1.0]]), 2.0,
                                 0.1)
    assert run.lower_noise_multiplier == np.inf and run.lower_plds() == ()
    lower, upper = run.epsilon_bounds(1e-6)
    assert lower == 0.0 and 0 < upper < np.inf


def test_more_noise_never_costs_more():
    strategy = pm.toeplitz_strategy([0.8, 0.6], 60)
    uppers = [PoissonMatrixMechanism(strategy, s, 0.05).epsilon(1e-6) for s in (2.0, 3.0, 5.0)]
    assert uppers[0] > uppers[1] > uppers[2] > 0


def test_delta_at_or_below_the_tail_reads_the_unamplified_gaussian():
    run = PoissonMatrixMechanism(pm.toeplitz_strategy([1.0, 0.5], 30), 4.0, 0.01,
                                 tail_probability=1e-6)
    unamplified = plda.PrivacyLossDistribution.from_mechanism(run.unamplified)
    assert run.epsilon(1e-6) == unamplified.epsilon(1e-6)
    assert run.epsilon(1e-5) < unamplified.epsilon(1e-5)
    assert run.delta(50.0) >= 0 and run.delta_bounds(0.5).upper >= 1e-6


@pytest.mark.filterwarnings("error::plda.AccuracyWarning")
def test_a_gap_wider_than_the_accuracy_is_said_and_an_upper_bound_alone_is_quiet():
    run = PoissonMatrixMechanism(pm.toeplitz_strategy([1.0, 0.5], 30), 4.0, 0.01)
    with pytest.warns(plda.AccuracyWarning, match="conditional-composition"):
        run.epsilon_bounds(1e-6)
    with pytest.warns(plda.AccuracyWarning, match="conditional-composition"):
        run.delta_bounds(0.02)
    assert run.epsilon(1e-6) > 0 and run.delta(0.02) > 0  # no warning: nothing to judge


def test_shared_between_threads_every_answer_is_the_same():
    run = PoissonMatrixMechanism(pm.toeplitz_strategy([0.9, 0.5, 0.3], 80), 4.0, 0.02)
    answers, errors = [], []

    def query():
        try:
            answers.append((tuple(run.epsilon_bounds(1e-6)), tuple(run.delta_bounds(0.5))))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=query) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(answers)) == 1


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: PoissonMatrixMechanism(np.ones((2, 3)), 1.0, 0.1), ValueError, "square"),
        (lambda: PoissonMatrixMechanism(np.triu(np.ones((3, 3))), 1.0, 0.1), ValueError,
         "lower-triangular"),
        (lambda: PoissonMatrixMechanism(np.array([[1.0, 0], [np.nan, 1]]), 1.0, 0.1),
         ValueError, "strategy"),
        (lambda: PoissonMatrixMechanism(np.zeros((2, 2)), 1.0, 0.1), ValueError, "non-zero"),
        (lambda: PoissonMatrixMechanism(np.eye(2), 0.0, 0.1), ValueError, "noise_multiplier"),
        (lambda: PoissonMatrixMechanism(np.eye(2), "1", 0.1), TypeError, "noise_multiplier"),
        (lambda: PoissonMatrixMechanism(np.eye(2), 1.0, 0.0), ValueError, "sample_rate"),
        (lambda: PoissonMatrixMechanism(np.eye(2), 1.0, 0.1, tail_probability=1.0),
         ValueError, "tail_probability"),
        (lambda: PoissonMatrixMechanism(np.eye(2), 1.0, 0.1).epsilon(0.0), ValueError, "delta"),
        (lambda: PoissonMatrixMechanism(np.eye(2), 1.0, 0.1).delta(-1.0), ValueError,
         "epsilon"),
        (lambda: PoissonMatrixMechanism(np.eye(2), 1.0, 0.1).epsilon(1e-6,
                                                                    relation="replace_one"),
         ValueError, "add_remove"),
    ],
)
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
