"""Steps whose orientation can flip within a run: the symmetrized subsampled pair, the realized
lower bounds and the inverted-bracket check (issue 24, item 1).

References are computed here with mpmath: one Poisson-subsampled Gaussian step has a monotone
likelihood ratio, so its hockey-stick divergence at ``eps`` is ``P(X > x*) - e^eps Q(X > x*)``
at the crossing ``x*`` in closed form; two steps of a symmetric pair reduce to one integral.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import dataclass

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import plda
from plda._internal.errors import InvertedBracketError
from plda.engine.recipe import realized_recipes
from plda.mechanisms.base import BracketedMechanism
from plda.mechanisms.symmetrized import SymmetrizedPoissonSampled


@pytest.fixture(autouse=True)
def _precision():
    """This module's mpmath precision, set per test: a module-level assignment would leak into
    (and be overwritten by) the modules collected after it."""
    with mp.workdps(40):
        yield

PLD = plda.PrivacyLossDistribution


@contextmanager
def quiet():
    """Silence NotTightWarning (these tests read the lower bound it announces)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        yield


# ----------------------------------------------------------------------------- references
def remove_delta(eps, mu, q):
    """``H_{e^eps}(q N(mu) + (1-q) N(0) || N(0))`` exactly (monotone likelihood ratio)."""
    eps, mu, q = mp.mpf(eps), mp.mpf(mu), mp.mpf(q)
    x = (mp.log((mp.exp(eps) - 1 + q) / q) + mu**2 / 2) / mu
    tail_p = q * mp.ncdf(mu - x) + (1 - q) * mp.ncdf(-x)
    return tail_p - mp.exp(eps) * mp.ncdf(-x)


def add_delta(eps, mu, q):
    """``H_{e^eps}(N(0) || q N(mu) + (1-q) N(0))`` exactly."""
    eps, mu, q = mp.mpf(eps), mp.mpf(mu), mp.mpf(q)
    ratio = mp.exp(-eps)  # the likelihood ratio P/Q must fall below e^-eps: x < y*
    if ratio <= 1 - q:
        return mp.mpf(0)
    y = (mp.log((ratio - 1 + q) / q) + mu**2 / 2) / mu
    below_q = mp.ncdf(y)
    below_p = q * mp.ncdf(y - mu) + (1 - q) * mp.ncdf(y)
    return below_q - mp.exp(eps) * below_p


def symmetric_mixture_two_step_tv(mu, q):
    """``delta(0)`` of two steps of ``((1-q) N(0) + q N(mu), (1-q) N(0) + q N(-mu))``: the loss
    is odd and increasing in the output, so ``L(x) + L(y) > 0`` iff ``y > -x``."""
    mu, q = mp.mpf(mu), mp.mpf(q)

    def p(x):
        return (1 - q) * mp.npdf(x) + q * mp.npdf(x - mu)

    def qq(x):
        return (1 - q) * mp.npdf(x) + q * mp.npdf(x + mu)

    def tail_p(t):
        return (1 - q) * mp.ncdf(-t) + q * mp.ncdf(mu - t)

    def tail_q(t):
        return (1 - q) * mp.ncdf(-t) + q * mp.ncdf(-mu - t)

    return mp.quad(lambda x: p(x) * tail_p(-x) - qq(x) * tail_q(-x), [-mp.inf, 0, mp.inf])


# ------------------------------------------------------------------------------ the theorem
@given(
    q=st.floats(0.01, 0.99),
    mu=st.floats(0.1, 6.0),
    eps=st.floats(0.0, 8.0),
)
def test_removal_dominates_addition_for_positive_epsilon(q, mu, eps):
    """The fact the symmetrized law rests on: for a symmetric base, the removal direction of a
    Poisson-subsampled pair has the larger profile at every ``eps >= 0``."""
    assert remove_delta(eps, mu, q) >= add_delta(eps, mu, q) - mp.mpf(10) ** -30


@pytest.mark.parametrize("base", [plda.Gaussian(1.0, 2.0), plda.Laplace(1.0, 1.5)])
@pytest.mark.parametrize("q", [0.05, 0.5, 0.9])
def test_symmetrized_law_profile_is_the_removal_one_and_symmetric(base, q):
    law = SymmetrizedPoissonSampled(base, q).privacy_loss("remove")
    remove = plda.PoissonSampled(base, q).privacy_loss("remove")
    eps = np.array([0.0, 0.1, 0.5, 1.0, 2.0, 4.0])
    np.testing.assert_allclose(law.delta(eps), remove.delta(eps), rtol=1e-12, atol=1e-15)
    # a symmetric pair: delta(-eps) = 1 - e^-eps + e^-eps delta(eps)
    np.testing.assert_allclose(
        law.delta(-eps), -np.expm1(-eps) + np.exp(-eps) * law.delta(eps), rtol=1e-12
    )
    # a probability law under both hypotheses
    for x in (-2.0, -0.3, 0.0, 0.4, 3.0):
        for hypothesis in ("P", "Q"):
            total = law.cdf(x, hypothesis) + law.sf(x, hypothesis)
            total += law.neg_infinity_mass if hypothesis == "P" else law.infinity_mass
            assert total == pytest.approx(1.0, abs=1e-12)
    add = SymmetrizedPoissonSampled(base, q).privacy_loss("add")
    np.testing.assert_array_equal(add.delta(eps), law.delta(eps))


