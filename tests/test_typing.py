"""The public queries are typed: float in -> float out, array in -> array out (issue 15 item 7).

The overloads are what type checkers and IDEs read; this checks that they are declared and that
the runtime behaves as they say, for the PLD and the accountant alike.
"""

import typing

import numpy as np
import pytest

import plda
from plda._internal.typing import FloatArray

PLD = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma=2.0), 3)
ACCOUNTANT = plda.PLDAccountant()
ACCOUNTANT.step(1.0, 0.05, 10)

#: (object, query, a scalar argument)
QUERIES = [
    (PLD, "epsilon", 1e-5),
    (PLD, "delta", 1.0),
    (PLD, "tradeoff", 0.1),
    (PLD, "renyi", 2.0),
    (ACCOUNTANT, "epsilon", 1e-5),
    (ACCOUNTANT, "delta", 1.0),
    (ACCOUNTANT, "tradeoff", 0.1),
    (ACCOUNTANT, "renyi", 2.0),
]


@pytest.mark.parametrize("owner, name, value", QUERIES, ids=lambda x: str(x)[:20])
def test_query_declares_scalar_and_array_overloads(owner, name, value):
    overloads = typing.get_overloads(getattr(type(owner), name))
    hints = [typing.get_type_hints(f) for f in overloads]
    assert [h["return"] for h in hints] == [float, FloatArray]


@pytest.mark.parametrize("owner, name, value", QUERIES, ids=lambda x: str(x)[:20])
def test_query_returns_what_its_overloads_say(owner, name, value):
    scalar = getattr(owner, name)(value)
    assert type(scalar) is float
    array = getattr(owner, name)(np.array([value, value]))
    assert isinstance(array, np.ndarray) and array.shape == (2,) and array.dtype == np.float64
    listed = getattr(owner, name)([value])
    assert isinstance(listed, np.ndarray) and listed.shape == (1,)
    bounds = getattr(owner, f"{name}_bounds")(value)
    assert type(bounds.lower) is float and type(bounds.upper) is float


def test_lazily_loaded_submodules_are_listed():
    assert {"theorems", "filters", "testing", "plot"} <= set(dir(plda))
    # the deprecated facades (removed in 0.2.0) still load, but are no longer advertised
    assert not {"renyi", "tradeoff", "risk", "accountant"} & set(dir(plda))
