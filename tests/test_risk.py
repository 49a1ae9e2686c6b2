"""Membership-inference risk bounds against closed forms (mpmath, high precision)."""

import mpmath
import numpy as np
import pytest

import plda

mpmath.mp.dps = 40


def exact_gaussian_tpr(mu, alpha):
    """``1 - G_mu(alpha) = Phi(Phi^-1(alpha) + mu)`` (Dong, Roth & Su 2019)."""
    z = -mpmath.sqrt(2) * mpmath.erfinv(1 - 2 * mpmath.mpf(alpha))
    return float(mpmath.ncdf(z + mu))


def exact_gaussian_advantage(mu):
    """``TV(N(0, 1), N(mu, 1)) = 2 Phi(mu / 2) - 1``."""
    return float(2 * mpmath.ncdf(mpmath.mpf(mu) / 2) - 1)


@pytest.mark.parametrize("sigma, count", [(1.0, 1), (2.0, 16), (5.0, 100)])
@pytest.mark.parametrize("alpha", [1e-6, 1e-3, 0.1])
def test_gaussian_true_positive_rate_brackets_the_closed_form(sigma, count, alpha):
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma=sigma), count)
    bounds = pld.true_positive_rate_bounds(alpha)
    exact = exact_gaussian_tpr(mpmath.sqrt(count) / sigma, alpha)
    assert bounds.lower <= exact <= bounds.upper
    assert bounds.upper <= exact * (1 + 2e-2)


@pytest.mark.parametrize("sigma, count", [(1.0, 1), (2.0, 16), (0.5, 3)])
def test_gaussian_advantage_brackets_the_closed_form(sigma, count):
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma=sigma), count)
    bounds = pld.advantage_bounds()
    exact = exact_gaussian_advantage(mpmath.sqrt(count) / sigma)
    assert bounds.lower <= exact <= bounds.upper <= exact * (1 + 1e-3)


@pytest.mark.parametrize("q", [0.01, 0.3])
def test_subsampled_advantage_is_q_times_the_gaussian_one(q):
    # TV((1 - q) P + q Q, P) = q TV(P, Q), in both directions (TV is symmetric)
    step = plda.PoissonSampled(plda.Gaussian(sigma=1.5), sample_rate=q)
    bounds = plda.PrivacyLossDistribution.from_mechanism(step).advantage_bounds()
    exact = q * exact_gaussian_advantage(1 / mpmath.mpf(1.5))
    assert bounds.lower <= exact <= bounds.upper <= exact * (1 + 1e-3)


def test_vectorized_and_the_accountant_agrees():
    acct = plda.PLDAccountant()
    acct.step(1.0, 0.01, count=200)
    alphas = np.array([1e-4, 1e-3, 1e-2])
    tpr = acct.true_positive_rate_bounds(alphas)
    assert np.all(alphas <= tpr.lower) and np.all(tpr.lower <= tpr.upper)
    assert np.all(np.diff(tpr.upper) > 0)
    direct = acct.pld.true_positive_rate_bounds(1e-3)
    assert direct.upper == tpr.upper[1]
    adv = acct.advantage_bounds()
    assert 0 < adv.lower <= adv.upper < 1
    assert adv.upper == acct.pld.advantage_bounds().upper


def test_bad_false_positive_rate():
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma=1.0))
    with pytest.raises(ValueError, match="false_positive_rate"):
        pld.true_positive_rate_bounds(1.5)


def test_the_accountant_answers_every_query_under_the_pld_name():
    """One door per query: the accountant's tradeoff, Gaussian-DP, Rényi and zCDP answers are
    those of the PLD of its history (issue 25)."""
    acct = plda.PLDAccountant(accuracy=1e-2)
    acct.step(1.0, 0.05, count=30)
    alpha, orders = np.array([1e-3, 0.1]), np.array([2.0, 8.0])
    for name, args in [
        ("tradeoff", (alpha,)),
        ("tradeoff_bounds", (alpha,)),
        ("true_positive_rate_bounds", (alpha,)),
        ("symmetric_profile", ()),
        ("gdp_mu", ()),
        ("gdp_summary", ()),
        ("renyi", (orders,)),
        ("renyi_bounds", (orders,)),
        ("renyi_epsilon", (1e-5,)),
        ("renyi_delta", (1.0,)),
        ("zcdp", ()),
        ("zcdp_bounds", ()),
    ]:
        mine, its = getattr(acct, name)(*args), getattr(acct.pld, name)(*args)
        if name == "symmetric_profile":
            mine, its = (mine.epsilon, mine.delta), (its.epsilon, its.delta)
        elif name == "gdp_summary":
            mine, its = (mine.mu, mine.best_fit), (its.mu, its.best_fit)
        np.testing.assert_array_equal(np.asarray(mine, dtype=float), np.asarray(its, dtype=float))
    # before the first step nothing is released: the tradeoff curve is 1 - alpha
    assert plda.PLDAccountant().tradeoff(0.5) == pytest.approx(0.5, abs=1e-9)
