"""The double mixture (issue 26, item 1): a replace-one pair whose two sides are Gaussian
mixtures. Exact one-step values are in tests/test_mechanism_contract.py (family
``double_mixture``); here its relation, its special cases and its entry points."""

from __future__ import annotations

import json

import mpmath
import numpy as np
import pytest
from mixture_reference import double_mixture_delta

import plda

PLD = plda.PrivacyLossDistribution
DELTA = 1e-5
ASYMMETRIC = (0.8, (0.5, 2.0), (0.3, 0.7), (0.0, 1.0), (0.9, 0.1))


def test_a_poisson_step_under_replace_one_is_the_symmetric_double_mixture():
    q = 0.05
    pair = plda.GaussianDoubleMixture(1.0, (0, 1), (1 - q, q), (0, 1), (1 - q, q))
    assert pair.symmetric
    ours = PLD.from_mechanism(pair, 100, relation="replace_one").epsilon_bounds(DELTA)
    poisson = PLD.from_mechanism(plda.PoissonSampled(plda.Gaussian(1.0), q), 100,
                                 relation="replace_one").epsilon_bounds(DELTA)
    assert max(ours.lower, poisson.lower) <= min(ours.upper, poisson.upper)


def test_both_directions_are_composed_for_an_asymmetric_pair():
    pair = plda.GaussianDoubleMixture(*ASYMMETRIC)
    assert not pair.symmetric
    step = pair.under_replace_one()
    with mpmath.workdps(30):
        for eps in (0.5, 2.0):
            for direction in ("remove", "add"):
                exact = double_mixture_delta(*ASYMMETRIC, eps, direction)
                law = step.privacy_loss(direction)
                assert float(law.delta(eps)) == pytest.approx(float(exact), rel=1e-9)
    two = PLD.from_mechanism(pair, 2, relation="replace_one").delta_bounds(1.0)
    assert two.lower <= two.upper


def test_it_is_refused_under_add_remove_and_nothing_is_recorded():
    pair = plda.GaussianDoubleMixture(*ASYMMETRIC)
    accountant = plda.PLDAccountant()
    with pytest.raises(ValueError, match="relation='replace_one'"):
        accountant.compose(pair, 3)
    assert len(accountant) == 0
    with pytest.raises(ValueError, match="relation='replace_one'"):
        PLD.from_mechanism(pair, 3).epsilon(DELTA)


def test_the_accountant_and_its_state_dict_carry_it_under_replace_one():
    accountant = plda.PLDAccountant(relation="replace_one")
    accountant.compose(plda.GaussianDoubleMixture(*ASYMMETRIC), 20)
    bounds = accountant.epsilon_bounds(DELTA)
    pld = PLD.from_mechanism(plda.GaussianDoubleMixture(*ASYMMETRIC), 20,
                             relation="replace_one").epsilon_bounds(DELTA)
    assert max(bounds.lower, pld.lower) <= min(bounds.upper, pld.upper)
    loaded = plda.PLDAccountant.from_state_dict(json.loads(json.dumps(accountant.state_dict())))
    assert loaded.history == accountant.history
    assert loaded.epsilon_bounds(DELTA) == bounds


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"sensitivities": (0.0, 0.0)}, ValueError, "sensitivities must have a positive shift"),
    ({"other_sensitivities": (0.0,), "other_probabilities": (1.0,)}, ValueError,
     "other_sensitivities must have a positive shift"),
    ({"other_probabilities": (0.5, 0.6)}, ValueError, "sum to 1"),
    ({"sensitivities": (0.0, -1.0)}, ValueError, "sensitivities must be >= 0"),
    ({"sigma": -1.0}, ValueError, "sigma"),
    ({"other_sensitivities": "01"}, TypeError, "sensitivities must be a sequence"),
    ({"probabilities": (0.5, 0.25, 0.25)}, ValueError, "one length"),
])
def test_bad_pairs_name_the_argument(kwargs, error, match):
    arguments = dict(zip(("sigma", "sensitivities", "probabilities", "other_sensitivities",
                          "other_probabilities"), ASYMMETRIC, strict=True)) | kwargs
    with pytest.raises(error, match=match):
        plda.GaussianDoubleMixture(**arguments)



