"""k-ary randomized response (:mod:`plda.mechanisms.randomized_response`), at every entry.

dp_accounting's ``RandomizedResponseDpEvent`` used to be read as ``ApproximateDP(L)``, the
pure-DP bound it satisfies: its bracket was tight for that pair, so the certified lower bound
was above the event's exact epsilon for ``k > 2`` (p = 0.5, k = 4, delta = 1e-5: lower
1.6094259 against exactly 1.6094219). It is the k-ary pair now, under replace-one only.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings

import mpmath
import numpy as np
import pytest

import plda
from plda.serialization import mechanism_from_dict, mechanism_to_dict


def _exact_delta(p, k, count, eps):
    """delta(eps) of ``count`` runs under replace-one, by exact enumeration at 50 digits."""
    with mpmath.workdps(50):
        p = mpmath.mpf(p)
        a, b = 1 - p + p / k, p / k
        c, x = 1 - a - b, mpmath.mpf(eps)
        total = mpmath.mpf(0)
        for i in range(count + 1):
            for j in range(count - i + 1):
                rest = count - i - j
                ways = mpmath.binomial(count, i) * mpmath.binomial(count - i, j)
                pm = ways * a**i * b**j * (c**rest if rest else 1)
                qm = ways * b**i * a**j * (c**rest if rest else 1)
                total += max(pm - mpmath.exp(x) * qm, 0)
        return total


def _exact_epsilon(p, k, count, delta):
    with mpmath.workdps(50):
        low, high = mpmath.mpf(0), count * mpmath.log(1 + (1 - mpmath.mpf(p)) * k / p) + 1
        for _ in range(120):
            middle = (low + high) / 2
            low, high = (low, middle) if _exact_delta(p, k, count, middle) <= delta else (
                middle, high)
        return float(high)


def _pld(step, count):
    return plda.PrivacyLossDistribution.from_mechanism(step, count, relation="replace_one")


def _accountant(step, count):
    accountant = plda.PLDAccountant(relation="replace_one")
    accountant.compose(step, count)
    return accountant


class RandomizedResponseDpEvent:
    """Duck-typed stand-in for dp_accounting's event (the adapter reads it by its name)."""

    def __init__(self, noise_parameter, num_buckets):
        self.noise_parameter, self.num_buckets = noise_parameter, num_buckets


def _adapter(step, count):
    event = RandomizedResponseDpEvent(step.noise_parameter, step.num_buckets)
    return plda.from_dp_event(event, relation="replace_one").self_compose(count)


ENTRIES = {"pld": _pld, "accountant": _accountant, "dp_accounting": _adapter}


@pytest.mark.parametrize("entry", ENTRIES.values(), ids=ENTRIES.keys())
@pytest.mark.parametrize("count", [1, 2, 3, 10])
@pytest.mark.parametrize(("p", "k"), [(0.5, 4), (0.1, 2), (0.9, 100)])
def test_epsilon_brackets_the_exact_value_at_every_entry(entry, count, p, k):
    step = plda.RandomizedResponse(p, k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.AccuracyWarning)  # (atoms: steep profiles)
        bounds = entry(step, count).epsilon_bounds(1e-5)
    exact = _exact_epsilon(p, k, count, 1e-5)
    assert bounds.lower <= exact * (1 + 1e-12) and exact <= bounds.upper * (1 + 1e-12)
    assert bounds.upper <= exact * (1 + 1e-2)


