"""``RepeatAndSelect`` (issue 29, item 2): tuning by random stopping, certified from the base's
certified Rényi curve (Papernot & Steinke 2022)."""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest

import plda
from plda.selection.repeat import ORDERS, truncated_negative_binomial_gamma

PLD = plda.PrivacyLossDistribution
DELTA = 1e-6
DPSGD = PLD.from_mechanism(plda.PoissonSampled(plda.Gaussian(1.0), 0.01), 1000)
LAWS = [("geometric", 1.0), ("truncated_negative_binomial", 0.5), ("logarithmic", 0.0),
        ("poisson", 1.0)]


def _tnb_mean(gamma, eta):
    gamma, eta = mpmath.mpf(gamma), mpmath.mpf(eta)
    if eta == 0:
        return (1 / gamma - 1) / mpmath.log(1 / gamma)
    return eta * (1 - gamma) / (gamma * (1 - gamma**eta))


@pytest.mark.parametrize(("mean", "eta"), [(3.0, 1.0), (10.0, 0.5), (10.0, 0.0), (50.0, -0.5)])
def test_gamma_gives_the_mean(mean, eta):
    gamma = truncated_negative_binomial_gamma(mean, eta)
    with mpmath.workdps(40):
        assert float(_tnb_mean(gamma, eta)) == pytest.approx(mean, rel=1e-12)


@pytest.mark.parametrize("sigma", [2.0, 5.0])
def test_the_curve_is_the_theorem_on_a_gaussian_base(sigma):
    """A Gaussian base has the exact curve ``lambda / (2 sigma^2)``: the selection's curve is
    Papernot & Steinke's Thm. 2 with it (the best auxiliary order over the grid), made
    non-increasing from the right, and never below it by more than the base's certified
    rounding."""
    rs = plda.RepeatAndSelect(plda.Gaussian(sigma), 10.0, "geometric")
    assert isinstance(rs.renyi_guarantee, plda.RenyiDP)
    orders = np.array(ORDERS)
    with mpmath.workdps(40):
        gamma = mpmath.mpf(truncated_negative_binomial_gamma(10.0, 1.0))
        base = [mpmath.mpf(a) / (2 * sigma**2) for a in ORDERS]
        aux = [mpmath.log(1 / gamma)] + [(1 - 1 / mpmath.mpf(a)) * e + mpmath.log(1 / gamma) / a
                                         for a, e in zip(ORDERS, base, strict=True)]
        best = 2 * min(aux)
        want = [e + best + mpmath.log(_tnb_mean(gamma, 1)) / (a - 1)
                for a, e in zip(ORDERS, base, strict=True)]
    want = np.minimum.accumulate(np.array([float(w) for w in want])[::-1])[::-1]
    got = np.array(rs.renyi_guarantee.epsilons)
    assert np.all(got >= want * (1 - 1e-9))
    assert np.all(got <= want * (1 + 1e-6) + 1e-12)
    assert len(got) == len(orders)


@pytest.mark.parametrize(("distribution", "shape"), LAWS)
def test_upper_bound_is_at_least_the_base_lower_bound_and_brackets(distribution, shape):
    rs = plda.RepeatAndSelect(DPSGD, 10.0, distribution, shape)
    got = PLD.from_mechanism(rs).epsilon_bounds(DELTA)
    assert got.lower <= got.upper
    assert got.upper >= DPSGD.epsilon_bounds(DELTA).lower


@pytest.mark.parametrize(("distribution", "shape"), LAWS[:3])
def test_every_run_count_at_least_one_keeps_the_base_lower_bound(distribution, shape):
    """With ``K >= 1`` a score that prefers the first run releases it: three selections are
    at least three base runs."""
    rs = plda.RepeatAndSelect(plda.PoissonSampled(plda.Gaussian(1.0), 0.05), 4.0, distribution,
                              shape)
    got = PLD.from_mechanism(rs, 3).delta_bounds(np.array([0.5, 1.0]))
    base = PLD.from_mechanism(plda.PoissonSampled(plda.Gaussian(1.0), 0.05), 3).delta_bounds(
        np.array([0.5, 1.0]))
    np.testing.assert_array_equal(got.lower, base.lower)
    assert np.all(got.upper >= base.upper)