@pytest.mark.parametrize("shift", [3.0, 1e3, 1e6])
def test_its_law_at_a_large_shift_agrees_with_mpmath(shift):
    """The law inverts its loss map by Newton from a table (from a doubled bracket a shift of
    1e4 took minutes a query). P(L <= ell(y)) = sum_i w_i Phi(y - mu_i) for the pair
    0.5 N(0, 1) + 0.5 N(shift, 1) against 0.5 N(0, 1) + 0.5 N(-shift, 1), ell in mpmath."""
    mpmath.mp.dps = 60
    s = mpmath.mpf(shift)
    law = plda.GaussianDoubleMixture(1.0, (0.0, shift), (0.5, 0.5), (0.0, shift), (0.5, 0.5))
    law = law.under_replace_one().privacy_loss("remove")
    # where one component dominates both sides (0 < y < shift / 2 at a large shift) the map is
    # flat to 60 digits and y is not fixed by the loss: the points lie beyond it
    for y in np.concatenate([np.linspace(shift / 2, shift + 5.0, 12),
                             -np.linspace(shift / 2, shift + 5.0, 11)]):
        y = mpmath.mpf(float(y))
        loss = (mpmath.log(mpmath.npdf(y) + mpmath.npdf(y - s))
                - mpmath.log(mpmath.npdf(y) + mpmath.npdf(y + s)))
        exact = (mpmath.ncdf(y) + mpmath.ncdf(y - s)) / 2
        density = (mpmath.npdf(y) + mpmath.npdf(y - s)) / 2  # d/dy, for the tolerance
        ours = float(law.cdf(float(loss), "P"))
        # the loss rounded to a double moves y by up to 2 ulps over the map's slope
        slope = mpmath.diff(lambda t: (mpmath.log(mpmath.npdf(t) + mpmath.npdf(t - s))
                                       - mpmath.log(mpmath.npdf(t) + mpmath.npdf(t + s))), y)
        tolerance = 1e-12 * float(exact) + float(density * 4e-16 * (1 + abs(loss)) / slope)
        assert slope > 1e-3
        assert abs(ours - float(exact)) <= tolerance, (float(y), ours, float(exact))


@pytest.fixture
def density_budget(monkeypatch):
    """Fail a test whose laws evaluate more than 4e6 densities (a few seconds' worth)."""
    from plda.mechanisms.law import PrivacyLossLaw

    counted = [0]
    original = PrivacyLossLaw.continuous_pdf

    def counting(self, x, hypothesis="P"):
        counted[0] += np.size(x)
        assert counted[0] <= 4_000_000, "more than 4e6 density evaluations"
        return original(self, x, hypothesis)

    monkeypatch.setattr(PrivacyLossLaw, "continuous_pdf", counting)


@pytest.mark.parametrize("shift", [1e5, 1e6])
def test_a_huge_shift_is_answered_without_integrating_cells_it_discards(density_budget, shift):
    """At shift / sigma 1e4 and beyond the grid cells (and the per-step grid of the Rényi cap
    a delta of 1 calls for) are wider than ~710 loss units, where every cell takes its cdf
    moments: their 1024-piece quadrature, 3e8 density evaluations, took minutes per query
    and was discarded. The answers bracket the exact ones: delta is 1/2 (the shifted
    component, to within e^{-shift^2/8}) up to epsilon about shift^2/2."""
    mpmath.mp.dps = 40
    pair = plda.GaussianDoubleMixture(1.0, (0.0, shift), (0.5, 0.5), (0.0, shift), (0.5, 0.5))
    pld = PLD.from_mechanism(pair, relation="replace_one")
    eps = np.array([0.0, 1.0, shift * shift / 8])
    lower, upper = pld.delta_bounds(eps)
    assert np.all(lower <= 0.5 + 1e-12) and np.all(upper >= 0.5 - 1e-12)
    lower, upper = pld.epsilon_bounds(DELTA)
    assert lower <= upper < (shift * shift / 2 + 5 * shift) * (1 + pld.accuracy)
    if shift < 1e6:  # (the reference's cdf is cut at 1e6 standard deviations)
        reference = (1.0, (0.0, shift), (0.5, 0.5), (0.0, shift), (0.5, 0.5))
        assert double_mixture_delta(*reference, lower) >= DELTA
        assert double_mixture_delta(*reference, upper) <= DELTA
