"""delta at epsilon = inf, epsilon at delta = 0 and 1, and non-numbers (issue 24, item 6).

``delta(inf)`` is the mass at infinite privacy loss, ``P(L = inf)`` (the hockey-stick divergence
``sup_S P(S) - e^eps Q(S)`` keeps only the sets ``Q`` cannot reach); it was NaN (``inf - inf`` in
the closed form of the last grid segment) in the API and the CLI. ``epsilon(delta)`` is ``inf``
below that mass and 0 at ``delta = 1``; NaN and negative inputs are a ValueError naming the
argument.
"""

from __future__ import annotations

import json
import math
import warnings

import mpmath
import numpy as np
import pytest

import plda
from plda.cli import main


def _infinity_mass(delta: float, count: int) -> float:
    """``1 - (1 - delta)^count`` in 50-digit arithmetic."""
    with mpmath.workdps(50):
        return float(1 - (1 - mpmath.mpf(delta)) ** count)


def _pld(mechanism, count, relation="add_remove"):
    return plda.PrivacyLossDistribution.from_mechanism(mechanism, count, relation=relation)


def _accountant(mechanism, count, relation="add_remove"):
    accountant = plda.PLDAccountant(relation=relation)
    accountant.compose(mechanism, count)
    return accountant


MAKERS = {"pld": _pld, "accountant": _accountant}


@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
@pytest.mark.parametrize(("delta", "count"), [(1e-3, 3), (1e-10, 5), (0.3, 2)])
def test_delta_at_infinite_epsilon_is_the_mass_at_infinity_bracketed(make, relation, delta, count):
    exact = _infinity_mass(delta, count)
    composition = make(plda.ApproximateDP(epsilon=1.0, delta=delta), count, relation)
    bounds = composition.delta_bounds(math.inf)
    assert bounds.lower <= exact <= bounds.upper
    assert bounds.upper == pytest.approx(exact, rel=1e-9)
    assert composition.delta(math.inf) == bounds.upper
    # vectorized, mixed with finite epsilons: only the infinite one changes
    mixed = composition.delta_bounds([0.0, math.inf, 1.0])
    assert not np.isnan(mixed.upper).any() and not np.isnan(mixed.lower).any()
    assert mixed.lower[1] <= exact <= mixed.upper[1]
    assert np.all(mixed.lower <= mixed.upper) and np.all(np.diff(mixed.upper[[0, 2, 1]]) <= 0)


@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
@pytest.mark.parametrize(
    "mechanism",
    [
        plda.Gaussian(1.0),
        plda.Laplace(scale=2.0),
        plda.PoissonSampled(plda.Gaussian(1.0), sample_rate=0.01),
        plda.PoissonSampled(plda.ApproximateDP(epsilon=1.0, delta=1e-4), sample_rate=0.1),
    ],
    ids=["gaussian", "laplace", "poisson-gaussian", "poisson-approximate"],
)
def test_delta_at_infinite_epsilon_is_finite_and_ordered_for_every_mechanism(make, mechanism):
    composition = make(mechanism, 4)
    bounds = composition.delta_bounds(math.inf)
    assert 0.0 <= bounds.lower <= bounds.upper <= 1.0
    if isinstance(getattr(mechanism, "mechanism", mechanism), plda.ApproximateDP):
        # a record is sampled with probability q, then its step has mass delta at infinity
        exact = _infinity_mass(0.1 * 1e-4, 4)
        assert bounds.lower <= exact <= bounds.upper
    else:
        assert bounds.upper < 1e-300  # no mass at infinite loss (only rounding terms)


def test_epsilon_at_delta_zero_one_and_below_the_infinity_mass():
    mass = _infinity_mass(1e-3, 3)
    pld = _pld(plda.ApproximateDP(epsilon=1.0, delta=1e-3), 3)
    deltas = [0.0, mass / 2, mass * (1 - 1e-6), 1e-2, 1.0]
    bounds = pld.epsilon_bounds(deltas)
    assert np.all(bounds.upper[:3] == math.inf)
    assert np.all(bounds.lower[:3] == math.inf)  # certified: no finite epsilon reaches delta
    assert 0 < bounds.lower[3] <= bounds.upper[3] <= 3.0 + 1e-6
    assert bounds.lower[4] == bounds.upper[4] == 0.0
    # a Gaussian has no mass at infinity but delta(eps) > 0 for every eps
    gaussian = _accountant(plda.Gaussian(1.0), 2).epsilon_bounds([0.0, 1.0])
    assert gaussian.upper[0] == math.inf and gaussian.upper[1] == 0.0


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """The exact epsilon of mu-GDP at ``delta`` (down to subnormal deltas), at 60 digits."""
    with mpmath.workdps(60):
        mu, delta = mpmath.mpf(mu), mpmath.mpf(delta)

        def excess(eps):
            return (mpmath.ncdf(-eps / mu + mu / 2)
                    - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2) - delta)

        low, high = mpmath.mpf(0), mpmath.mpf(1000)
        for _ in range(200):
            middle = (low + high) / 2
            low, high = (middle, high) if excess(middle) > 0 else (low, middle)
        return float(high)