def test_geometric_stopping_of_pure_dp_is_within_three_epsilon():
    """Liu & Talwar 2019: geometric stopping of an eps0-DP base is 3 eps0-DP."""
    base = plda.Laplace(scale=5.0)
    eps0 = PLD.from_mechanism(base).epsilon_bounds(0.0).upper  # certified: 0.2 and a little
    rs = plda.RepeatAndSelect(base, 20.0, "geometric")
    for delta in (1e-3, 1e-9, 0.0):
        assert PLD.from_mechanism(rs).epsilon(delta) <= 3 * eps0 * (1 + 1e-3)


def test_composes_with_other_mechanisms():
    rs = plda.RepeatAndSelect(DPSGD, 10.0, "poisson")
    pld = PLD([(rs, 1), (plda.ExponentialMechanism(0.5), 2)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        got = pld.epsilon_bounds(DELTA)
    assert 0 <= got.lower <= got.upper < math.inf


@pytest.mark.parametrize("shape", [1.0, 0.5, 0.0, math.inf])
def test_against_dp_accountings_rdp_accountant(shape):
    """dp_accounting's RDP accountant on the same base (Papernot & Steinke's theorems): plda
    is at least 15% tighter for the truncated negative binomial laws (the profile bound of
    Koskela, Redberg & Wang 2024 from the base's PLD; 20-28% on this run) and 10% under
    Poisson stopping (Papernot & Steinke's Poisson theorem with the PLD's delta, not an RDP
    conversion)."""
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    event = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)),
                                    1000)
    accountant = rdp.RdpAccountant()
    accountant.compose(dp_event.RepeatAndSelectDpEvent(event, 10.0, shape))
    theirs = accountant.get_epsilon(DELTA)
    distribution = {1.0: "geometric", 0.0: "logarithmic", math.inf: "poisson"}.get(
        shape, "truncated_negative_binomial")
    ours = PLD.from_mechanism(plda.RepeatAndSelect(DPSGD, 10.0, distribution, shape)).epsilon(
        DELTA)
    assert ours < theirs * (0.9 if distribution == "poisson" else 0.85)


def test_replace_one():
    rs = plda.RepeatAndSelect(plda.Gaussian(2.0), 5.0, "geometric")
    under = rs.under_replace_one()
    assert under.relation == "replace_one"
    assert PLD.from_mechanism(rs, relation="replace_one").epsilon(DELTA) > PLD.from_mechanism(
        rs).epsilon(DELTA)
    with pytest.raises(ValueError, match="replace_one"):
        plda.RepeatAndSelect(DPSGD, 5.0).under_replace_one()


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"mean": 0.5}, ValueError, "mean"),
    ({"mean": math.nan}, ValueError, "mean"),
    ({"mean": 5.0, "distribution": "binomial"}, ValueError, "distribution"),
    ({"mean": 5.0, "shape": -1.0}, ValueError, "shape"),
    ({"mean": 5.0, "shape": True}, TypeError, "shape"),
    ({"mean": "5"}, TypeError, "mean"),
    # a bare "f(a) and f(b) must have different signs" from brentq before (gamma ~ 1e-1000,
    # or below 1e-15, would give these means)
    ({"mean": 10.0, "shape": -0.999}, ValueError, r"mean must be 1 or in \(1, 1\.034"),
    ({"mean": 1e15}, ValueError, r"mean must be 1 or in \[1\.0.*, 99999999999999\d\.\d+\]"),
    ({"mean": 1e15, "distribution": "logarithmic"}, ValueError, "distribution='logarithmic'"),
])
def test_bad_input(kwargs, error, words):
    with pytest.raises(error, match=words):
        plda.RepeatAndSelect(plda.Gaussian(1.0), **kwargs)