@pytest.mark.parametrize("count", [1, 3])
def test_delta_brackets_the_exact_value_and_beats_its_pure_dp_bound(count):
    step = plda.RandomizedResponse(0.5, 4)
    eps = np.array([0.0, 0.5, 1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.AccuracyWarning)
        bounds = _pld(step, count).delta_bounds(eps)
        pure = _pld(plda.ApproximateDP(step.epsilon), count).delta_bounds(eps)
    for e, lower, upper in zip(eps, bounds.lower, bounds.upper, strict=True):
        exact = float(_exact_delta(0.5, 4, count, e))
        assert lower <= exact * (1 + 1e-12) + 1e-300 and exact <= upper * (1 + 1e-12)
    # the old reading's lower bound lies above the truth wherever the two differ
    assert np.any(pure.lower > bounds.upper)


def test_two_values_are_the_pure_dp_pair_and_full_noise_reveals_nothing():
    step = plda.RandomizedResponse(0.3, 2)
    assert step.epsilon == pytest.approx(math.log(1.7 / 0.3 * 1), rel=1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.AccuracyWarning)
        ours = _pld(step, 5).epsilon_bounds(1e-3)
        pure = _pld(plda.ApproximateDP(step.epsilon), 5).epsilon_bounds(1e-3)
    assert ours.upper == pytest.approx(pure.upper, rel=1e-9)
    silent = plda.RandomizedResponse(1.0, 7)
    assert silent.epsilon == 0.0
    bounds = _pld(silent, 100).epsilon_bounds(0.0)
    assert bounds.lower == bounds.upper == 0.0


@pytest.mark.parametrize("entry", [_pld, _accountant], ids=["pld", "accountant"])
@pytest.mark.parametrize(("step", "count", "exact"),
                         [(plda.RandomizedResponse(0.5, 4), 100, 100 * math.log(5)),
                          (plda.ApproximateDP(1.0), 100, 100.0),
                          (plda.ApproximateDP(0.0), 100, 0.0)])
def test_epsilon_at_delta_zero_is_the_largest_composed_loss(entry, step, count, exact):
    # the grid's error terms leave every finite epsilon a positive delta, and epsilon(0) read
    # inf for 100 pure-DP steps; the steps' largest losses summed bound it (here exactly)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.AccuracyWarning)
        bounds = entry(step, count).epsilon_bounds(0.0)
    assert bounds.lower <= exact <= bounds.upper <= exact * (1 + 1e-14)


def test_the_largest_loss_stays_finite_at_tiny_noise():
    # (1 - p) k / p overflows below p = 1e-308 / k: the loss is taken as log a - log b
    step = plda.RandomizedResponse(1e-320, 10)
    with mpmath.workdps(40):
        exact = mpmath.log((1 - mpmath.mpf(1e-320) + mpmath.mpf(1e-320) / 10)
                           / (mpmath.mpf(1e-320) / 10))
    assert step.epsilon == pytest.approx(float(exact), rel=1e-14)


def test_add_remove_is_refused_everywhere():
    step = plda.RandomizedResponse(0.5, 4)
    with pytest.raises(ValueError, match="replace_one"):
        plda.PrivacyLossDistribution.from_mechanism(step, 2).epsilon(1e-5)
    with pytest.raises(ValueError, match="replace_one"):
        plda.PLDAccountant().compose(step, 2)
    with pytest.raises(ValueError, match="replace_one"):
        plda.from_dp_event(RandomizedResponseDpEvent(0.5, 4))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [({"noise_parameter": 0.0}, ValueError, "noise_parameter must be in \\(0, 1\\]"),
     ({"noise_parameter": 1.5}, ValueError, "noise_parameter"),
     ({"noise_parameter": math.nan}, ValueError, "noise_parameter"),
     ({"noise_parameter": "0.5"}, TypeError, "noise_parameter"),
     ({"noise_parameter": 0.5, "num_buckets": 4.7}, ValueError, "num_buckets must be an integer"),
     ({"noise_parameter": 0.5, "num_buckets": 1}, ValueError, "num_buckets"),
     ({"noise_parameter": 0.5, "num_buckets": True}, TypeError, "num_buckets"),
     ({"noise_parameter": 0.5, "num_buckets": "4"}, TypeError, "num_buckets")],
)
def test_bad_parameters_name_the_argument(kwargs, error, message):
    with pytest.raises(error, match=message):
        plda.RandomizedResponse(**kwargs)
    if error is ValueError:  # and through the adapter, as the ValueError it documents
        with pytest.raises(ValueError):
            plda.from_dp_event(RandomizedResponseDpEvent(
                kwargs["noise_parameter"], kwargs.get("num_buckets", 2)), relation="replace_one")


def test_it_is_saved_and_read_back():
    step = plda.RandomizedResponse(0.25, 5)
    assert mechanism_from_dict(json.loads(json.dumps(mechanism_to_dict(step)))) == step


def test_the_command_line_accounts_it_under_replace_one():
    run = subprocess.run(
        [sys.executable, "-m", "plda", "epsilon", "--delta", "1e-5", "--relation", "replace_one",
         "--mechanism", "randomized_response:noise_parameter=0.5,num_buckets=4", "--count", "3",
         "--json"], capture_output=True, text=True, check=True)
    record = json.loads(run.stdout)
    exact = _exact_epsilon(0.5, 4, 3, 1e-5)
    assert record["epsilon_lower"] <= exact * (1 + 1e-12) <= record["epsilon"] * (1 + 2e-12)


def test_the_dp_accounting_accountant_supports_it_under_replace_one_only():
    dpa = pytest.importorskip("dp_accounting")
    from plda.adapters import PLDPrivacyAccountant

    event = dpa.RandomizedResponseDpEvent(0.5, 4)
    # supports() composes zero runs: each part is still checked against the relation
    assert not PLDPrivacyAccountant(dpa.NeighboringRelation.ADD_OR_REMOVE_ONE).supports(event)
    accountant = PLDPrivacyAccountant(dpa.NeighboringRelation.REPLACE_ONE)
    assert accountant.supports(event)
    accountant.compose(event, 3)
    lower, upper = accountant.epsilon_bounds(1e-5)
    exact = _exact_epsilon(0.5, 4, 3, 1e-5)  # 4.8282727764634
    assert lower <= exact * (1 + 1e-12) and exact <= upper * (1 + 1e-12)