def test_symmetrized_law_cdf_keeps_relative_accuracy_far_apart():
    """Base pairs far apart (mu = 30): the negative side holds ~1e-50 of mass, and the cdf just
    above 0 must not be swamped by the rounding of numbers near q or 1 - q."""
    law = SymmetrizedPoissonSampled(plda.Gaussian(1.0, 30.0), 0.5).privacy_loss("remove")
    mu, q = mp.mpf(30), mp.mpf("0.5")
    x = 0.25  # P(L <= x) = P(L < 0) + P(0 < L <= x)
    y = float(mp.log1p(mp.expm1(x) / q))  # the base loss of x
    z = (mp.mpf(y) + mu**2 / 2) / mu
    want = q * mp.ncdf(z - mu) + (1 - q) * (2 * mp.ncdf(-mu / 2) - mp.ncdf(-z))
    got = law.continuous_cdf(x, "P")
    assert abs(got - want) <= 1e-13 * want


def test_symmetrized_requires_a_symmetric_base():
    with pytest.raises(ValueError, match="symmetric"):
        SymmetrizedPoissonSampled(plda.PoissonSampled(plda.Gaussian(1.0), 0.5), 0.5)


# ---------------------------------------------------------------------- the cases
def test_fixed_size_batches_under_replace_one_two_steps_brackets_the_realized_pair():
    """Issue 24: plda reported delta(0) <= 0.770878 for two steps (the worse direction
    composed); other records at 0, x = +1 against x' = -1 realize the symmetric mixture pair at
    every step, whose delta(0) is 0.776277."""
    wor = plda.SampledWithoutReplacement(plda.Gaussian(1.0), batch_size=9, dataset_size=10)
    realized = float(symmetric_mixture_two_step_tv(1.0, 0.9))
    assert realized == pytest.approx(0.776277, abs=1e-6)
    with quiet():
        bounds = PLD.from_mechanism(wor, 2, relation="replace_one").delta_bounds(0.0)
        accountant = plda.PLDAccountant(relation="replace_one")
        accountant.compose(wor, 2)
        through_accountant = accountant.delta_bounds(0.0)
    assert bounds.lower <= realized * (1 + 1e-9) and realized <= bounds.upper
    # the lower bound is the realized symmetric input's (the larger realized composition here)
    assert bounds.lower == pytest.approx(realized, rel=1e-5)
    assert through_accountant.lower <= realized * (1 + 1e-9)
    assert realized <= through_accountant.upper * (1 + 1e-9)


def test_fixed_size_batches_one_step_under_replace_one_stay_tight():
    """One step: the symmetrized pair's profile is the removal direction's, realized by the
    datasets (others -C, x = +C vs x' = -C), so the bracket stays tight."""
    wor = plda.SampledWithoutReplacement(plda.Gaussian(0.8), 30, 1000)
    with quiet():
        bounds = PLD.from_mechanism(wor, relation="replace_one").delta_bounds([0.0, 1.0])
    want = [float(remove_delta(e, 2 / 0.8, 0.03)) for e in (0.0, 1.0)]
    assert np.all(bounds.lower <= np.array(want) * (1 + 1e-9))
    assert np.all(np.array(want) <= bounds.upper * (1 + 1e-9))
    np.testing.assert_allclose(bounds.lower, bounds.upper, rtol=1e-3)


def test_truncated_poisson_under_replace_one_is_not_clamped():
    """Issue 24: two steps reported [0.750673, 0.750673] (the realized lower bound, 0.752185, was
    above the upper and clamped)."""
    trunc = plda.TruncatedPoisson(plda.Gaussian(1.0), sample_rate=0.9, max_batch_size=9,
                                  dataset_size=10)
    with quiet():
        bounds = PLD.from_mechanism(trunc, 2, relation="replace_one").delta_bounds(0.0)
    assert bounds.lower == pytest.approx(0.752185, abs=2e-6)
    assert bounds.upper > bounds.lower + 1e-3


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
def test_accountant_and_pld_agree_on_fixed_size_batches(relation):
    wor = plda.SampledWithoutReplacement(plda.Gaussian(1.0), 64, 6400)
    with quiet():
        pld = PLD.from_mechanism(wor, 300, relation=relation).epsilon_bounds(1e-5)
        accountant = plda.PLDAccountant(relation=relation)
        accountant.step(1.0, sampler="without-replacement", batch_size=64, dataset_size=6400,
                        count=300)
        acct = accountant.epsilon_bounds(1e-5)
    assert max(pld.lower, acct.lower) <= min(pld.upper, acct.upper)