@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
@pytest.mark.parametrize(
    ("mechanism", "count", "mu"),
    [(plda.Gaussian(1.0), 1, 1.0), (plda.Gaussian(3.0), 10, math.sqrt(10) / 3),
     (plda.PoissonSampled(plda.Gaussian(1.0), 0.5), 3, None)],
    ids=["gaussian", "gaussian-x10", "sampled-x3"],
)
def test_epsilon_stays_finite_at_subnormal_deltas(make, relation, mechanism, count, mu):
    # below about 1e-310 a discretization's far tail moves its subnormal masses to +inf, and
    # the grid answered +inf (the README promised a finite bound): each step's certified
    # Renyi curve, converted, bounds it (Gaussian(1) at 1e-310: exactly 38.07)
    deltas = [1e-310, 1e-320, 5e-324]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.AccuracyWarning)
        bounds = make(mechanism, count, relation).epsilon_bounds(deltas)
    assert np.all(np.isfinite(bounds.upper)) and np.all(bounds.lower <= bounds.upper)
    assert np.all(np.diff(bounds.upper) >= 0)  # smaller deltas, larger epsilons
    if mu is not None:
        # under replace-one a Gaussian's pair is two sensitivities apart
        mu = 2 * mu if relation == "replace_one" else mu
        for delta, lower, upper in zip(deltas, bounds.lower, bounds.upper, strict=True):
            exact = _gaussian_epsilon(mu, delta)
            assert lower <= exact <= upper <= exact * 1.05


@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
@pytest.mark.parametrize(
    ("mechanism", "count", "mu"),
    [(plda.Gaussian(1.0), 3, math.sqrt(3)),
     (plda.PoissonSampled(plda.Gaussian(1.0), 0.5), 3, None)],
    ids=["gaussian-x3", "sampled-x3"],
)
def test_lower_bounds_below_the_tilt_floor_and_the_interval_warned(make, relation, mechanism,
                                                                   count, mu):
    # nothing below TILT_FLOOR (1e-305) is tilted, and the untilted lower bound there was a
    # third of the truth (Gaussian mu = sqrt 3 at 1e-310: 21.37 against 66.59); epsilon(delta)
    # is non-increasing, so the lower bound just above the floor holds below it. The warning
    # quoted the interval before the Renyi cap (+inf where the answer is finite).
    deltas = [1e-310, 1e-320]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", plda.AccuracyWarning)
        bounds = make(mechanism, count, relation).epsilon_bounds(deltas)
    above = make(mechanism, count, relation).epsilon_bounds(
        float(np.nextafter(1e-305, 1.0))).lower
    assert np.all(bounds.lower >= above) and np.all(bounds.lower <= bounds.upper)
    if mu is not None:
        mu = 2 * mu if relation == "replace_one" else mu
        for delta, lower in zip(deltas, bounds.lower, strict=True):
            assert 0.97 * _gaussian_epsilon(mu, delta) <= lower <= _gaussian_epsilon(mu, delta)
    quoted = [str(w.message) for w in caught if issubclass(w.category, plda.AccuracyWarning)]
    assert quoted and all("inf]" not in message for message in quoted)
    assert any(f"{bounds.upper.max():.6g}]" in message for message in quoted)


@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
@pytest.mark.parametrize("bad", [-math.inf, math.nan, -1e-3])
def test_nan_and_negative_epsilons_are_refused(make, bad):
    composition = make(plda.Gaussian(1.0), 2)
    for query in (composition.delta, composition.delta_bounds):
        with pytest.raises(ValueError, match="epsilon must be in"):
            query(bad)
        with pytest.raises(ValueError, match="epsilon must be in"):
            query([1.0, bad])


@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
@pytest.mark.parametrize("bad", [math.nan, -math.inf, math.inf, -1e-3, 1.5])
def test_deltas_outside_the_unit_interval_are_refused(make, bad):
    composition = make(plda.Gaussian(1.0), 2)
    for query in (composition.epsilon, composition.epsilon_bounds):
        with pytest.raises(ValueError, match="delta must be in"):
            query(bad)


