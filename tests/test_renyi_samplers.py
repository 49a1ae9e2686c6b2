"""Rényi and zCDP bounds of every sampler, under both relations, through the PLD and the
accountant, against exact mpmath references.

A sampler whose per-step law is a Poisson-sampled Gaussian's (fixed-size batches, a truncated
Poisson sample that cannot truncate), a revealed mixture (truncated Poisson), a symmetrized
substitution pair (replace-one) or a random allocation answered an upper bound of ``+inf``
where its Rényi curve and its zCDP parameter are finite.
"""

from __future__ import annotations

import functools
import math

import mpmath
import numpy as np
import pytest

import plda

ORDERS = np.array([1.5, 2.0, 4.0, 10.0])
GAUSS = plda.Gaussian(1.0)

pytestmark = [pytest.mark.filterwarnings("ignore::plda.NotTightWarning"),
              pytest.mark.filterwarnings("ignore::plda.SamplerAssumptionWarning"),
              pytest.mark.filterwarnings("ignore::plda.AccuracyWarning")]


def _pld(mechanism, count, relation):
    return plda.PrivacyLossDistribution.from_mechanism(mechanism, count, relation=relation)


def _accountant(mechanism, count, relation):
    accountant = plda.PLDAccountant(relation=relation)
    accountant.compose(mechanism, count)
    return accountant


ENTRIES = {"pld": _pld, "accountant": _accountant}


@functools.lru_cache
def sampled_gaussian_renyi(alpha: float, mu: float, q: float) -> float:
    """``D_alpha`` of ``(q N(mu, 1) + (1-q) N(0, 1), N(0, 1))`` (the removal direction, the larger
    one), by mpmath quadrature over the base noise."""
    with mpmath.workdps(30):
        mu, q, a = mpmath.mpf(mu), mpmath.mpf(q), mpmath.mpf(alpha)
        value = mpmath.quad(
            lambda x: mpmath.npdf(x) * (1 - q + q * mpmath.exp(mu * x - mu * mu / 2)) ** a,
            [-mpmath.inf, 0, 5, 15, mpmath.inf])
        return float(mpmath.log(value) / (a - 1))


@functools.lru_cache
def allocation_renyi(alpha: int, mu: float) -> float:
    """``D_alpha`` at an integer order of one record allocated to one of two Gaussian steps,
    ``(1/2 N(mu e_1) + 1/2 N(mu e_2), N(0))`` in the plane: ``E[R^j] = e^{j(j-1) mu^2 / 2}`` per
    coordinate, expanded binomially."""
    with mpmath.workdps(30):
        mu = mpmath.mpf(mu)
        moment = lambda j: mpmath.exp(j * (j - 1) * mu * mu / 2)  # noqa: E731
        total = mpmath.fsum(mpmath.binomial(alpha, j) * moment(j) * moment(alpha - j)
                            for j in range(alpha + 1)) / 2**alpha
        return float(mpmath.log(total) / (alpha - 1))


# (mechanism, relation, exact D_alpha the curve must lie above at ORDERS (or None), rho)
CASES = {
    # fixed-size batches: a removal is a substitution, sensitivity 2 at rate b/n
    "fixed-size": (plda.SampledWithoutReplacement(GAUSS, 2, 4), "add_remove",
                   lambda a: sampled_gaussian_renyi(a, 2.0, 0.5), 2.0),
    # its symmetrized substitution pair dominates the substitution pair
    "fixed-size-replace": (plda.SampledWithoutReplacement(GAUSS, 2, 4), "replace_one",
                           lambda a: sampled_gaussian_renyi(a, 2.0, 0.5), 2.0),
    # a truncated Poisson sample that cannot truncate is the Poisson sample
    "truncated-never": (plda.TruncatedPoisson(GAUSS, 0.5, max_batch_size=5, dataset_size=4),
                        "add_remove", lambda a: sampled_gaussian_renyi(a, 1.0, 0.5), 0.5),
    "truncated": (plda.TruncatedPoisson(GAUSS, 0.5, max_batch_size=2, dataset_size=6),
                  "add_remove", None, 2.0),
    "truncated-replace": (plda.TruncatedPoisson(GAUSS, 0.5, max_batch_size=2, dataset_size=6),
                          "replace_one", None, 2.0),
    "poisson-replace": (plda.PoissonSampled(GAUSS, 0.5), "replace_one", None, 2.0),
    "allocation": (plda.RandomAllocation(GAUSS, 2), "add_remove",
                   lambda a: allocation_renyi(int(a), 1.0) if a == int(a) else None, 0.5),
    "allocation-k2": (plda.RandomAllocation(GAUSS, 4, num_selected=2), "add_remove", None, 1.0),
}