# ----------------------------------------------------------------- realized recipes
def test_realized_recipes_combine_alternatives_per_factor():
    wor = plda.SampledWithoutReplacement(plda.Gaussian(1.0), 9, 10).under_replace_one()
    gauss = plda.Gaussian(2.0)
    recipes = realized_recipes(((wor, 3), (gauss, 1)))
    first, second = wor.lower_bound_mechanisms()
    assert recipes == (
        ((first, 3), (gauss, 1)),
        ((second, 3), (gauss, 1)),
        ((first, 2), (first.reversed(), 1), (gauss, 1)),
    )
    assert realized_recipes(((gauss, 2),)) == ()


# ------------------------------------------------------------- inverted brackets raise
@dataclass(frozen=True)
class _Claimed(BracketedMechanism):
    """A stand-in whose "realized" pair is *more* private than its upper pair is loose: a
    lower bound above the upper one, as a defect would produce."""

    upper_mu: float
    realized_mu: float

    def _remove_law(self):
        return plda.Gaussian(1.0, self.upper_mu).privacy_loss("remove")

    def lower_bound_mechanism(self):
        return plda.Gaussian(1.0, self.realized_mu)


def test_an_inverted_bracket_raises_everywhere():
    bad = _Claimed(upper_mu=1.0, realized_mu=2.0)
    with pytest.raises(InvertedBracketError, match="epsilon_bounds"):
        PLD.from_mechanism(bad).epsilon_bounds(1e-5)
    with pytest.raises(InvertedBracketError, match="delta_bounds"):
        PLD.from_mechanism(bad).delta_bounds(1.0)
    accountant = plda.PLDAccountant()
    accountant.compose(bad)
    with pytest.raises(InvertedBracketError):
        accountant.epsilon_bounds(1e-5)
    with pytest.raises(InvertedBracketError, match="renyi"):
        PLD.from_mechanism(bad).renyi_bounds(2.0)


def test_conversions_of_a_non_tight_composition_take_the_realized_side():
    """A non-tight mechanism whose truth is its realized pair (mu = 1) while its upper pair is
    loose (mu = 2): the tradeoff curve's upper bound and the true-positive rate's lower bound
    must be certified for the truth, which the upper pair's optimistic side is not."""
    loose = _Claimed(upper_mu=2.0, realized_mu=1.0)
    alpha = np.array([0.01, 0.1, 0.3])
    got = PLD.from_mechanism(loose).tradeoff_bounds(alpha)
    exact = plda.testing.gaussian_tradeoff(alpha, 1.0)
    assert np.all(got.lower <= exact) and np.all(exact <= got.upper)
    tpr = PLD.from_mechanism(loose).true_positive_rate_bounds(0.05)
    exact_tpr = 1.0 - float(plda.testing.gaussian_tradeoff(0.05, 1.0))
    assert tpr.lower <= exact_tpr <= tpr.upper


def test_alternating_orientations_are_a_realized_composition():
    """A query that negates the records realizes the substitution pair reversed, so a run may
    alternate; for a Laplace base at eps = 1 two alternating steps beat either orientation."""
    wor = plda.SampledWithoutReplacement(plda.Laplace(1.0), 3, 4).under_replace_one()
    substitution = wor.equivalent_poisson()
    assert substitution.reversed().privacy_loss("remove").delta(1.0) == pytest.approx(
        substitution.privacy_loss("add").delta(1.0))
    assert substitution.reversed().reversed() == substitution
    assert wor.lower_bound_recipes(3)[-1] == ((substitution, 2), (substitution.reversed(), 1))
    assert len(wor.lower_bound_recipes(1)) == 1
    fixed = PLD.from_mechanism(substitution, 2).delta_bounds(1.0).lower
    mixed = PLD(((substitution, 1), (substitution.reversed(), 1))).delta_bounds(1.0).lower
    with quiet():
        got = PLD.from_mechanism(wor, 2).delta_bounds(1.0)
    assert mixed > fixed
    assert got.lower == pytest.approx(mixed, rel=1e-9) and got.lower <= got.upper