@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
@pytest.mark.parametrize("bad", ["1e-5", True, None, [1e-5, None], np.array([True])])
def test_queries_refuse_what_is_not_a_number(make, bad):
    # numpy reads "1e-5" as 1e-5, True as 1.0 (epsilon 0 at delta 1) and None as NaN (which
    # was refused as "delta must be in [0, 1], got nan"): a TypeError naming the argument
    composition = make(plda.Gaussian(1.0), 2)
    for query, name in ((composition.epsilon, "delta"), (composition.epsilon_bounds, "delta"),
                        (composition.delta, "epsilon"), (composition.delta_bounds, "epsilon")):
        with pytest.raises(TypeError, match=f"{name} must be a number or an array of numbers"):
            query(bad)
    # numbers of every kind still are
    assert composition.epsilon(mpmath.mpf("1e-5")) == composition.epsilon(1e-5)
    assert composition.epsilon(np.float64(1e-5)) == composition.epsilon(1e-5)
    assert composition.epsilon(1) == 0.0


@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
def test_nothing_asked_is_nothing_answered(make):
    # an empty array of targets gives empty answers, as tradeoff([]) always did (epsilon([])
    # raised numpy's "zero-size array to reduction operation maximum", renyi_epsilon([])
    # "need at least one array to concatenate")
    composition = make(plda.Gaussian(2.0), 4)
    for empty in (np.array([]), [], np.zeros((0, 3))):
        shape = np.shape(empty)
        for query in (composition.epsilon, composition.delta, composition.renyi_epsilon,
                      composition.tradeoff):
            assert np.shape(query(empty)) == shape
        for query in (composition.epsilon_bounds, composition.delta_bounds):
            bounds = query(empty)
            assert np.shape(bounds.lower) == np.shape(bounds.upper) == shape
    # an empty set of Rényi orders is refused by name, asked or not
    for deltas in (1e-5, []):
        with pytest.raises(ValueError, match="orders must hold at least one"):
            composition.renyi_epsilon(deltas, orders=[])


def test_tradeoff_and_true_positive_rate_at_alpha_zero_read_the_infinity_mass():
    mass = _infinity_mass(1e-3, 3)
    pld = _pld(plda.ApproximateDP(epsilon=1.0, delta=1e-3), 3)
    beta = pld.tradeoff_bounds(0.0)
    assert beta.lower <= 1 - mass <= beta.upper
    tpr = pld.true_positive_rate_bounds(0.0)
    assert tpr.lower <= mass <= tpr.upper


def test_the_cli_reports_delta_at_infinite_epsilon(capsys):
    mass = _infinity_mass(1e-3, 3)
    argv = ["delta", "--mechanism", "approximate_dp:epsilon=1,delta=1e-3", "--count", "3",
            "--epsilon", "inf"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "nan" not in out.lower()
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["delta_lower"] <= mass <= data["delta_upper"]
    assert data["delta_upper"] == pytest.approx(mass, rel=1e-9)


def test_the_dp_accounting_adapter_reports_delta_at_infinite_epsilon():
    dp_accounting = pytest.importorskip("dp_accounting")
    from plda.adapters import PLDPrivacyAccountant

    accountant = PLDPrivacyAccountant()
    accountant.compose(
        dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(1.0), 3)
    )
    assert 0.0 <= accountant.get_delta(math.inf) < 1e-300
    bounds = accountant.delta_bounds(math.inf)
    assert 0.0 <= bounds.lower <= bounds.upper < 1e-300
    with pytest.raises(ValueError, match="epsilon must be in"):
        accountant.get_delta(math.nan)


@pytest.mark.parametrize("sigma", [0.05, 0.1, 0.2, 0.5])
def test_an_unbounded_discrete_loss_has_infinite_epsilon_at_delta_zero(sigma):
    # a discrete Gaussian's loss is unbounded, so delta(eps) > 0 at every eps: at sigma <= 0.2
    # the atoms beyond ~38 sigma and their tail bound rounded to 0, and epsilon(0) came out
    # 600.2 (sigma 0.05), an upper bound below the truth; through the accountant too
    pld = _pld(plda.DiscreteGaussian(sigma), 1)
    assert pld.epsilon_bounds(0.0).upper == math.inf
    assert pld.delta_bounds(1e4).upper > 0
    accountant = plda.PLDAccountant()
    accountant.compose(plda.DiscreteGaussian(sigma), 1)
    assert accountant.epsilon(0.0) == math.inf
    assert math.isfinite(pld.epsilon_bounds(1e-300).upper)