def test_a_vanishing_shape_is_the_logarithmic_law():
    """shape = 1e-310: eta log(gamma) underflowed and the mean divided by 0 (ZeroDivisionError);
    its law is the logarithmic one to the last digit."""
    gamma = truncated_negative_binomial_gamma(10.0, 0.0)
    assert truncated_negative_binomial_gamma(10.0, 1e-310) == gamma
    with pytest.raises(ValueError, match="shape -0.999"):
        truncated_negative_binomial_gamma(10.0, -0.999)
    base = plda.Gaussian(5.0)
    tiny = plda.RepeatAndSelect(base, 10.0, shape=1e-310).guarantee
    assert tiny == plda.RepeatAndSelect(base, 10.0, "logarithmic").guarantee


def test_a_base_that_is_not_a_run_is_a_type_error():
    with pytest.raises(TypeError, match="base"):
        plda.RepeatAndSelect(1.0, 5.0)


@pytest.mark.parametrize(("shape", "distribution"), [(1.0, "geometric"), (math.inf, "poisson"),
                                                     (0.5, "truncated_negative_binomial")])
def test_dp_accounting_event_maps_to_the_same_selection(shape, distribution):
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event

    from plda.adapters import PLDPrivacyAccountant, from_dp_event

    event = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)),
                                    1000)
    selection = dp_event.RepeatAndSelectDpEvent(event, 10.0, shape)
    want = PLD.from_mechanism(plda.RepeatAndSelect(DPSGD, 10.0, distribution, shape))
    got = from_dp_event(selection).epsilon_bounds(DELTA)
    assert tuple(got) == tuple(want.epsilon_bounds(DELTA))
    assert from_dp_event(selection).components[0][0].guarantee.deltas == (
        want.components[0][0].guarantee.deltas)  # the same certified profile
    accountant = PLDPrivacyAccountant().compose(selection)
    # the accountant composes that profile's pair on its own grid: the same bound to within
    # its accuracy (4e-6 relative here; the profile has some 6000 points)
    assert accountant.epsilon_bounds(DELTA).upper == pytest.approx(got.upper, rel=1e-4)


def test_a_pipeline_with_tuning_is_never_looser_than_its_renyi_accounting():
    """Tuning, a selection step and a zCDP part (issue 29's pipeline): the composed bound is at
    most the pipeline's Rényi curve converted once (the tuning step's stated curve is summed
    with the others'), and the bracket holds."""
    tuning = plda.RepeatAndSelect(DPSGD, 5.0, "geometric")
    pipeline = PLD([(tuning, 1), (plda.ExponentialMechanism(0.5), 1), (plda.ZCDP(0.05), 1)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        got = pipeline.epsilon_bounds(DELTA)
        renyi = pipeline.renyi_epsilon(DELTA)
    assert math.isfinite(renyi)
    assert got.lower <= got.upper <= renyi * (1 + 1e-6)


def test_a_base_with_a_delta_is_bounded_through_its_profile():
    """An (epsilon, delta > 0) base has no finite Rényi curve: RepeatAndSelect raised
    RenyiDP's "epsilons must hold finite numbers, got inf". Its bound comes from the base's
    certified profile alone now (past the base's mass at infinite loss the grid stops)."""
    step = plda.RepeatAndSelect(plda.ApproximateDP(1.0, 1e-5), 10.0)
    assert step.renyi_guarantee is None and step.stated_currency is None
    bounds = plda.PrivacyLossDistribution.from_mechanism(step).delta_bounds(5.0)
    # at least the base's delta (the first run may be released), about E[K] times it at most
    assert 1e-5 <= bounds.lower <= bounds.upper <= 1.1e-4


def test_a_base_at_the_largest_epsilon_is_refused_naming_the_base():
    # the selection's curve adds to the base's: past 1e150 its internal RenyiDP refused it as
    # "epsilons must be in [0, 1e+150], got epsilons[0] = ...", arguments the caller never wrote
    with pytest.raises(ValueError, match=r"^base: the selection's .* epsilon 1e150"):
        plda.RepeatAndSelect(plda.ApproximateDP(1e150), 2.0, "poisson")
    selected = plda.RepeatAndSelect(plda.ApproximateDP(1e149), 2.0, "poisson")
    bounds = plda.PrivacyLossDistribution.from_mechanism(selected).epsilon_bounds(1e-5)
    assert 0.0 <= bounds.lower <= bounds.upper < math.inf
