"""A composition's bounds capped by its conversion in other currencies
(:mod:`plda.conversions.capped`): where the grid failed.

A Poisson-sampled Gaussian with per-step losses of about 1e-11 (sigma 100 or 1e4, rate 1e-9)
sits on a grid whose rounding is comparable with its losses: its pessimistic law holds 0.2% too
much mass, and 1e5 of them composed overflow the FFT (error terms of 1e86, then inf). delta(0)
and the advantage were NaN, epsilon(1e-5) jumped from 2.4e-8 to 5.01 between 175851 and 175852
steps (a calibration of the steps stopped there). An answer looser than the composition's zCDP
conversion, or a delta of 1, is now read against the Rényi conversion of each step's certified
curve.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import plda


def _pld(mechanism, count):
    return plda.PrivacyLossDistribution.from_mechanism(mechanism, count)


def _accountant(mechanism, count):
    accountant = plda.PLDAccountant()
    accountant.compose(mechanism, count)
    return accountant


ENTRIES = {"pld": _pld, "accountant": _accountant}


@pytest.mark.parametrize("entry", ENTRIES.values(), ids=ENTRIES.keys())
@pytest.mark.parametrize(("sigma", "rate", "count"),
                         [(100.0, 1e-9, 300_000), (1e4, 1e-9, 175_852), (1e4, 1e-6, 10**6)])
def test_a_failed_grid_is_answered_by_the_renyi_conversion(entry, sigma, rate, count):
    step = plda.PoissonSampled(plda.Gaussian(sigma), rate)
    composition = entry(step, count)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.AccuracyWarning)
        answers = {"delta(0)": composition.delta_bounds(0.0),
                   "advantage": composition.advantage_bounds(),
                   "epsilon(1e-5)": composition.epsilon_bounds(1e-5)}
        renyi = {"epsilon(1e-5)": composition.renyi_epsilon(1e-5)}
    for name, bounds in answers.items():
        assert not (math.isnan(bounds.lower) or math.isnan(bounds.upper)), name
        assert 0.0 <= bounds.lower <= bounds.upper < 1e-3, name
    # epsilon: about the RDP accounting of the same steps (certified too; the cap converts at a
    # fixed grid of orders, renyi_epsilon refines its best one), and below the zCDP reading
    eps = answers["epsilon(1e-5)"].upper
    assert eps <= 1.1 * renyi["epsilon(1e-5)"], (eps, renyi["epsilon(1e-5)"])
    rho = count / sigma**2 / 2
    assert eps <= rho + 2 * math.sqrt(rho * math.log(1e5))


def test_a_grid_that_works_is_not_replaced():
    # DP-SGD at ordinary settings: the PLD is far tighter than either conversion, and stays
    step = plda.PoissonSampled(plda.Gaussian(1.0), 0.01)
    pld = _pld(step, 1000)
    bounds = pld.epsilon_bounds(np.array([1e-5, 1e-8]))
    assert np.all(bounds.upper < pld.renyi_epsilon(np.array([1e-5, 1e-8])))
    assert np.all((bounds.upper - bounds.lower) / bounds.upper <= 1e-3)


def test_a_bracket_within_the_accuracy_is_not_read_as_failed(monkeypatch):
    # the failure reading runs only where the bracket missed its accuracy: a bracket that holds
    # the truth within the accuracy cannot be undercut by more than that
    from plda.conversions import capped

    steps = [(plda.Gaussian(1.0), 1)]
    loose = np.array([50.0, 50.0])  # far above the zCDP conversion (about 5.3 at 1e-5)
    kept = capped.currency_capped(loose, np.array([1e-5, 1e-5]), components=steps,
                                  relation="add_remove", query="epsilon",
                                  missed=np.array([False, True]))
    assert kept[0] == 50.0 and kept[1] < 6.0
    # and the PLD's ordinary query does not consult the conversions at all
    called = []
    monkeypatch.setattr(capped, "_beyond_zcdp", lambda *a: called.append(a) or None)
    pld = _pld(plda.PoissonSampled(plda.Gaussian(1.0), 0.01), 100)
    pld.epsilon_bounds(1e-5)
    assert not called


def test_a_step_stated_in_renyi_currency_is_capped_within_the_accuracy():
    # a composition of zCDP steps reads its summed rho even where the grid's bracket is tight
    pld = _pld(plda.ZCDP(0.01), 50)
    bounds = pld.epsilon_bounds(1e-5)
    rho = 0.5
    assert bounds.upper <= (rho + 2 * math.sqrt(rho * math.log(1e5))) * (1 + 1e-9)
