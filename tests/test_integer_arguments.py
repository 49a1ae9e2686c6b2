"""Integer arguments: a wrong type is a TypeError, a wrong value a ValueError (issue 25, item 6).

The house rule: a non-number (a str, bytes, None, a bool, a list, as ``array_in`` reads them)
raises TypeError naming the argument; a number that is not an integer in range raises
ValueError naming the argument and its range. ``PoissonSampled(..., group_size="1")``, the
samplers' sizes, the epoch samplers' ``num_steps`` and the counts of the PLD and the accountant
raised ValueError for a string or None. Integral floats (3.0) are read as integers, as before.
"""

from __future__ import annotations

import pytest

import plda
from plda.epochs.shuffled import (
    ShuffledLowerBound,
    ShuffledOppositeLowerBound,
    ShuffledOppositeSumLowerBound,
)
from plda.testing import AuditCase

G = plda.Gaussian(1.0)

#: (argument's name, a call taking the argument's value)
CONSTRUCTORS = {
    "PoissonSampled.group_size": (
        "group_size", lambda v: plda.PoissonSampled(G, 0.01, group_size=v)),
    "SampledWithoutReplacement.batch_size": (
        "batch_size", lambda v: plda.SampledWithoutReplacement(G, v, 100)),
    "SampledWithoutReplacement.dataset_size": (
        "dataset_size", lambda v: plda.SampledWithoutReplacement(G, 1, v)),
    "SampledWithoutReplacement.group_size": (
        "group_size", lambda v: plda.SampledWithoutReplacement(G, 10, 100, group_size=v)),
    "TruncatedPoisson.max_batch_size": (
        "max_batch_size", lambda v: plda.TruncatedPoisson(G, 0.01, v, 1000)),
    "TruncatedPoisson.dataset_size": (
        "dataset_size", lambda v: plda.TruncatedPoisson(G, 0.01, 20, v)),
    "DiscreteLaplace.sensitivity": ("sensitivity", lambda v: plda.DiscreteLaplace(1.0, v)),
    "DiscreteGaussian.sensitivity": ("sensitivity", lambda v: plda.DiscreteGaussian(1.0, v)),
    "Shuffled.num_steps": ("num_steps", lambda v: plda.Shuffled(G, v)),
    "ShuffledLowerBound.num_steps": ("num_steps", lambda v: ShuffledLowerBound(G, v)),
    "ShuffledOppositeLowerBound.num_steps": (
        "num_steps", lambda v: ShuffledOppositeLowerBound(G, v)),
    "ShuffledOppositeSumLowerBound.num_steps": (
        "num_steps", lambda v: ShuffledOppositeSumLowerBound(plda.Gaussian(5.0), v)),
    "RandomAllocation.num_steps": ("num_steps", lambda v: plda.RandomAllocation(G, v)),
    "RandomAllocation.num_selected": (
        "num_selected", lambda v: plda.RandomAllocation(G, 10, v)),
    "sampled_mechanism.batch_size": ("batch_size", lambda v: plda.sampled_mechanism(
        G, "without-replacement", batch_size=v, dataset_size=100)),
    "sampled_mechanism.group_size": (
        "group_size", lambda v: plda.sampled_mechanism(G, "poisson", sample_rate=0.01,
                                                        group_size=v)),
    "PrivacyLossDistribution.from_mechanism.count": (
        "count", lambda v: plda.PrivacyLossDistribution.from_mechanism(G, v)),
    "PrivacyLossDistribution.self_compose.count": (
        "count", lambda v: plda.PrivacyLossDistribution.from_mechanism(G).self_compose(v)),
    "PLDAccountant.step.count": (
        "count", lambda v: plda.PLDAccountant().step(1.0, 0.01, count=v)),
    "PLDAccountant.compose.count": ("count", lambda v: plda.PLDAccountant().compose(G, v)),
    "AuditCase.count": ("count", lambda v: AuditCase("case", G, count=v, delta=1e-5)),
}

NOT_NUMBERS = ["1", b"1", True, [1]]


@pytest.mark.parametrize("value", NOT_NUMBERS, ids=repr)
@pytest.mark.parametrize("case", sorted(CONSTRUCTORS))
def test_a_non_number_is_a_type_error_naming_the_argument(case, value):
    name, make = CONSTRUCTORS[case]
    with pytest.raises(TypeError, match=f"^{name} must be an integer"):
        make(value)


@pytest.mark.parametrize(
    "case", sorted(c for c in CONSTRUCTORS if not c.startswith("sampled_mechanism"))
)
def test_none_is_a_type_error_naming_the_argument(case):
    # (sampled_mechanism reads None as "not given")
    name, make = CONSTRUCTORS[case]
    with pytest.raises(TypeError, match=f"^{name} must be an integer"):
        make(None)


@pytest.mark.parametrize("case", sorted(CONSTRUCTORS))
def test_a_fraction_is_a_value_error_naming_the_argument(case):
    name, make = CONSTRUCTORS[case]
    with pytest.raises(ValueError, match=f"^{name} must be an integer"):
        make(2.5)


@pytest.mark.parametrize("case", sorted(CONSTRUCTORS))
def test_an_integral_float_reads_as_its_integer(case):
    _, make = CONSTRUCTORS[case]
    made = make(3.0)
    if isinstance(made, plda.Mechanism):
        assert made == make(3)