@pytest.mark.parametrize("entry", ENTRIES.values(), ids=ENTRIES.keys())
@pytest.mark.parametrize("count", [1, 2, 3, 10])
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_samplers_have_finite_certified_renyi_and_zcdp_bounds(case, count, entry):
    mechanism, relation, exact, rho = case
    composition = entry(mechanism, count, relation)
    bounds = composition.renyi_bounds(ORDERS)
    assert np.all(np.isfinite(bounds.upper)) and np.all(bounds.lower <= bounds.upper)
    # no step is above rho-zCDP: the curve at most count * rho * alpha
    assert np.all(bounds.upper <= count * rho * ORDERS * (1 + 1e-12))
    if exact is not None:
        for alpha, upper in zip(ORDERS, bounds.upper, strict=True):
            value = exact(alpha)
            if value is not None:
                assert count * value <= upper * (1 + 1e-9), (alpha, count * value, upper)
    zcdp = composition.zcdp_bounds()
    assert math.isfinite(zcdp.upper) and zcdp.lower <= zcdp.upper <= count * rho * (1 + 1e-12)
    assert zcdp.upper >= float(np.max(bounds.lower / ORDERS)) * (1 - 1e-12)


def test_a_sampler_whose_laws_are_poisson_sampling_has_the_poisson_bounds():
    # same laws, same Renyi bounds (cells), in either direction
    fixed = plda.SampledWithoutReplacement(GAUSS, 2, 40)
    ours = _pld(fixed, 5, "add_remove").renyi_bounds(ORDERS)
    poisson = _pld(fixed.equivalent_poisson(), 5, "add_remove").renyi_bounds(ORDERS)
    np.testing.assert_array_equal(ours.upper, poisson.upper)
    np.testing.assert_array_equal(ours.lower, poisson.lower)


def test_a_truncated_sample_lies_above_its_realized_pair():
    # the realized pair (Poisson at the effective rate) is a lower bound of the truth, which the
    # revealed mixture's upper bound must not undercut
    truncated = plda.TruncatedPoisson(GAUSS, 0.5, max_batch_size=2, dataset_size=6)
    rate = truncated.effective_sample_rate()
    bounds = _pld(truncated, 1, "add_remove").renyi_bounds(ORDERS)
    for alpha, upper in zip(ORDERS, bounds.upper, strict=True):
        assert sampled_gaussian_renyi(alpha, 1.0, rate) <= upper


@pytest.mark.parametrize("mu", [1e-150, 1e-15, 1e-7])
def test_a_sampled_gaussian_of_tiny_shift_has_its_currency_cap(mu):
    """The cells' tail terms cancel near mu = 1e-15 ('math domain error' from the accountant
    and from 1000 composed steps, inside the documented range); below 1e-6 the unsampled
    Gaussian bounds the sampled step's cumulant (the divergence is convex in the mixture)."""
    step = plda.PoissonSampled(plda.GaussianDP(mu), 0.001)
    accountant = plda.PLDAccountant()
    accountant.compose(step)
    bounds = accountant.epsilon_bounds(1e-300)
    assert 0 <= bounds.lower <= bounds.upper < 0.1
    renyi = plda.PrivacyLossDistribution.from_mechanism(step, 1000).renyi_bounds(2.0)
    assert 0 <= renyi.lower <= renyi.upper <= 1000 * mu * mu * (1 + 1e-9)
